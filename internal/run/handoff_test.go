package run

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// handoff is an Incidents and a Remediation that note, in order, what
// the Manager handed them and what the store held at each step.
type handoff struct {
	st *sqlite.Store
	mu sync.Mutex
	// events: "outcome <ws>", "decide <run>", "recorded", "after-detect <run>".
	events []string
	// applying and release hold Apply (TestRemediationApplyRunLog).
	applying chan string
	release  chan struct{}
	// atRecorded is the stored run and the workspace's incidents when
	// Recorded was called.
	atRecorded struct {
		run       store.Run
		incidents []store.Incident
	}
}

func (h *handoff) note(e string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func (h *handoff) Outcome(ws string, now time.Time, runID string) store.Outcome {
	h.note("outcome " + ws)
	return func(_, after store.WorkspaceState, _ []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		h.note("decide " + after.LastRunID)
		return []store.Incident{{Key: "k-" + runID, Workspace: ws, Class: "errored", State: store.IncidentOpen, OpenedAt: now}}, nil
	}
}

func (h *handoff) Recorded() {
	h.note("recorded")
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) < 2 {
		return
	}
	ctx := context.Background()
	runs, _ := h.st.Runs(ctx, "net", 1)
	if len(runs) == 1 {
		h.atRecorded.run = runs[0]
	}
	h.atRecorded.incidents, _ = h.st.Incidents(ctx, "net")
}

// Apply is a remediation's apply run: recorded, one line in its log,
// then held until release; it sends its run id on applying.
func (h *handoff) Apply(ctx context.Context, ws, runID string, log io.Writer) drift.Status {
	h.note("apply " + ws)
	run := store.Run{ID: runID, Workspace: ws, Trigger: TriggerRemediate, StartedAt: time.Now().UTC(), Status: store.RunRunning}
	if err := h.st.StartRun(ctx, run); err != nil {
		return ""
	}
	_, _ = io.WriteString(log, "apply    dwtest_file.a: updating\n")
	h.applying <- runID
	<-h.release
	_, _ = io.WriteString(log, "apply    dwtest_file.a: updated after 1s\n")
	run.FinishedAt, run.Status = time.Now().UTC(), drift.Status("applied")
	_ = h.st.FinishRunOnly(ctx, run)
	return run.Status
}

func (h *handoff) AfterDetect(_ context.Context, _, runID string, _ drift.Result, _ *planparse.Plan) {
	h.note("after-detect " + runID)
}

func (h *handoff) log() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// failingStore refuses every verdict for good (not store.ErrUnavailable).
type failingStore struct{ Store }

func (failingStore) FinishRunWithOutcome(context.Context, store.Run, store.Outcome) (before, after store.WorkspaceState, err error) {
	return before, after, errors.New("constraint failed")
}

func newHandoffManager(t *testing.T, st Store, h *handoff) *Manager {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	m, err := New(t.Context(), Options{
		Store: st, Logger: logger, Auditor: &pipeline.Auditor{Runner: failingRunner{}, Logger: logger},
		Metrics:   metrics.New(prometheus.NewRegistry(), func() []metrics.WorkspaceSnapshot { return nil }),
		Schedule:  schedule.Options{MaxConcurrent: 1},
		Inventory: inventory{"net": {Name: "net"}},
		Incidents: h, Recorded: h.Recorded, Remediation: h,
	})
	require.NoError(t, err)
	require.NoError(t, m.SetJobs([]schedule.Job{{Name: "net", Spec: "@daily"}}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Schedule(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

// The run -> incident hand-off: the Manager asks Incidents for the run's
// outcome, the store evaluates it inside the run's transaction (it sees
// the run's own state), and only after that commit is Incidents told
// Recorded, by which time the run and its incident are both stored;
// remediation hears of the detection last.
func TestIncidentHandoffAfterCommit(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	h := &handoff{st: st}
	m := newHandoffManager(t, st, h)

	id, err := m.Trigger("net")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(h.log()) == 4 }, 10*time.Second, time.Millisecond)
	require.Equal(t, []string{"outcome net", "decide " + id, "recorded", "after-detect " + id}, h.log())
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Equal(t, id, h.atRecorded.run.ID)
	require.Equal(t, drift.StatusErrored, h.atRecorded.run.Status, "the run was committed before Recorded")
	require.Len(t, h.atRecorded.incidents, 1, "its incident with it")
	require.Equal(t, "k-"+id, h.atRecorded.incidents[0].Key)

	// The metrics read the recorded state; a workspace never recorded is
	// unknown.
	snaps := m.Snapshots([]string{"net", "db"})
	require.Len(t, snaps, 2)
	require.Equal(t, drift.StatusErrored, snaps[0].Status)
	require.Equal(t, h.atRecorded.run.StartedAt, snaps[0].LastRunAt)
	require.Equal(t, drift.Status("unknown"), snaps[1].Status)
}

// A verdict the store refuses is not handed on: no Recorded, no
// AfterDetect.
func TestIncidentHandoffNotAfterFailedCommit(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	h := &handoff{st: st}
	m := newHandoffManager(t, failingStore{st}, h)

	_, err = m.Trigger("net")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return m.sched.Stats().Active == 0 && len(h.log()) > 0 }, 10*time.Second, time.Millisecond)
	require.Equal(t, []string{"outcome net"}, h.log())
}

// A remediation's apply run has a live log under its run id while it
// applies (what the API's log readers follow), and the store keeps it,
// ended with the apply's status, once the run is recorded.
func TestRemediationApplyRunLog(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	h := &handoff{st: st, applying: make(chan string, 1), release: make(chan struct{})}
	m := newHandoffManager(t, st, h)

	require.NoError(t, m.QueueApply("net"))
	var id string
	select {
	case id = <-h.applying:
	case <-time.After(10 * time.Second):
		t.Fatal("the apply did not start")
	}
	live := m.Live(id)
	require.NotNil(t, live, "the apply run's log is live while it applies")
	replay, follow := live.Subscribe(t.Context())
	require.Equal(t, []string{"apply    dwtest_file.a: updating"}, replay)
	close(h.release)
	require.Equal(t, "apply    dwtest_file.a: updated after 1s", <-follow)
	require.Eventually(t, func() bool { return m.Live(id) == nil }, 10*time.Second, time.Millisecond)
	verdict, closed := live.Done()
	require.True(t, closed)
	require.Equal(t, "applied", verdict)
	stored, err := st.RunLog(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, "apply    dwtest_file.a: updating\napply    dwtest_file.a: updated after 1s\n", string(stored))
}
