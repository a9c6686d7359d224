package pipeline

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// fakeRunner returns canned results per workspace and records concurrency.
type fakeRunner struct {
	results map[string]runner.Result
	errs    map[string]error
	delay   time.Duration
	active  atomic.Int32
	peak    atomic.Int32
	mu      sync.Mutex
	order   []string
}

func (f *fakeRunner) Run(ctx context.Context, req terraform.Request) (runner.Result, error) {
	n := f.active.Add(1)
	defer f.active.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	f.mu.Lock()
	f.order = append(f.order, req.Workspace)
	f.mu.Unlock()
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return runner.Result{}, &terraform.Error{Phase: "plan", Reason: "cancelled", Err: ctx.Err()}
	}
	if err := f.errs[req.Workspace]; err != nil {
		return runner.Result{}, err
	}
	return f.results[req.Workspace], nil
}

func newAuditor(r runner.Runner) *Auditor {
	return &Auditor{Runner: r, Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
}

func target(name string) Target {
	return Target{Name: name, Request: terraform.Request{Workspace: name},
		Rules: policy.Rules{Forbidden: []policy.Glob{policy.MustCompileGlob("kubernetes_*")}}}
}

func TestCheckClassifies(t *testing.T) {
	r := &fakeRunner{
		results: map[string]runner.Result{
			"drift": {Tool: "terraform 1.11.4", Plan: &planparse.Plan{
				Drift:   []planparse.Change{{Address: "x.a", Mode: "managed", Type: "x", Actions: []string{"update"}, Attributes: []string{"content"}}},
				Changes: []planparse.Change{{Address: "x.a", Mode: "managed", Type: "x", Actions: []string{"update"}, Attributes: []string{"content"}}},
			}},
			"errored-plan": {Plan: &planparse.Plan{Errored: true}},
		},
		errs: map[string]error{"broken": &terraform.Error{Phase: "plan", Reason: "Error: Unsupported argument (main.tf line 4)", Err: errors.New("exit status 1")}},
	}
	a := newAuditor(r)
	res := a.Check(t.Context(), target("drift"))
	require.Equal(t, drift.StatusDrift, res.Status)
	require.Equal(t, "terraform 1.11.4", res.Tool)
	require.Len(t, res.Findings, 1)
	require.Equal(t, "classify", res.Phases[len(res.Phases)-1].Name)

	res = a.Check(t.Context(), target("broken"))
	require.Equal(t, drift.StatusErrored, res.Status)
	require.Equal(t, "plan: Error: Unsupported argument (main.tf line 4)", res.Error)

	res = a.Check(t.Context(), target("errored-plan"))
	require.Equal(t, drift.StatusErrored, res.Status, "an errored plan is never clean, whatever the exit code")
}

func TestRunAllCapsConcurrencyAndKeepsOrder(t *testing.T) {
	r := &fakeRunner{results: map[string]runner.Result{}, delay: 20 * time.Millisecond}
	var targets []Target
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		r.results[n] = runner.Result{Plan: &planparse.Plan{}}
		targets = append(targets, target(n))
	}
	res := newAuditor(r).RunAll(t.Context(), targets, 3, nil)
	require.LessOrEqual(t, r.peak.Load(), int32(3))
	require.Equal(t, int32(3), r.peak.Load(), "the cap is used")
	require.Len(t, res, 7)
	for i, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		require.Equal(t, n, res[i].Workspace, "results are in inventory order")
		require.Equal(t, drift.StatusClean, res[i].Status)
	}
	require.ElementsMatch(t, []string{"a", "b", "c"}, r.order[:3], "the first three start first")
}

func TestRunAllCancelled(t *testing.T) {
	r := &fakeRunner{results: map[string]runner.Result{"a": {Plan: &planparse.Plan{}}, "b": {Plan: &planparse.Plan{}}}, delay: time.Minute}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	res := newAuditor(r).RunAll(ctx, []Target{target("a"), target("b")}, 1, nil)
	require.Equal(t, drift.StatusErrored, res[0].Status)
	require.Equal(t, drift.StatusErrored, res[1].Status)
	require.Equal(t, "cancelled before it started", res[1].Error)
}

// The one line a failed run leaves (the workspace's error, the status
// page, alerts, the daemon's log) is redacted once more, whatever the
// runner returned: the known secrets, the request's backend_config values
// and the user info and query string of every URL.
func TestCheckRedactsReason(t *testing.T) {
	r := &fakeRunner{errs: map[string]error{
		"runner-error": &terraform.Error{Phase: "init", Reason: `Get "http://u:CANARY-pw@h/state?token=CANARY-q": refused (user CANARY-inline, key CANARY-daemon)`},
		"plain-error":  errors.New(`dial https://CANARY-tok@git.example/r.git?x=CANARY-q2: CANARY-inline`),
	}}
	a := newAuditor(r)
	for name, want := range map[string]string{
		"runner-error": `init: Get "http://[REDACTED]@h/state?[REDACTED]": refused (user [REDACTED], key [REDACTED])`,
		"plain-error":  `dial https://[REDACTED]@git.example/r.git?[REDACTED]: [REDACTED]`,
	} {
		tg := target(name)
		tg.Request.BackendConfig = []string{"username=CANARY-inline"}
		tg.Request.Redact = []string{"CANARY-daemon"}
		res := a.Check(t.Context(), tg)
		require.Equal(t, drift.StatusErrored, res.Status)
		require.Equal(t, want, res.Error, name)
	}
}
