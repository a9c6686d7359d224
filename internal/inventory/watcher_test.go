package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/silence"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// fakeRuns is the run lifecycle as a reload drives it: it keeps the jobs
// and the queued workspaces, and reads states from the store.
type fakeRuns struct {
	st     *sqlite.Store
	mu     sync.Mutex
	jobs   []schedule.Job
	queued [][]string
}

func (f *fakeRuns) SetJobs(jobs []schedule.Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs = jobs
	return nil
}

func (f *fakeRuns) QueueUnchecked(ws []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued = append(f.queued, ws)
}

func (f *fakeRuns) State(ws string) (store.WorkspaceState, bool) {
	s, err := f.st.Workspace(context.Background(), ws)
	return s, err == nil
}

type fakeLeader struct{ leading atomic.Bool }

func (f *fakeLeader) Leading() bool { return f.leading.Load() }

type fakeOutbox struct{ wakes atomic.Int32 }

func (f *fakeOutbox) Wake() { f.wakes.Add(1) }

// fakeNotifiers records the configs whose notifiers it was given.
type fakeNotifiers struct{ set atomic.Int32 }

func (f *fakeNotifiers) SetNotifiers([]notifycfg.Spec) error { f.set.Add(1); return nil }

// follower records the old configs Reloaded was called with, and what
// the watcher published by then.
type follower struct {
	w   *Watcher
	old []*config.Config
	cur []*config.Config
}

func (f *follower) Reloaded(_ context.Context, old *config.Config) {
	f.old = append(f.old, old)
	f.cur = append(f.cur, f.w.Config())
}

// testWatcher is a Watcher of the config at path, connected to fakes and
// a real store; it leads.
type testWatcher struct {
	*Watcher
	st        *sqlite.Store
	runs      *fakeRuns
	leader    *fakeLeader
	outbox    *fakeOutbox
	notifiers *fakeNotifiers
	follower  *follower
}

func newTestWatcher(t *testing.T, path string) *testWatcher {
	t.Helper()
	cfg, err := Load(path)
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), cfg.Store.Path, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	w, err := New(cfg, Options{Path: path, Holds: &silence.Book{}, Logger: logger})
	require.NoError(t, err)
	tw := &testWatcher{Watcher: w, st: st, runs: &fakeRuns{st: st}, leader: &fakeLeader{}, outbox: &fakeOutbox{},
		notifiers: &fakeNotifiers{}, follower: &follower{w: w}}
	tw.leader.leading.Store(true)
	w.Connect(Parts{Runs: tw.runs, Store: st, Leader: tw.leader, Outbox: tw.outbox, Notifiers: tw.notifiers,
		Followers: []Follower{tw.follower}})
	return tw
}

func (w *testWatcher) targetNames() []string {
	return slices.Sorted(maps.Keys(w.Snapshot().Targets))
}

// finishDrift records a run of ws that found fs, with the Watcher's
// Outcome (the current alert plan's), as the run lifecycle does.
func finishDrift(t *testing.T, w *testWatcher, ws string, at time.Time, fs ...drift.Finding) {
	t.Helper()
	r := store.Run{ID: drift.NewRunID(), Workspace: ws, Trigger: "manual", StartedAt: at}
	require.NoError(t, w.st.StartRun(t.Context(), r))
	r.FinishedAt, r.Status, r.Findings = at, drift.StatusOf(fs), fs
	_, _, err := w.st.FinishRunWithOutcome(t.Context(), r, w.Outcome(ws, at, r.ID))
	require.NoError(t, err)
}

