package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/store"
)

// testNow is the fixed clock of every test: 3 am, when on-call looks.
var testNow = time.Date(2026, 3, 14, 3, 0, 0, 0, time.UTC)

// The errors a daemon's Control returns, as it returns them: its own
// errors, wrapped in the server's.
var (
	errUnknown = fmt.Errorf("scheduler: %w", ErrUnknownWorkspace)
	errBusy    = fmt.Errorf("scheduler: workspace busy: %w", ErrBusy)
	errStandby = fmt.Errorf("%w: a standby", ErrUnavailable)
)

const testToken = "s3cr3t-t0ken-value"

// fixture fills st with one workspace per status and returns the
// configured workspaces (new-service has never run).
func fixture(st *fakeStore) []WorkspaceInfo {
	ago := func(d time.Duration) time.Time { return testNow.Add(-d) }
	st.incidents = []store.Incident{
		{Key: "dw-drift-prod-network-1", Workspace: "prod-network", Class: "drift", State: store.IncidentOpen, OpenedAt: ago(3 * time.Hour),
			NotifiedAt: ago(8 * time.Minute), Severity: "critical", SeverityRule: "sg-ingress",
			Findings: []drift.Finding{{Kind: drift.KindDrift, Address: "aws_security_group.web"}}},
		{Key: "dw-errored-prod-network-1", Workspace: "prod-network", Class: "errored", State: store.IncidentPending, OpenedAt: ago(time.Hour),
			Severity: "low"},
		{Key: "dw-forbidden-prod-network-1", Workspace: "prod-network", Class: "forbidden", State: store.IncidentResolved,
			OpenedAt: ago(48 * time.Hour), Severity: "high"},
	}
	st.setState(store.WorkspaceState{
		Workspace: "prod-network", Status: drift.StatusDrift, Since: ago(3 * time.Hour),
		LastRunID: "run-net-3", LastRunAt: ago(10 * time.Minute), LastSuccessAt: ago(8 * time.Minute),
		Fingerprint: "fp-net",
		Findings: []drift.Finding{
			{Kind: drift.KindPending, Address: "aws_instance.bastion", Type: "aws_instance", Action: "update", Attributes: []string{"tags.Owner"}},
			{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update", Attributes: []string{"ingress", "egress[0].cidr_blocks"}},
			{Kind: drift.KindDrift, Address: "aws_route53_record.api", Type: "aws_route53_record", Action: "update", Attributes: []string{"ttl"}},
			{Kind: drift.KindNoise, Address: "data.aws_ami.ubuntu", Type: "aws_ami", Action: "read"},
			{Kind: drift.KindDrift, Address: "aws_autoscaling_group.web", Type: "aws_autoscaling_group", Action: "update", Attributes: []string{"desired_capacity"}, Ignored: true},
		},
	})
	st.setState(store.WorkspaceState{
		Workspace: "prod-k8s", Status: drift.StatusForbidden, Since: ago(26 * time.Hour),
		LastRunID: "run-k8s-1", LastRunAt: ago(40 * time.Minute), LastSuccessAt: ago(38 * time.Minute),
		Findings: []drift.Finding{
			{Kind: drift.KindForbidden, Address: `kubernetes_deployment.api["default"]`, Type: "kubernetes_deployment", Action: "create", SeenIn: []string{"config", "plan"}},
			{Kind: drift.KindDrift, Address: "helm_release.ingress", Type: "helm_release", Action: "update", Attributes: []string{"values"}},
		},
	})
	st.setState(store.WorkspaceState{
		Workspace: "billing-db", Status: drift.StatusErrored, Since: ago(90 * time.Minute),
		LastRunID: "run-db-9", LastRunAt: ago(5 * time.Minute), LastSuccessAt: ago(50 * time.Hour),
		Error:             "init: backend: AccessDenied: assume role arn:aws:iam::123456789012:role/terraform failed",
		ConsecutiveErrors: 3,
		Findings: []drift.Finding{
			{Kind: drift.KindPending, Address: "aws_db_instance.main", Type: "aws_db_instance", Action: "update", Attributes: []string{"engine_version"}},
		},
	})
	st.setState(store.WorkspaceState{
		Workspace: "staging-web", Status: drift.StatusClean, Since: ago(9 * 24 * time.Hour),
		LastRunID: "run-stg-1", LastRunAt: ago(20 * time.Minute), LastSuccessAt: ago(19 * time.Minute),
	})
	st.setState(store.WorkspaceState{
		Workspace: "sandbox", Status: drift.StatusPending, Since: ago(2 * time.Hour),
		LastRunID: "run-sbx-1", LastRunAt: ago(30 * time.Minute), LastSuccessAt: ago(29 * time.Minute),
		Findings: []drift.Finding{
			{Kind: drift.KindPending, Address: "aws_s3_bucket.scratch", Type: "aws_s3_bucket", Action: "create"},
			{Kind: drift.KindBackend, Address: "backend.local", Type: "local", Action: "state_permissions", Detail: "mode 0644: chmod 600 terraform.tfstate"},
		},
	})
	// State of a workspace since removed from the config: never shown.
	st.setState(store.WorkspaceState{Workspace: "retired", Status: drift.StatusDrift, LastRunAt: ago(time.Hour)})

	st.addRun(store.Run{
		ID: "run-net-1", Workspace: "prod-network", Trigger: "schedule", Status: drift.StatusClean,
		StartedAt: ago(4 * time.Hour), FinishedAt: ago(4*time.Hour - 95*time.Second), Tool: "terraform 1.11.4",
	})
	st.addRun(store.Run{
		ID: "run-net-2", Workspace: "prod-network", Trigger: "schedule", Status: drift.StatusErrored,
		StartedAt: ago(3*time.Hour + 30*time.Minute), FinishedAt: ago(3*time.Hour + 29*time.Minute),
		Error: "plan: timeout after 30m0s", Tool: "terraform 1.11.4",
		Phases: []drift.Phase{{Name: "source", Duration: 120 * time.Millisecond}},
	})
	st.addRun(store.Run{
		ID: "run-net-3", Workspace: "prod-network", Trigger: "manual", Status: drift.StatusDrift,
		StartedAt: ago(10 * time.Minute), FinishedAt: ago(8 * time.Minute), Tool: "terraform 1.11.4",
		Findings: st.states["prod-network"].Findings,
		Phases: []drift.Phase{
			{Name: "source", Duration: 250 * time.Millisecond},
			{Name: "init", Duration: 3 * time.Second},
			{Name: "plan", Duration: 115 * time.Second},
			{Name: "show", Duration: 1500 * time.Millisecond},
			{Name: "classify", Duration: 2 * time.Millisecond},
		},
	})
	st.addRun(store.Run{
		ID: "run-net-4", Workspace: "prod-network", Trigger: "schedule", Status: store.RunRunning,
		StartedAt: ago(30 * time.Second),
	})

	return []WorkspaceInfo{
		{Name: "prod-network", Owner: "team-net", Schedule: "*/30 * * * *", Labels: map[string]string{"env": "prod", "tier": "network"}, NextRun: testNow.Add(20 * time.Minute)},
		{Name: "prod-k8s", Owner: "team-platform", Schedule: "@hourly", Labels: map[string]string{"env": "prod"}, NextRun: testNow.Add(20 * time.Minute)},
		{Name: "billing-db", Owner: "team-billing", Schedule: "@hourly", NextRun: testNow.Add(55 * time.Minute)},
		{Name: "staging-web", Owner: "team-web", Schedule: "@hourly", Labels: map[string]string{"env": "staging"}, NextRun: testNow.Add(40 * time.Minute)},
		{Name: "sandbox", Schedule: "@daily", NextRun: testNow.Add(21 * time.Hour)},
		{Name: "new-service", Owner: "team-web", Schedule: "@hourly"},
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// harness is a Server over the fixture; it is the server's Control, with
// recording fakes for the scheduler and readiness.
type harness struct {
	store *fakeStore
	logs  *syncBuffer
	reg   *prometheus.Registry

	mu         sync.Mutex
	workspaces []WorkspaceInfo
	triggered  []string
	triggerErr error
	readyErr   error
	// liveLog, cancel and notifiers stand in for the daemon's run registry
	// and outbox (nil: no live logs, no cancellation, no notifiers).
	liveLog   func(runID string) *runlog.Log
	cancel    func(runID string) (bool, error)
	notifiers func(context.Context) ([]NotifierStatus, error)

	// silences and windows stand in for the daemon's silences and
	// maintenance windows; silenceErr, if set, is every silence call's
	// error. added and expired record the calls that reached it.
	silences   []store.Silence
	windows    []MaintenanceWindow
	silenceErr error
	added      []SilenceRequest
	expired    []string // "id by"
}

var (
	_ Control        = (*harness)(nil)
	_ SilenceControl = (*harness)(nil)
)

func (h *harness) Workspaces() []WorkspaceInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]WorkspaceInfo(nil), h.workspaces...)
}

