package tfsession

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Shared is what the sessions of one process share: the in-process lock on
// cold inits of the plugin cache, and the version of each binary. Its zero
// value is ready; a caller keeps one for as long as it runs sessions (the
// local runner holds one).
type Shared struct {
	// initMu serialises cold inits within this process; a file lock
	// (sandbox.InitLockName) covers other processes.
	initMu sync.Mutex
	// versions maps a binary's path to its versionEntry; versionMu makes
	// the sessions that start together ask a binary once, not each.
	versions  sync.Map
	versionMu sync.Mutex
}

// versionEntry is a binary's version as asked of the file info holds.
type versionEntry struct {
	file os.FileInfo
	name string
}

// sameBinary reports whether the file at a path is still the one that was
// asked: same file, modification time and size. A binary replaced in place
// or renamed over is asked again.
func sameBinary(was, is os.FileInfo) bool {
	return os.SameFile(was, is) && was.ModTime().Equal(is.ModTime()) && was.Size() == is.Size()
}

// InitOptions are Init's.
type InitOptions struct {
	// PluginCache uses the request's shared plugin cache
	// (terraform.Request.PluginCacheDir) under the rules Init describes.
	// Without it, init installs providers into the run's copy only (an
	// apply is rare, and correctness beats the seconds a cache saves).
	PluginCache bool
}

// Init runs `terraform init`. It runs Terraform directly rather than through
// terraform-exec, whose Init always spends an extra `version -json`
// process per run (~10% of a small workspace's run).
//
// The shared plugin cache is used only for workspaces that commit a
// .terraform.lock.hcl. Without one, Terraform cannot verify a cached
// provider, so it installs from the source and rewrites the cache entry in
// place, while other runs' plans execute that very file through their
// symlinks: a torn binary, "Required plugins are not installed"
// (and its twin: an init reading an entry another is writing). With a lock file, init only
// writes entries that are absent, so: a workspace whose lock file was
// already installed through the cache (a marker per binary and lock file)
// only reads and runs in parallel; a cold one takes an exclusive lock
// (Shared's in-process mutex plus a file lock for other processes), and
// only it may write the cache (the jail binds it read-write for that one
// command). Plans never write the cache and always run in parallel.
func (s *Session) Init(ctx context.Context, o InitOptions) error {
	s.step("init")
	if err := s.init(ctx, o.PluginCache); err != nil {
		return s.fail("init", err)
	}
	return nil
}

func (s *Session) init(ctx context.Context, useCache bool) error {
	c, stdout := s.cmd, s.log.stdout()
	args := []string{"init", "-no-color", "-input=false", "-upgrade=false"}
	for _, b := range s.req.BackendConfig {
		args = append(args, "-backend-config="+b)
	}
	cache := s.req.PluginCacheDir
	if !useCache || cache == "" {
		return c.Run(ctx, stdout, args...)
	}
	lock, err := sandbox.ReadSourceFile(ctx, c.Dir, filepath.Join(c.Dir, ".terraform.lock.hcl"))
	if err != nil {
		return c.Run(ctx, stdout, args...)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	cached := *c
	cached.Env = append(append([]string(nil), c.Env...), "TF_PLUGIN_CACHE_DIR="+cache)
	warm := warmMarker(cache, c.Bin, lock)
	if _, err := os.Stat(warm); err == nil {
		return cached.Run(ctx, stdout, args...)
	}
	if s.shared != nil {
		s.shared.initMu.Lock()
		defer s.shared.initMu.Unlock()
	}
	unlock, err := sandbox.LockFile(ctx, filepath.Join(cache, sandbox.InitLockName))
	if err != nil {
		return err
	}
	defer unlock()
	// A cold init is the one step that writes the shared cache; it runs no
	// workspace code (providers are installed, not started).
	if err := s.jail.CacheWritable(true); err != nil {
		return err
	}
	err = cached.Run(ctx, stdout, args...)
	if werr := s.jail.CacheWritable(false); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if os.MkdirAll(filepath.Dir(warm), 0o755) == nil {
		_ = os.WriteFile(warm, nil, 0o644)
	}
	return nil
}

// warmMarker is the file that says the lock file's providers were
// installed through the cache by the binary bin.
func warmMarker(cache, bin string, lock []byte) string {
	sum := sha256.Sum256(append([]byte(bin+"\x00"), lock...))
	return filepath.Join(cache, ".driftwatch-warm", hex.EncodeToString(sum[:]))
}

// Version returns the tool and its version, e.g. "terraform 1.11.4", or
// only the tool's name when the binary cannot tell. With a Shared, each
// binary is asked once per path and file: a binary replaced since (an
// upgrade in place) is asked again.
func (s *Session) Version(ctx context.Context) string {
	fi, statErr := os.Stat(s.bin)
	cache := s.shared != nil && statErr == nil
	if cache {
		s.shared.versionMu.Lock()
		defer s.shared.versionMu.Unlock()
		if v, ok := s.shared.versions.Load(s.bin); ok {
			if e := v.(versionEntry); sameBinary(e.file, fi) {
				return e.name
			}
		}
	}
	var out bytes.Buffer
	if err := s.cmd.Run(ctx, &out, "version", "-json"); err != nil {
		return sandbox.ToolName(s.bin)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if json.Unmarshal(out.Bytes(), &v) != nil || v.Version == "" {
		return sandbox.ToolName(s.bin)
	}
	name := sandbox.ToolName(s.bin) + " " + v.Version
	if cache {
		s.shared.versions.Store(s.bin, versionEntry{file: fi, name: name})
	}
	return name
}
