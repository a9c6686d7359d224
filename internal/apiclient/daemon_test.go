package apiclient_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// The daemon's tokens in these tests; no error may ever show one.
const (
	apiToken  = "api-tok-CANARY-7f3a"
	readToken = "read-tok-CANARY-2b9c"
)

var errBusy = errors.New("busy")

// errUnavailable is the daemon's refusal while it does not schedule: it
// reads "unavailable" and is a server.ErrUnavailable (503 with its text).
var errUnavailable error = unavailableError{}

type unavailableError struct{}

func (unavailableError) Error() string        { return "unavailable" }
func (unavailableError) Is(target error) bool { return target == server.ErrUnavailable }

// request is what the test daemon received.
type request struct {
	Method, URI                        string
	Authorization, Accept, ContentType string
	Body                               string
}

// testDaemon is the real internal/server over a sqlite store and a
// runlog.Registry, with Trigger, Cancel and the remediation API doing
// what the daemon's do; it records every request.
type testDaemon struct {
	t   *testing.T
	st  *sqlite.Store
	reg *runlog.Registry
	ts  *httptest.Server
	url string
	// apiTokenFile and readTokenFile hold apiToken and readToken.
	apiTokenFile, readTokenFile string

	mu          sync.Mutex
	n           int
	active      map[string]string // workspace -> queued or running run
	unavailable bool              // Trigger answers errUnavailable
	requests    []request
	rems        map[string]*store.Remediation
}

type daemonOptions struct {
	noTokens    bool   // no server.token_file nor read token: logs are served to nobody
	externalURL string // server.external_url
	// groups are the group incidents the daemon keeps (nil: none).
	groups server.GroupReader
	// adopt, if set, adopts the unmanaged resources of the scan "files",
	// configured beside the workspaces.
	adopt server.AdoptControl
}

func newTestDaemon(t *testing.T, o daemonOptions) *testDaemon {
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	d := &testDaemon{
		t: t, st: st, reg: runlog.NewRegistry(), active: map[string]string{},
		rems: map[string]*store.Remediation{
			"5e1f00d2a1b2c3d4": {ID: "5e1f00d2a1b2c3d4", Workspace: "net", State: store.RemediationPending, ChangeSetHash: "h1", Mode: "approve"},
			"77aa00d2a1b2c3d4": {ID: "77aa00d2a1b2c3d4", Workspace: "payments", State: store.RemediationPending, ChangeSetHash: "h2", Mode: "approve"},
		},
	}
	d.apiTokenFile = writeFile(t, "api-token", apiToken+"\n")
	d.readTokenFile = writeFile(t, "read-token", readToken+"\n")
	opts := server.Options{
		Store:    st,
		Control:  control{d, remediations{d}, silences{d}},
		Gatherer: prometheus.NewRegistry(),
		Logger:   logger,
		Config:   config.Server{TokenFile: d.apiTokenFile, ReadTokenFile: d.readTokenFile, ExternalURL: o.externalURL},
		Logs:     st,
		Groups:   o.groups,
	}
	if o.adopt != nil {
		opts.Control = adopting{opts.Control.(control), o.adopt}
	}
	if o.noTokens {
		opts.Config.TokenFile, opts.Config.ReadTokenFile = "", ""
	}
	srv, err := server.New(opts)
	require.NoError(t, err)
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.requests = append(d.requests, request{
			Method: r.Method, URI: r.URL.RequestURI(), Authorization: r.Header.Get("Authorization"),
			Accept: r.Header.Get("Accept"), ContentType: r.Header.Get("Content-Type"), Body: string(b),
		})
		d.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	d.ts, d.url = ts, ts.URL
	return d
}