func (h *harness) Trigger(name string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var busy *BusyError
	if !errors.As(h.triggerErr, &busy) && errors.Is(h.triggerErr, ErrBusy) {
		return "", &BusyError{RunID: "run-" + name + "-inflight", Err: h.triggerErr} // the run it is busy with
	}
	if h.triggerErr != nil {
		return "", h.triggerErr
	}
	h.triggered = append(h.triggered, name)
	return fmt.Sprintf("run-%s-q%d", name, len(h.triggered)), nil
}

func (h *harness) Ready() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.readyErr
}

func (h *harness) LiveLog(runID string) *runlog.Log {
	h.mu.Lock()
	f := h.liveLog
	h.mu.Unlock()
	if f == nil {
		return nil
	}
	return f(runID)
}

func (h *harness) Cancel(runID string) (bool, error) {
	h.mu.Lock()
	f := h.cancel
	h.mu.Unlock()
	if f == nil {
		return false, fmt.Errorf("cancel %s: %w", runID, errors.ErrUnsupported)
	}
	return f(runID)
}

func (h *harness) Notifiers(ctx context.Context) ([]NotifierStatus, error) {
	h.mu.Lock()
	f := h.notifiers
	h.mu.Unlock()
	if f == nil {
		return nil, nil
	}
	return f(ctx)
}