// writeDiscoverConfig writes a config discovering the roots under
// dir/live, with a webhook notifier routing env=prod (the env label
// comes from the path) and default notifier hook.
func writeDiscoverConfig(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-url"), []byte("http://127.0.0.1:9/hook\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-secret"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	body := fmt.Sprintf(`store: { path: %q }
max_concurrent_runs: 1
notifiers:
  - name: hook
    type: webhook
    webhook: { url_file: hook-url, secret_file: hook-secret }
alerts: { default_notifiers: [hook] }
discover:
  - source: { path: live }
    defaults:
      labels: { env: '{{index .Path 1}}' }
`, filepath.Join(dir, "dw.db"))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

func writeRoot(t *testing.T, dir, rel string) {
	t.Helper()
	p := filepath.Join(dir, "live", filepath.FromSlash(rel), "main.tf")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("terraform {\n  backend \"local\" {}\n}\n"), 0o644))
}

// A reload re-discovers: a new root becomes a scheduled workspace, a
// removed one retires: its open incident resolves through the outbox
// (one resolve message to its notifier), its pending one silently, and
// its runs and incident rows stay.
func TestReloadRediscovers(t *testing.T) {
	dir := t.TempDir()
	writeRoot(t, dir, "envs/prod")
	writeRoot(t, dir, "envs/dev")
	path := writeDiscoverConfig(t, dir)
	d := newTestWatcher(t, path)
	require.Equal(t, []string{"envs-dev", "envs-prod"}, d.targetNames())
	require.Equal(t, "dev", d.Config().Workspaces[0].Labels["env"])

	now := time.Now().UTC()
	f := drift.Finding{Kind: drift.KindDrift, Address: "null_resource.a", Type: "null_resource", Action: "update", Attributes: []string{"triggers"}}
	finishDrift(t, d, "envs-dev", now, f)
	runs, err := d.st.Runs(t.Context(), "envs-dev", 0)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	due, err := d.st.DueMessages(t.Context(), now.Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1) // the open
	require.NoError(t, d.st.MarkDelivered(t.Context(), due[0].ID, now, nil))

	writeRoot(t, dir, "envs/stage")
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "live", "envs", "dev")))
	require.True(t, d.Reload())
	require.Equal(t, []string{"envs-prod", "envs-stage"}, d.targetNames())
	stage := d.Config().Workspaces[1]
	require.Equal(t, "stage", stage.Labels["env"])
	require.Equal(t, "discover[0]", stage.Origin())

	ins, err := d.st.Incidents(t.Context(), "envs-dev")
	require.NoError(t, err)
	require.Len(t, ins, 1, "history: the incident row stays")
	require.Equal(t, store.IncidentResolved, ins[0].State)
	require.False(t, ins[0].ResolvedAt.IsZero())
	due, err = d.st.DueMessages(t.Context(), time.Now().Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "hook", due[0].Notifier)
	require.Equal(t, ins[0].Key, due[0].IncidentKey)
	var m notify.Message
	require.NoError(t, json.Unmarshal(due[0].Payload, &m))
	require.Equal(t, notify.EventResolve, m.Event)
	require.Equal(t, "envs-dev", m.Incident.Workspace)
	require.Equal(t, []drift.Finding{f}, m.Incident.Findings)
	require.Equal(t, "dev", m.Incident.Labels["env"], "routed and labelled as before the reload")
	runs, err = d.st.Runs(t.Context(), "envs-dev", 0)
	require.NoError(t, err)
	require.Len(t, runs, 1, "history: the runs stay")

	// Nothing more to retire: another reload sends nothing.
	require.NoError(t, d.st.MarkDelivered(t.Context(), due[0].ID, time.Now(), nil))
	require.True(t, d.Reload())
	due, err = d.st.DueMessages(t.Context(), time.Now().Add(time.Minute), 0)
	require.NoError(t, err)
	require.Empty(t, due)
}

// A workspace removed while the daemon was stopped retires at the sweep
// (Run, once leading), routed by the current config's defaults.
func TestRetireRemovedWhileStopped(t *testing.T) {
	dir := t.TempDir()
	writeRoot(t, dir, "envs/prod")
	writeRoot(t, dir, "envs/dev")
	path := writeDiscoverConfig(t, dir)
	d := newTestWatcher(t, path)
	now := time.Now().UTC()
	finishDrift(t, d, "envs-dev", now, drift.Finding{Kind: drift.KindDrift, Address: "null_resource.a", Type: "null_resource", Action: "update"})
	due, err := d.st.DueMessages(t.Context(), now.Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.NoError(t, d.st.MarkDelivered(t.Context(), due[0].ID, now, nil))

	require.NoError(t, os.RemoveAll(filepath.Join(dir, "live", "envs", "dev")))
	d2 := newTestWatcher(t, path) // a restart: the store is reopened
	require.Equal(t, []string{"envs-prod"}, d2.targetNames())
	d2.RetireRemoved(t.Context(), nil)
	ins, err := d2.st.Incidents(t.Context(), "envs-dev")
	require.NoError(t, err)
	require.Equal(t, store.IncidentResolved, ins[0].State)
	due, err = d2.st.DueMessages(t.Context(), time.Now().Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "hook", due[0].Notifier)
}

// A reload whose discovery fails (a root's file does not parse) keeps
// the previous inventory: nothing is taken for removed.
func TestReloadDiscoveryErrorKeepsInventory(t *testing.T) {
	dir := t.TempDir()
	writeRoot(t, dir, "envs/prod")
	path := writeDiscoverConfig(t, dir)
	d := newTestWatcher(t, path)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "live", "envs", "prod", "broken.tf"), []byte("terraform {\n"), 0o644))
	require.False(t, d.Reload())
	require.Equal(t, []string{"envs-prod"}, d.targetNames())
}

// A discovery refresh (Run, every DiscoverRefresh for git
// entries) applies a new config only when the inventory changed.
func TestRefreshAppliesOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	writeRoot(t, dir, "envs/prod")
	path := writeDiscoverConfig(t, dir)
	d := newTestWatcher(t, path)
	before := d.Config()
	require.True(t, d.Refresh(t.Context()))
	require.Same(t, before, d.Config(), "same inventory: nothing applied")

	writeRoot(t, dir, "envs/dev")
	require.True(t, d.Refresh(t.Context()))
	require.Equal(t, []string{"envs-dev", "envs-prod"}, d.targetNames())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "live", "envs", "dev", "bad.tf"), []byte("provider {"), 0o644))
	require.False(t, d.Refresh(t.Context()))
	require.Equal(t, []string{"envs-dev", "envs-prod"}, d.targetNames(), "a failed discovery keeps the inventory")
}
