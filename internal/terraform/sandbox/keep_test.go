package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform"
)

// keyFixture is a source tree, a binary and a CLI config to key on.
type keyFixture struct {
	src, bin, cli string
	req           terraform.Request
}

func newKeyFixture(t *testing.T) *keyFixture {
	t.Helper()
	d := t.TempDir()
	f := &keyFixture{src: filepath.Join(d, "src"), bin: filepath.Join(d, "terraform"), cli: filepath.Join(d, "terraformrc")}
	require.NoError(t, os.MkdirAll(filepath.Join(f.src, "modules", "m"), 0o755))
	for name, content := range map[string]string{
		"main.tf":             `module "m" { source = "./modules/m" }`,
		"modules/m/main.tf":   `resource "terraform_data" "d" {}`,
		".terraform.lock.hcl": `provider "registry.terraform.io/hashicorp/local" { version = "2.5.1" }`,
		"terraform.tfstate":   `{"version":4}`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(f.src, name), []byte(content), 0o644))
	}
	require.NoError(t, os.WriteFile(f.bin, []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(f.cli, []byte(`provider_installation { direct {} }`), 0o644))
	f.req = terraform.Request{CLIConfigFile: f.cli, BackendConfig: []string{"bucket=a"}, PluginCacheDir: "/cache", Env: map[string]string{"AWS_REGION": "eu-west-1"}}
	return f
}

func (f *keyFixture) key(t *testing.T, commit string) string {
	t.Helper()
	k, err := KeptKey(context.Background(), f.req, f.bin, commit, f.src)
	require.NoError(t, err)
	return k
}

// Everything init depends on is in the key: the same inputs give the same
// key, and a change to any one of them gives another.
func TestKeptKeyChangesWithWhatInitReads(t *testing.T) {
	f := newKeyFixture(t)
	base := f.key(t, "")
	require.Equal(t, base, f.key(t, ""), "same inputs, same key")

	write := func(name, content string) func() {
		return func() { require.NoError(t, os.WriteFile(filepath.Join(f.src, name), []byte(content), 0o644)) }
	}
	changes := map[string]func(){
		"lock file":           write(".terraform.lock.hcl", `provider "x" { version = "2.5.2" }`),
		"module source":       write("modules/m/main.tf", `resource "terraform_data" "e" {}`),
		"new file":            write("extra.tf", ``),
		"local state":         write("terraform.tfstate", `{"version":4,"serial":2}`),
		"file mode":           func() { require.NoError(t, os.Chmod(filepath.Join(f.src, "main.tf"), 0o600)) },
		"backend config":      func() { f.req.BackendConfig = []string{"bucket=b"} },
		"terraform workspace": func() { f.req.TFWorkspace = "staging" },
		"cli config content": func() {
			require.NoError(t, os.WriteFile(f.cli, []byte(`provider_installation { filesystem_mirror {} }`), 0o644))
		},
		"plugin cache": func() { f.req.PluginCacheDir = "/other" },
		"env":          func() { f.req.Env = map[string]string{"AWS_REGION": "us-east-1"} },
		"binary replaced": func() {
			require.NoError(t, os.Chtimes(f.bin, time.Now(), time.Now().Add(time.Hour)))
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			f = newKeyFixture(t)
			before := f.key(t, "")
			change()
			require.NotEqual(t, before, f.key(t, ""))
		})
	}

	// A git source is keyed by its commit (and path), not by a walk.
	f = newKeyFixture(t)
	f.req.Source.Git = &terraform.Git{URL: "https://example.invalid/r.git", Path: "envs/prod"}
	c1 := f.key(t, "1111111111111111111111111111111111111111")
	write("main.tf", "# edited")()
	require.Equal(t, c1, f.key(t, "1111111111111111111111111111111111111111"))
	require.NotEqual(t, c1, f.key(t, "2222222222222222222222222222222222222222"))
	f.req.Source.Git.Path = "envs/dev"
	require.NotEqual(t, c1, f.key(t, "1111111111111111111111111111111111111111"))
}