// Silences lists the silences that have not ended at testNow, soonest
// end first, as the daemon does.
func (h *harness) Silences(context.Context) ([]store.Silence, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.silenceErr != nil {
		return nil, h.silenceErr
	}
	var out []store.Silence
	for _, x := range h.silences {
		if x.EndsAt.After(testNow) {
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(a, b store.Silence) int { return a.EndsAt.Compare(b.EndsAt) })
	return out, nil
}

// AddSilence records req and stores it as the daemon would: a new id,
// from req.StartsAt (zero: testNow) for req.For. An unknown workspace is
// ErrUnknownWorkspace.
func (h *harness) AddSilence(_ context.Context, req SilenceRequest) (store.Silence, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.added = append(h.added, req)
	if h.silenceErr != nil {
		return store.Silence{}, h.silenceErr
	}
	if req.Workspace != "" && !slices.ContainsFunc(h.workspaces, func(w WorkspaceInfo) bool { return w.Name == req.Workspace }) {
		return store.Silence{}, fmt.Errorf("silence: %w", ErrUnknownWorkspace)
	}
	start := req.StartsAt
	if start.IsZero() {
		start = testNow
	}
	x := store.Silence{
		ID: fmt.Sprintf("sil-%d", len(h.added)), Workspace: req.Workspace, Labels: req.Labels,
		StartsAt: start, EndsAt: start.Add(req.For), Comment: req.Comment, CreatedBy: req.CreatedBy, CreatedAt: testNow,
	}
	h.silences = append(h.silences, x)
	return x, nil
}

// ExpireSilence ends silence id at testNow; an unknown one is
// store.ErrNotFound.
func (h *harness) ExpireSilence(_ context.Context, id, by string) (store.Silence, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expired = append(h.expired, id+" "+by)
	if h.silenceErr != nil {
		return store.Silence{}, h.silenceErr
	}
	for i, x := range h.silences {
		if x.ID == id {
			if x.EndsAt.After(testNow) {
				h.silences[i].EndsAt = testNow
			}
			return h.silences[i], nil
		}
	}
	return store.Silence{}, fmt.Errorf("silence %q: %w", id, store.ErrNotFound)
}

// MaintenanceWindows returns the configured windows as they are.
func (h *harness) MaintenanceWindows(time.Time) []MaintenanceWindow {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]MaintenanceWindow(nil), h.windows...)
}

