package schedule

import "time"

// jitterOffset is the fixed delay added to every slot of the job called name:
// FNV-1a(name) mod window, truncated to the second when window is at least a
// second so that Next reads well. It depends only on the name and the window,
// so it is stable across restarts, hosts and Go versions, and it is always in
// [0, window).
func jitterOffset(name string, window time.Duration) time.Duration {
	if window <= 0 {
		return 0
	}
	// FNV-1a, 64 bit (hash/fnv without the allocation).
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	d := time.Duration(h % uint64(window))
	if window >= time.Second {
		d = d.Truncate(time.Second)
	}
	return d
}