// initDir makes a module directory as init leaves it: .terraform with a
// provider linked into a plugin cache, and a lock file.
func initDir(t *testing.T, cache string) string {
	t.Helper()
	mod := t.TempDir()
	prov := filepath.Join(mod, ".terraform", "providers", "registry.terraform.io", "hashicorp", "local", "2.5.1")
	require.NoError(t, os.MkdirAll(prov, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "local"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(cache, "local"), filepath.Join(prov, "linux_amd64")))
	require.NoError(t, os.WriteFile(filepath.Join(mod, ".terraform", "terraform.tfstate"), []byte(`{"backend":{}}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(mod, ".terraform.lock.hcl"), []byte("init's lock"), 0o644))
	return mod
}

func TestKeptSaveRestore(t *testing.T) {
	cache := t.TempDir()
	dir := filepath.Join(t.TempDir(), "dwk-x")
	k, err := OpenKept(dir)
	require.NoError(t, err)
	defer k.Close()
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, k.Save("k1", initDir(t, cache), at))

	// Another key: nothing restored, and the state stays for its key.
	fresh := t.TempDir()
	_, ok := k.Restore("k2", fresh)
	require.False(t, ok)
	require.NoDirExists(t, filepath.Join(fresh, ".terraform"))

	// The same key: .terraform and the lock file move in; the source's
	// own lock file is replaced by init's.
	require.NoError(t, os.WriteFile(filepath.Join(fresh, ".terraform.lock.hcl"), []byte("source's lock"), 0o644))
	got, ok := k.Restore("k1", fresh)
	require.True(t, ok)
	require.True(t, got.Equal(at), "the init time travels with the state: %s", got)
	require.FileExists(t, filepath.Join(fresh, ".terraform", "terraform.tfstate"))
	lock, err := os.ReadFile(filepath.Join(fresh, ".terraform.lock.hcl"))
	require.NoError(t, err)
	require.Equal(t, "init's lock", string(lock))

	// Consumed: a second run (whose first never saved) finds nothing.
	_, ok = k.Restore("k1", t.TempDir())
	require.False(t, ok)

	// Saved back after the run, it is there for the next.
	require.NoError(t, k.Save("k1", fresh, got))
	_, ok = k.Restore("k1", t.TempDir())
	require.True(t, ok)

	// A configuration without providers: init wrote no lock file, and a
	// restore leaves the copy's own alone.
	noLock := initDir(t, cache)
	require.NoError(t, os.Remove(filepath.Join(noLock, ".terraform.lock.hcl")))
	require.NoError(t, k.Save("k2", noLock, at))
	next := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(next, ".terraform.lock.hcl"), []byte("source's lock"), 0o644))
	_, ok = k.Restore("k2", next)
	require.True(t, ok)
	lock, err = os.ReadFile(filepath.Join(next, ".terraform.lock.hcl"))
	require.NoError(t, err)
	require.Equal(t, "source's lock", string(lock))
}

func TestKeptRefusesIncompleteOrOldState(t *testing.T) {
	cache := t.TempDir()
	cases := map[string]func(t *testing.T, dir string){
		".terraform deleted": func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, ".terraform")))
		},
		"provider gone from the plugin cache": func(t *testing.T, _ string) {
			require.NoError(t, os.RemoveAll(filepath.Join(cache, "local")))
		},
		"init older than a day": func(t *testing.T, dir string) {
			old := strconv.FormatInt(time.Now().Add(-25*time.Hour).Unix(), 10)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "key"), []byte("k1\n"+old), 0o600))
		},
		"key file garbled": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "key"), []byte("k1"), 0o600))
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dwk-x")
			k, err := OpenKept(dir)
			require.NoError(t, err)
			defer k.Close()
			require.NoError(t, k.Save("k1", initDir(t, cache), time.Now()))
			spoil(t, dir)
			fresh := t.TempDir()
			_, ok := k.Restore("k1", fresh)
			require.False(t, ok)
			require.NoDirExists(t, filepath.Join(fresh, ".terraform"), "nothing half restored")
		})
	}
}

func TestKeptOneRunAtATime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dwk-x")
	k, err := OpenKept(dir)
	require.NoError(t, err)
	_, err = OpenKept(dir)
	require.Error(t, err, "a second run must not share the kept state")
	k.Close()
	k2, err := OpenKept(dir)
	require.NoError(t, err, "free again once the first run closed it")
	k2.Close()
}

// A lock that outlives its run for a moment (a process forked meanwhile
// holds it until it execs) is waited for: the next run still gets the
// kept directory.
func TestKeptWaitsForALockReleasedSoon(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dwk-x")
	k, err := OpenKept(dir)
	require.NoError(t, err)
	released := make(chan struct{})
	go func() {
		time.Sleep(200 * time.Millisecond)
		k.Close()
		close(released)
	}()
	k2, err := OpenKept(dir)
	require.NoError(t, err, "taken again once the first run let go, within keptLockWait")
	<-released
	k2.Close()
}

// A daemon's kept directories go at its start (with a killed
// predecessor's run directories) and at its stop; another daemon's stay.
func TestSweepRemovesKeptDirs(t *testing.T) {
	base := t.TempDir()
	mine := KeptDir(base, "daemon-a", "ws")
	theirs := KeptDir(base, "daemon-b", "ws")
	require.NotEqual(t, KeptDir(base, "daemon-a", "ws2"), mine)
	for _, d := range []string{mine, theirs} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	run, err := NewDir(base, "dw-", "daemon-a")
	require.NoError(t, err)
	require.Equal(t, 1, SweepOwnedDirs(base, "daemon-a"), "a run directory left behind is counted, kept ones are not")
	require.NoDirExists(t, mine)
	require.NoDirExists(t, run)
	require.DirExists(t, theirs)
	RemoveKeptDirs(base, "daemon-b")
	require.NoDirExists(t, theirs)
}

func TestInitNeeded(t *testing.T) {
	for _, r := range []string{
		`Error: Inconsistent dependency lock file`,
		`Error: Required plugins are not installed`,
		`Error: Module not installed (main.tf line 3)`,
		`Error: Backend initialization required, please run "terraform init"`,
		`Error: Backend initialization required: please run "tofu init"`,
		`Error: Failed to load plugin schemas`,
	} {
		require.True(t, InitNeeded(r), r)
	}
	for _, r := range []string{
		`Error: Resource precondition failed (main.tf line 9)`,
		`Error: reading file: permission denied`,
		`state backend could not be reached`,
	} {
		require.False(t, InitNeeded(r), r)
	}
}