// setSilences installs the daemon's silences and windows.
func (h *harness) setSilences(sils []store.Silence, wins []MaintenanceWindow) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.silences, h.windows = sils, wins
}

func (h *harness) setSilenceErr(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.silenceErr = err
}

// silenceCalls returns the recorded AddSilence requests and
// ExpireSilence calls.
func (h *harness) silenceCalls() ([]SilenceRequest, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]SilenceRequest(nil), h.added...), append([]string(nil), h.expired...)
}

// setLiveLog, setCancel and setNotifiers install the daemon's side of
// live logs, cancellation and notifier health (nil: none).
func (h *harness) setLiveLog(f func(runID string) *runlog.Log) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.liveLog = f
}

func (h *harness) setCancel(f func(runID string) (bool, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cancel = f
}

func (h *harness) setNotifiers(f func(context.Context) ([]NotifierStatus, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notifiers = f
}

// withRemediation is a Control that also serves remediation, as the
// daemon's does.
type withRemediation struct {
	Control
	RemediationControl
}

func (h *harness) setWorkspaces(ws []WorkspaceInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.workspaces = ws
}

func (h *harness) setTriggerErr(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.triggerErr = err
}

func (h *harness) setReadyErr(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readyErr = err
}

func (h *harness) triggeredNames() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.triggered...)
}

// options returns Options with h as the Control; mutate before New.
func (h *harness) options() Options {
	return Options{
		Store:     h.store,
		Incidents: h.store,
		Control:   h,
		Gatherer:  h.reg,
		Logger:    slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:       func() time.Time { return testNow },
	}
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	st := newFakeStore()
	h := &harness{store: st, logs: &syncBuffer{}, reg: prometheus.NewRegistry()}
	h.workspaces = fixture(st)
	return h
}

// serve starts the server from o on a real 127.0.0.1 listener, whose
// address is o.Config.Listen unless set (the commands pages show use it).
func serve(t *testing.T, o Options) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	if o.Config.Listen == "" {
		o.Config.Listen = ts.Listener.Addr().String()
	}
	s, err := New(o)
	require.NoError(t, err)
	ts.Config.Handler = s.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// bearerAuth and basicAuth are the headers of a read credential: a bearer
// token (the CLI) or HTTP Basic auth with any user name (a browser).
func bearerAuth(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

func basicAuth(token string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("on-call:"+token))}
}

// writeToken writes a token file and returns its path.
func writeToken(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// do sends a request and returns the status, headers and body.
func do(t *testing.T, method, url string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	return do(t, http.MethodGet, url, nil)
}

// requireJSON asserts a JSON response with exactly the body want.
func requireJSON(t *testing.T, wantCode int, want string, code int, h http.Header, body string) {
	t.Helper()
	require.Equal(t, wantCode, code, body)
	require.Equal(t, "application/json", h.Get("Content-Type"))
	require.JSONEq(t, want, body)
}

// withoutStyle drops the inline stylesheet from a dumped DOM, so that a
// failed assertion prints the content, not the CSS.
func withoutStyle(dom string) string {
	i, j := strings.Index(dom, "<style>"), strings.Index(dom, "</style>")
	if i < 0 || j < i {
		return dom
	}
	return dom[:i] + dom[j+len("</style>"):]
}
