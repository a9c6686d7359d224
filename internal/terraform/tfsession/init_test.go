package tfsession

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// initScript records each init in $INIT_RECORD: the plugin cache it was
// given, whether the cache's init lock was held by someone else while it
// ran (flock), and its arguments; with $FAIL_INIT it fails like a failed
// provider installation.
const initScript = `case "$1" in
version) echo '{"terraform_version":"1.11.4"}'; exit 0;;
init)
  held=free
  if [ -n "$TF_PLUGIN_CACHE_DIR" ] && ! flock -n "$TF_PLUGIN_CACHE_DIR/.driftwatch-init.lock" true; then held=held; fi
  echo "cache=${TF_PLUGIN_CACHE_DIR:-none} lock=$held $*" >> "$INIT_RECORD"
  if [ -n "$FAIL_INIT" ]; then echo "Error: Failed to install provider" >&2; exit 1; fi
  exit 0;;
esac
exit 3`

func lastLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// The plugin cache rules (Init's doc): no lock file, no cache; a cold
// init (first for this binary and lock file) holds the lock and marks the
// lock file warm only when it succeeds; a warm one runs without the lock;
// remediation's init (no PluginCache) never uses the cache.
func TestInitPluginCache(t *testing.T) {
	tftest.Program(t, "flock")
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform")
	writeScript(t, bin, initScript)
	record := filepath.Join(dir, "record")
	cache := filepath.Join(dir, "plugin-cache")
	req := terraform.Request{Binary: bin, PluginCacheDir: cache, BackendConfig: []string{"key=ws.tfstate"},
		Env: map[string]string{"INIT_RECORD": record}}
	var shared Shared
	ctx := t.Context()
	const args = " init -no-color -input=false -upgrade=false -backend-config=key=ws.tfstate"
	warm := func(lock string) string { return warmMarker(cache, bin, []byte(lock)) }

	require.NoError(t, open(t, req, Options{Shared: &shared}, "").Init(ctx, InitOptions{PluginCache: true}))
	require.Equal(t, "cache=none lock=free"+args, lastLine(t, record), "no lock file: the cache is not used")
	require.NoDirExists(t, cache)

	const lockA, lockB = "# lock A\n", "# lock B\n"
	require.NoError(t, open(t, req, Options{Shared: &shared}, lockA).Init(ctx, InitOptions{PluginCache: true}))
	require.Equal(t, "cache="+cache+" lock=held"+args, lastLine(t, record), "cold: under the lock")
	require.FileExists(t, warm(lockA))
	require.FileExists(t, filepath.Join(cache, sandbox.InitLockName))

	require.NoError(t, open(t, req, Options{Shared: &shared}, lockA).Init(ctx, InitOptions{PluginCache: true}))
	require.Equal(t, "cache="+cache+" lock=free"+args, lastLine(t, record), "warm: reads the cache, in parallel")

	// Another lock file is cold again; a failed cold init stays cold.
	failing := req
	failing.Env = map[string]string{"INIT_RECORD": record, "FAIL_INIT": "1"}
	err := open(t, failing, Options{Shared: &shared}, lockB).Init(ctx, InitOptions{PluginCache: true})
	var re *terraform.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "init: Error: Failed to install provider", err.Error())
	require.Equal(t, "cache="+cache+" lock=held"+args, lastLine(t, record))
	require.NoFileExists(t, warm(lockB))
	require.NoError(t, open(t, req, Options{}, lockB).Init(ctx, InitOptions{PluginCache: true}))
	require.Equal(t, "cache="+cache+" lock=held"+args, lastLine(t, record), "cold, without a Shared too")
	require.FileExists(t, warm(lockB))

	// The marker is per binary: another binary is cold for the same lock.
	tofu := filepath.Join(dir, "tofu")
	writeScript(t, tofu, initScript)
	other := req
	other.Binary = tofu
	require.NoError(t, open(t, other, Options{Shared: &shared}, lockA).Init(ctx, InitOptions{PluginCache: true}))
	require.Equal(t, "cache="+cache+" lock=held"+args, lastLine(t, record))

	// Remediation: no cache, whatever the request says.
	require.NoError(t, open(t, req, Options{}, lockA).Init(ctx, InitOptions{}))
	require.Equal(t, "cache=none lock=free"+args, lastLine(t, record))
}

// In the jail the shared plugin cache is read-only, but for a cold init,
// the one step that installs into it; the next command sees it read-only
// again.
func TestInitCacheWritableOnlyWhenCold(t *testing.T) {
	bwrap := tftest.Jail(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform")
	// The run directory is the only place the jail can write besides a
	// writable cache: the record goes there ($HOME is in it).
	writeScript(t, bin, `case "$1" in
version) echo '{"terraform_version":"1.11.4"}'; exit 0;;
init)
  if touch "$TF_PLUGIN_CACHE_DIR/probe" 2>/dev/null; then w=writable; else w=read-only; fi
  echo "$w" >> "$HOME/record"; exit 0;;
esac
exit 3`)
	cache := filepath.Join(dir, "plugin-cache")
	req := terraform.Request{Binary: bin, PluginCacheDir: cache, Jail: bwrap}
	var shared Shared
	for _, want := range []string{"writable", "read-only"} {
		s := open(t, req, Options{Shared: &shared}, "# lock\n")
		require.NoError(t, s.Init(t.Context(), InitOptions{PluginCache: true}))
		home := filepath.Join(filepath.Dir(s.cmd.Dir), "home")
		require.Equal(t, want, lastLine(t, filepath.Join(home, "record")))
		require.NoError(t, os.Remove(filepath.Join(home, "record")))
		if want == "writable" {
			// Read-only again right after the cold init, in the same run.
			require.NoError(t, s.Init(t.Context(), InitOptions{PluginCache: true}))
			require.Equal(t, "read-only", lastLine(t, filepath.Join(home, "record")))
		}
	}
}
