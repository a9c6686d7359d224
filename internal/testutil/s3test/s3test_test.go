package s3test

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The server takes signed writes only, and honours conditional writes
// (If-None-Match: *), which Terraform's use_lockfile relies on; Stop
// leaves no process behind.
func TestServer(t *testing.T) {
	Weed(t) // skip (or fail under DRIFTWATCH_E2E=1) here, not in the subtest
	var pid int
	t.Run("serve", func(t *testing.T) {
		s := Start(t, Options{})
		pid = s.cmd.Process.Pid
		require.Equal(t, http.StatusOK, s.Put(t, "a/state.tfstate", []byte("v1"), nil))
		body, ok := s.Get(t, "a/state.tfstate")
		require.True(t, ok)
		require.Equal(t, "v1", string(body))
		_, ok = s.Get(t, "a/missing")
		require.False(t, ok)

		cond := http.Header{"If-None-Match": []string{"*"}}
		require.Equal(t, http.StatusOK, s.Put(t, "a/state.tfstate.tflock", []byte("lock-1"), cond))
		require.Equal(t, http.StatusPreconditionFailed, s.Put(t, "a/state.tfstate.tflock", []byte("lock-2"), cond),
			"a second conditional create of the lock must fail")
		body, _ = s.Get(t, "a/state.tfstate.tflock")
		require.Equal(t, "lock-1", string(body))
		s.Delete(t, "a/state.tfstate.tflock")
		require.Equal(t, http.StatusOK, s.Put(t, "a/state.tfstate.tflock", []byte("lock-3"), cond))

		// A wrong secret is refused.
		bad := *s
		bad.SecretKey = "wrong"
		code, _, err := bad.Do(http.MethodGet, "a/state.tfstate", nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, code)
	})
	// The subtest's cleanup stopped it.
	require.NotZero(t, pid)
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	require.False(t, processAlive(pid), "weed (pid %d) outlived its test", pid)
}

func processAlive(pid int) bool {
	// Reaped by Wait in the cleanup, so a live pid is a real process (or a
	// reused pid, which this short window makes unlikely).
	return syscall.Kill(pid, 0) == nil
}
