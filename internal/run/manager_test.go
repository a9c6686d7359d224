package run

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/runner/runnertest"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// testManager is a Manager on a real store, its scheduler running, with
// a runner that never finishes by itself; leading is what
// Options.Leader answers.
type testManager struct {
	*Manager
	st      *sqlite.Store
	leading atomic.Pointer[error]
}

func newTestManager(t *testing.T) (*testManager, *runnertest.Blocking) {
	t.Helper()
	tm, br := newIdleManager(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = tm.Schedule(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return tm, br
}

// newIdleManager is newTestManager's Manager before its scheduler runs.
func newIdleManager(t *testing.T) (*testManager, *runnertest.Blocking) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	br := runnertest.NewBlocking()
	tm := &testManager{st: st}
	tm.Manager, err = New(t.Context(), Options{
		Store: st, Logger: logger, Auditor: &pipeline.Auditor{Runner: br, Logger: logger},
		Metrics:   metrics.New(prometheus.NewRegistry(), func() []metrics.WorkspaceSnapshot { return nil }),
		Schedule:  schedule.Options{MaxConcurrent: 1},
		Inventory: inventory{"net": {Name: "net"}, "db": {Name: "db"}},
		Incidents: &incidents{},
		Leader: leaderFunc(func() error {
			if err := tm.leading.Load(); err != nil {
				return *err
			}
			return nil
		}),
	})
	require.NoError(t, err)
	require.NoError(t, tm.SetJobs([]schedule.Job{{Name: "net", Spec: "@daily"}, {Name: "db", Spec: "@daily"}}))
	return tm, br
}

// inventory is a fixed set of targets (Inventory).
type inventory map[string]pipeline.Target

func (i inventory) Target(name string) (pipeline.Target, bool) { t, ok := i[name]; return t, ok }
func (inventory) MaxLogBytes() int                             { return 0 }
func (i inventory) Names() []string                            { return slices.Sorted(maps.Keys(i)) }

// incidents decides nothing (Incidents).
type incidents struct{}

func (*incidents) Outcome(string, time.Time, string) store.Outcome { return nil }

// leaderFunc is a Leader.
type leaderFunc func() error

func (f leaderFunc) Ready() error { return f() }

// waitRun polls the store until the run has status want.
func waitRun(t *testing.T, d *testManager, id string, want drift.Status) store.Run {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := d.st.Run(t.Context(), id)
		if err == nil && r.Status == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: want status %s, last %+v (err %v)", id, want, r, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// A cancel racing the run's dispatch always ends with the run recorded
// cancelled and no runner (Terraform) left; a run cancelled while queued
// never reaches the runner, and its stored log says so.
func TestCancelRacesDispatch(t *testing.T) {
	d, br := newTestManager(t)
	var whileQueued, whileDispatched int
	for i := 0; i < 1000 && (i < 60 || whileQueued == 0 || whileDispatched == 0); i++ {
		id, err := d.Trigger("net")
		require.NoError(t, err)
		if i%2 == 1 { // else cancel at once: the dispatcher is rarely that fast
			r, err := d.st.Run(t.Context(), id)
			require.NoError(t, err, "the run is recorded before its id is returned")
			require.Contains(t, []drift.Status{store.RunQueued, store.RunRunning}, r.Status)
			for range i % 40 {
				runtime.Gosched()
			}
		}
		queued, err := d.Cancel(id)
		require.NoError(t, err)
		got := waitRun(t, d, id, store.RunCancelled)
		require.Eventually(t, func() bool { return d.sched.Stats().Active == 0 }, 10*time.Second, time.Millisecond, "the run never returned")
		active, started := br.State(id)
		require.Zero(t, active, "no runner left after cancel")
		if queued {
			whileQueued++
			require.False(t, started, "a run cancelled while queued reached the runner")
			require.Equal(t, "cancelled by request", got.Error)
			log, err := d.st.RunLog(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, "== queued (trigger manual): waiting for a run slot ==\n== cancelled while queued: cancelled by request ==\n", string(log))
		} else {
			whileDispatched++
		}
		require.Nil(t, d.Live(id), "the run left the registry")
		_, err = d.Cancel(id)
		require.ErrorIs(t, err, runlog.ErrNotRunning, "finished: nothing left to cancel")
	}
	t.Logf("cancelled while queued: %d, while dispatched: %d", whileQueued, whileDispatched)
	require.Positive(t, whileQueued)
	require.Positive(t, whileDispatched)
	st, err := d.st.Workspaces(t.Context())
	require.NoError(t, err)
	require.Empty(t, st, "cancelled runs change no workspace state")
}

// A queued run waits for the slot (its record says queued, its log says
// why), and a reload that removes its workspace records it cancelled; the
// running run is not affected, and is cancelled through the scheduler.
func TestQueuedRunLifecycle(t *testing.T) {
	d, br := newTestManager(t)
	running, err := d.Trigger("net")
	require.NoError(t, err)
	require.Eventually(t, func() bool { active, started := br.State(running); return active == 1 && started }, 10*time.Second, time.Millisecond)
	queued, err := d.Trigger("db")
	require.NoError(t, err)
	r := waitRun(t, d, queued, store.RunQueued)
	require.Equal(t, "manual", r.Trigger)
	require.Equal(t, "== queued (trigger manual): waiting for a run slot ==\n", string(d.Live(queued).Bytes()))
	id, err := d.Trigger("db")
	require.Empty(t, id)
	require.ErrorIs(t, err, schedule.ErrBusy)
	var busy *refusal.BusyError
	require.ErrorAs(t, err, &busy, "the API's 409")
	require.Equal(t, queued, busy.RunID, "it names the queued run")

	require.NoError(t, d.sched.SetJobs([]schedule.Job{{Name: "net", Spec: "@daily"}}))
	r = waitRun(t, d, queued, store.RunCancelled)
	require.Equal(t, "the workspace was removed from the config while the run was queued", r.Error)
	log, err := d.st.RunLog(t.Context(), queued)
	require.NoError(t, err)
	require.Equal(t, "== queued (trigger manual): waiting for a run slot ==\n"+
		"== cancelled while queued: the workspace was removed from the config while the run was queued ==\n", string(log))
	_, started := br.State(queued)
	require.False(t, started)
	waitRun(t, d, running, store.RunRunning)

	wasQueued, err := d.Cancel(running)
	require.NoError(t, err)
	require.False(t, wasQueued)
	r = waitRun(t, d, running, store.RunCancelled)
	require.Equal(t, "cancelled by request", r.Error)
	// The log is saved just after the status.
	require.Eventually(t, func() bool { log, err = d.st.RunLog(t.Context(), running); return err == nil }, 10*time.Second, time.Millisecond)
	require.Regexp(t, `^== queued \(trigger manual\): waiting for a run slot ==\n== started after [0-9.]+m?s in the queue ==\n`, string(log))
	active, _ := br.State(running)
	require.Zero(t, active)
}

// Until the daemon schedules (a standby, or it has not yet recovered the
// runs a previous process left), the API queues nothing: a run queued
// then would be taken for one the previous process left.
func TestTriggerRefusedUntilLeading(t *testing.T) {
	d, _ := newTestManager(t)
	standby := errors.New("standby")
	d.leading.Store(&standby)
	id, err := d.Trigger("net")
	require.ErrorIs(t, err, standby)
	require.Empty(t, id)
	runs, err := d.st.Runs(t.Context(), "net", 10)
	require.NoError(t, err)
	require.Empty(t, runs, "nothing recorded")

	d.leading.Store(nil)
	id, err = d.Trigger("net")
	require.NoError(t, err)
	require.NotEmpty(t, id)
}
