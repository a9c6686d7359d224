package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// writeConfig writes a config of workspaces net and db (their remediation
// modes net and db) with a webhook notifier, in dir.
func writeConfig(t *testing.T, dir, net, db string) string {
	t.Helper()
	path := filepath.Join(dir, "driftwatch.yaml")
	for _, n := range []string{"net", "db"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, n), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-url"), []byte("http://127.0.0.1:9/hook\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-secret"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	body := fmt.Sprintf(`store: { path: %q }
max_concurrent_runs: 1
notifiers:
  - name: hook
    type: webhook
    webhook: { url_file: hook-url, secret_file: hook-secret }
alerts: { default_notifiers: [hook] }
workspaces:
  - name: net
    source: { path: ./net }
    remediation: { mode: %s }
  - name: db
    source: { path: ./db }
    remediation: { mode: %s }
`, filepath.Join(dir, "dw.db"), net, db)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

// newTestDaemon is the daemon newDaemon builds from the config at path on
// a real store, with detect as its runner (nil: the real one); prepare,
// if set, sees the store first (what a restart finds).
func newTestDaemon(t *testing.T, path string, detect runner.Runner, prepare func(store.DaemonStore)) *daemon {
	t.Helper()
	cfg, err := LoadConfig(path)
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), cfg.Store.Path, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	if prepare != nil {
		prepare(st)
	}
	d, err := newDaemon(t.Context(), DaemonOptions{ConfigPath: path, Logger: logger}, cfg, st, detect)
	require.NoError(t, err)
	d.leader.SetLeading(true) // as lead does once it schedules
	return d
}

// schedule runs the daemon's scheduler until the test ends.
func (d *daemon) schedule(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.runs.Schedule(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitRun polls the store until the run has status want.
func waitRun(t *testing.T, d *daemon, id string, want drift.Status) store.Run {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := d.store.Run(t.Context(), id)
		if err == nil && r.Status == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: want status %s, last %+v (err %v)", id, want, r, err)
		}
		time.Sleep(time.Millisecond)
	}
}
