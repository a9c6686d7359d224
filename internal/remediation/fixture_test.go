package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// errHashMismatch stands in for server.ErrHashMismatch.
var errHashMismatch = errors.New("change_set_hash does not match the remediation's change set")

// testHost is the daemon as the controller sees it: the config (swapped
// by a reload), the targets and alert plans derived from it as the
// daemon derives them, the leading flag, and a record of what the
// controller asked of the scheduler, the detections and the outbox.
type testHost struct {
	cfg     atomic.Pointer[config.Config]
	leading atomic.Bool

	mu       sync.Mutex
	queued   []string // QueueApply's workspaces
	detected []string // Detect's "workspace/trigger"
	wakes    int      // WakeOutbox calls
}

func newTestHost(cfg *config.Config) *testHost {
	h := &testHost{}
	h.cfg.Store(cfg)
	h.leading.Store(true) // as the daemon's lead does once it schedules
	return h
}

func (h *testHost) Config() *config.Config { return h.cfg.Load() }

func (h *testHost) find(name string) (config.Workspace, bool) {
	for _, w := range h.cfg.Load().Workspaces {
		if w.Name == name {
			return w, true
		}
	}
	return config.Workspace{}, false
}

func (h *testHost) Target(name string) (Target, bool) {
	w, ok := h.find(name)
	if !ok {
		return Target{}, false
	}
	return Target{Request: terraform.Request{Workspace: w.Name}}, true
}

func (h *testHost) Leading() bool { return h.leading.Load() }

func (h *testHost) QueueApply(workspace string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queued = append(h.queued, workspace)
	return nil
}

func (h *testHost) Detect(_ context.Context, workspace, trigger string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.detected = append(h.detected, workspace+"/"+trigger)
}

// AlertPlan is the workspace's effective alert policy routed to the
// default notifiers, as the daemon's alert plans (no routes here).
func (h *testHost) AlertPlan(workspace string) (AlertPlan, bool) {
	cfg := h.cfg.Load()
	w, ok := h.find(workspace)
	if !ok {
		return AlertPlan{}, false
	}
	p := cfg.EffectiveAlertPolicy(w)
	return AlertPlan{
		Policy: incident.Policy{
			IncludePending: *p.IncludePending, ConfirmAfter: p.ConfirmAfter, ErroredAfter: p.ErroredAfter,
			RenotifyAfter: time.Duration(p.RenotifyAfter), Owner: w.Owner, Labels: w.Labels,
		},
		Targets: incident.Routes(nil, cfg.Alerts.DefaultNotifiers, w.Name, w.Labels),
	}, true
}

func (h *testHost) WakeOutbox() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wakes++
}

func (h *testHost) detections() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.detected...)
}

// newController is New on st with host, applying in process.
func newController(t *testing.T, host Host, st Store) *Controller {
	t.Helper()
	c, err := New(t.Context(), Options{
		Host: host, Store: st, Applier: InProcess{}, Metrics: metrics.NewRemediations(prometheus.NewRegistry()),
		Logger: slog.New(slog.DiscardHandler), Runner: config.RunnerModeLocal, HashMismatchErr: errHashMismatch,
	})
	require.NoError(t, err)
	return c
}

// offFixture is a leading daemon's remediation side on a real store and
// a real config file, reloaded as the daemon reloads it, with an open
// drift incident on workspaces net and db (routed to the webhook "hook",
// whose messages stay in the outbox).
type offFixture struct {
	c    *Controller
	host *testHost
	st   *sqlite.Store
	dir  string
	path string
}

// writeConfig writes the config file with the remediation block of net
// and of db ("" for none: off by default), and, if more, extra workspace
// entries.
func (f *offFixture) writeConfig(t *testing.T, net, db string, more ...string) {
	t.Helper()
	ws := func(name, rem string) string {
		s := fmt.Sprintf("  - name: %s\n    source: { path: ./%s }\n", name, name)
		if rem != "" {
			s += "    remediation: " + rem + "\n"
		}
		return s
	}
	body := fmt.Sprintf(`store: { path: %q }
notifiers:
  - name: hook
    type: webhook
    webhook: { url_file: hook-url, secret_file: hook-secret }
alerts: { default_notifiers: [hook] }
workspaces:
`, filepath.Join(f.dir, "dw.db")) + ws("net", net) + ws("db", db)
	for _, m := range more {
		body += ws(m, "{ mode: approve }")
	}
	require.NoError(t, os.WriteFile(f.path, []byte(body), 0o644))
}