func writeFile(t *testing.T, name, content string) string {
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func (d *testDaemon) trigger(name string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unavailable {
		return "", fmt.Errorf("%w: this replica is a standby; the leader runs workspaces", errUnavailable)
	}
	if id, busy := d.active[name]; busy {
		return id, errBusy // the daemon names the run it is busy with
	}
	d.n++
	id := fmt.Sprintf("run-%d", d.n)
	l := runlog.New(1<<20, nil)
	l.Printf("== queued (trigger manual): waiting for a run slot ==")
	d.reg.Add(id, l, nil)
	if err := d.st.QueueRun(context.Background(), store.Run{ID: id, Workspace: name, Trigger: "manual", StartedAt: time.Now()}); err != nil {
		return "", err
	}
	d.active[name] = id
	return id, nil
}

// control is the test daemon as the server's Control, remediation and
// silences included: the daemon's errors mapped onto the server's, as the daemon's
// Control does.
type control struct {
	d *testDaemon
	remediations
	silences
}

func (c control) Workspaces() []server.WorkspaceInfo {
	return []server.WorkspaceInfo{{Name: "net"}, {Name: "payments"}}
}

func (c control) Trigger(name string) (string, error) {
	id, err := c.d.trigger(name)
	if errors.Is(err, errBusy) {
		return "", &server.BusyError{RunID: id, Err: err}
	}
	return id, err
}

func (c control) Cancel(id string) (bool, error) {
	queued, err := c.d.cancel(id)
	if errors.Is(err, runlog.ErrNotRunning) {
		return false, fmt.Errorf("%w: %w", server.ErrNotRunning, err)
	}
	return queued, err
}

func (c control) Ready() error                                               { return nil }
func (c control) LiveLog(id string) *runlog.Log                              { return c.d.reg.Live(id) }
func (c control) Notifiers(context.Context) ([]server.NotifierStatus, error) { return nil, nil }

// adopting is control with the scan "files" and its adoptions.
type adopting struct {
	control
	server.AdoptControl
}

func (a adopting) Workspaces() []server.WorkspaceInfo {
	return append(a.control.Workspaces(), server.WorkspaceInfo{Name: "files", Scan: true})
}

// cancel cancels a queued run at once, as the daemon does; a running one
// is asked to stop (the test plays its end).
func (d *testDaemon) cancel(id string) (bool, error) {
	r, err := d.st.Run(context.Background(), id)
	if err != nil {
		return false, err
	}
	switch r.Status {
	case store.RunQueued:
		r.Status, r.Error, r.FinishedAt = store.RunCancelled, "cancelled by request", time.Now()
		require.NoError(d.t, d.st.FinishQueuedRun(context.Background(), r))
		d.end(r)
		return true, nil
	case store.RunRunning:
		return false, nil
	}
	return false, runlog.ErrNotRunning
}

// runT0 is when started runs start.
var runT0 = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

// start starts queued run id at runT0 and logs lines.
func (d *testDaemon) start(id string, lines ...string) {
	ctx := d.t.Context()
	r, err := d.st.Run(ctx, id)
	require.NoError(d.t, err)
	r.Status, r.StartedAt = store.RunRunning, runT0
	require.NoError(d.t, d.st.StartQueuedRun(ctx, r))
	d.log(id, lines...)
}

func (d *testDaemon) log(id string, lines ...string) {
	l := d.reg.Live(id)
	for _, line := range lines {
		l.Printf("%s", line)
	}
}

// finish records running run id finished as fin (its status, error,
// findings and end) and ends it.
func (d *testDaemon) finish(id string, fin store.Run) {
	ctx := d.t.Context()
	r, err := d.st.Run(ctx, id)
	require.NoError(d.t, err)
	r.Status, r.Error, r.Findings = fin.Status, fin.Error, fin.Findings
	r.FinishedAt = fin.FinishedAt
	_, _, err = d.st.FinishRun(ctx, r)
	require.NoError(d.t, err)
	d.end(r)
}

// end saves the log, ends its followers and forgets the run.
func (d *testDaemon) end(r store.Run) {
	l := d.reg.Live(r.ID)
	require.NoError(d.t, d.st.SaveRunLog(context.Background(), r.ID, l.Bytes()))
	l.Close(string(r.Status))
	d.reg.Remove(r.ID)
	d.mu.Lock()
	delete(d.active, r.Workspace)
	d.mu.Unlock()
}

func (d *testDaemon) reqs() []request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]request(nil), d.requests...)
}

// last is the last request received.
func (d *testDaemon) last() request {
	r := d.reqs()
	require.NotEmpty(d.t, r)
	return r[len(r)-1]
}

// remediations is the daemon's remediation controller, reduced to the
// decisions: pending can be approved (with the right hash) or rejected.
type remediations struct{ d *testDaemon }

func (m remediations) List(context.Context, string) ([]store.Remediation, error) { return nil, nil }

func (m remediations) Get(_ context.Context, id string) (store.Remediation, error) {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	if r, ok := m.d.rems[id]; ok {
		return *r, nil
	}
	return store.Remediation{}, store.ErrNotFound
}

func (m remediations) Approve(_ context.Context, id, hash string) (store.Remediation, error) {
	return m.decide(id, hash, store.RemediationApproved)
}

func (m remediations) Reject(_ context.Context, id string) (store.Remediation, error) {
	return m.decide(id, "", store.RemediationRejected)
}

func (m remediations) decide(id, hash string, to store.RemediationState) (store.Remediation, error) {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	r, ok := m.d.rems[id]
	switch {
	case !ok:
		return store.Remediation{}, store.ErrNotFound
	case r.State != store.RemediationPending:
		return store.Remediation{}, fmt.Errorf("%w: remediation %s is %s, not pending", store.ErrConflict, id, r.State)
	case hash != "" && hash != r.ChangeSetHash:
		return store.Remediation{}, server.ErrHashMismatch
	}
	r.State, r.DecidedBy, r.DecidedAt = to, "api", time.Now()
	return *r, nil
}

func (m remediations) Status(context.Context) (bool, bool, error) { return true, false, nil }
func (m remediations) SetPaused(context.Context, bool) error      { return nil }

func writeFileAt(t *testing.T, path, content string) {
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}