func newOffFixture(t *testing.T, net, db string) *offFixture {
	t.Helper()
	dir := t.TempDir()
	f := &offFixture{dir: dir, path: filepath.Join(dir, "driftwatch.yaml")}
	for _, n := range []string{"net", "db", "web"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, n), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-url"), []byte("http://127.0.0.1:9/hook\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-secret"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	f.writeConfig(t, net, db)
	cfg, err := config.LoadFile(f.path)
	require.NoError(t, err)

	st, err := sqlite.Open(t.Context(), cfg.Store.Path, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	f.st = st
	f.host = newTestHost(cfg)
	f.c = newController(t, f.host, st)
	for _, ws := range []string{"net", "db"} {
		f.openDrift(t, ws)
	}
	require.Equal(t, []string{"open", "open"}, f.drain(t))
	return f
}

// openDrift records a drifted detection run of ws, with its incident
// outcome as the daemon decides it: its drift incident opens
// (confirm_after 1).
func (f *offFixture) openDrift(t *testing.T, ws string) {
	t.Helper()
	now := time.Now().UTC()
	run := store.Run{ID: drift.NewRunID(), Workspace: ws, Trigger: "schedule", StartedAt: now, Status: store.RunRunning}
	require.NoError(t, f.st.StartRun(t.Context(), run))
	run.FinishedAt, run.Status = now, drift.StatusDrift
	run.Findings = []drift.Finding{{Kind: drift.KindDrift, Address: "dwtest_file.a", Type: "dwtest_file", Action: "update", Attributes: []string{"content"}}}
	plan, ok := f.host.AlertPlan(ws)
	require.True(t, ok)
	outcome := func(before, after store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		changed, msgs := incident.Decide(now, run.ID, plan.Policy, before, after, incidents, drift.NewRunID)
		out, err := incident.Enqueue(now, msgs, plan.Targets)
		if err != nil {
			panic(err)
		}
		return changed, out
	}
	_, _, err := f.st.FinishRunWithOutcome(t.Context(), run, outcome)
	require.NoError(t, err)
}

// propose stores a remediation of ws in state (pending or approved) with
// its announcement, as AfterDetect does.
func (f *offFixture) propose(t *testing.T, ws string, state store.RemediationState) store.Remediation {
	t.Helper()
	now := time.Now().UTC()
	cs := engine.ChangeSet{Entries: []engine.Entry{{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content"}}}}
	csJSON, err := json.Marshal(cs)
	require.NoError(t, err)
	r := store.Remediation{ID: drift.NewRunID(), Workspace: ws, DetectRunID: "detect-" + ws, Mode: config.RemediationApprove,
		ChangeSet: csJSON, ChangeSetHash: cs.Hash(), Refusals: json.RawMessage(`[]`), CreatedAt: now, State: state}
	switch state {
	case store.RemediationPending:
		r.ExpiresAt = now.Add(time.Hour)
	case store.RemediationApproved:
		r.Mode, r.DecidedAt, r.DecidedBy = config.RemediationAuto, now, "auto"
	}
	require.NoError(t, f.c.createAnnounced(t.Context(), r))
	return r
}

// swapConfig rewrites the config file and makes it the Host's config,
// returning the old one: a config change the daemon did not announce to
// the controller.
func (f *offFixture) swapConfig(t *testing.T, net, db string, more ...string) *config.Config {
	t.Helper()
	f.writeConfig(t, net, db, more...)
	cfg, err := config.LoadFile(f.path)
	require.NoError(t, err)
	return f.host.cfg.Swap(cfg)
}

// reload rewrites the config and reloads it as the daemon does: the new
// config (with its targets and alert plans) replaces the old one, then
// Reloaded is told.
func (f *offFixture) reload(t *testing.T, net, db string, more ...string) {
	t.Helper()
	old := f.swapConfig(t, net, db, more...)
	f.c.Reloaded(context.Background(), old)
}

func (f *offFixture) get(t *testing.T, id string) store.Remediation {
	t.Helper()
	r, err := f.st.Remediation(t.Context(), id)
	require.NoError(t, err)
	return r
}

// drain returns the outbox's messages in order ("open",
// "remediation:refused", ...) and marks them delivered.
func (f *offFixture) drain(t *testing.T) []string {
	t.Helper()
	var events []string
	for {
		ms, err := f.st.DueMessages(t.Context(), time.Now().Add(time.Hour), 100)
		require.NoError(t, err)
		if len(ms) == 0 {
			return events
		}
		for _, m := range ms {
			var msg notify.Message
			require.NoError(t, json.Unmarshal(m.Payload, &msg))
			e := string(msg.Event)
			if msg.Remediation != nil {
				e += ":" + string(msg.Remediation.Result) + ":" + msg.Remediation.Reason
			}
			events = append(events, e)
			require.NoError(t, f.st.MarkDelivered(t.Context(), m.ID, time.Now(), nil))
		}
	}
}

// fakeApplier stands in for Terraform in Controller.Apply: it plans (runs
// duringPlan), then, like engine.Applier.Apply, asks the kill switch
// and Proceed right before `terraform apply`, which it only records.
type fakeApplier struct {
	duringPlan func()
	applied    []string // run ids that reached `terraform apply`
}

func (f *fakeApplier) Remediate(ctx context.Context, a *engine.Applier, req terraform.Request, _ engine.ChangeSet) (engine.Outcome, error) {
	if f.duringPlan != nil {
		f.duringPlan()
	}
	refuse := func(r engine.Refusal) (engine.Outcome, error) {
		return engine.Outcome{Result: engine.ResultRefused, Reason: r.Reason, Refusals: []engine.Refusal{r}}, nil
	}
	if a.Paused != nil && a.Paused() {
		return refuse(engine.Refusal{Code: engine.CodePaused, Reason: "remediation is paused (global kill switch)"})
	}
	if a.Proceed != nil {
		if r := a.Proceed(ctx); r != nil {
			return refuse(*r)
		}
	}
	f.applied = append(f.applied, req.RunID)
	return engine.Outcome{Result: engine.ResultApplied, ApplyStarted: true}, nil
}

// proceedFixture is the store and controller the proceed check reads,
// with remediation "rem-1" of workspace "net" running its apply "apply-1".
type proceedFixture struct {
	c    *Controller
	host *testHost
	st   *sqlite.Store
}

func newProceedFixture(t *testing.T) *proceedFixture {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "dw.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	host := newTestHost(&config.Config{Workspaces: []config.Workspace{{Name: "net", Remediation: &config.Remediation{Mode: config.RemediationAuto}}}})
	c := newController(t, host, st)
	now := time.Now().UTC().Truncate(time.Second)
	cs, _ := json.Marshal(engine.ChangeSet{Entries: []engine.Entry{{Address: "dwtest_file.a", Action: "update"}}})
	require.NoError(t, st.CreateRemediation(t.Context(), store.Remediation{
		ID: "rem-1", Workspace: "net", DetectRunID: "detect-1", Mode: config.RemediationAuto, ChangeSet: cs, ChangeSetHash: "h",
		State: store.RemediationApproved, CreatedAt: now, DecidedAt: now, DecidedBy: "auto",
	}))
	_, err = st.TransitionRemediation(t.Context(), "rem-1", []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationRunning, At: now, ApplyRunID: "apply-1"})
	require.NoError(t, err)
	require.NoError(t, st.StartRun(t.Context(), store.Run{ID: "apply-1", Workspace: "net", Trigger: TriggerRemediate, StartedAt: now, Status: store.RunRunning}))
	return &proceedFixture{c: c, host: host, st: st}
}
