package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/server/api"
)

func TestNewValidatesOptions(t *testing.T) {
	full := newHarness(t).options()
	tests := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"store", func(o *Options) { o.Store = nil }, "driftwatch/server: Options.Store is required"},
		{"control", func(o *Options) { o.Control = nil }, "driftwatch/server: Options.Control is required"},
		{"gatherer", func(o *Options) { o.Gatherer = nil }, "driftwatch/server: Options.Gatherer is required"},
		{"logger", func(o *Options) { o.Logger = nil }, "driftwatch/server: Options.Logger is required"},
		{"several", func(o *Options) { o.Store, o.Logger = nil, nil },
			"driftwatch/server: Options.Store is required\ndriftwatch/server: Options.Logger is required"},
		{"relative external url", func(o *Options) { o.Config.ExternalURL = "/driftwatch" },
			`driftwatch/server: Options.Config.ExternalURL "/driftwatch" must be an absolute http(s) URL without query or fragment`},
		{"external url with query", func(o *Options) { o.Config.ExternalURL = "https://x.example/?a=b" },
			`driftwatch/server: Options.Config.ExternalURL "https://x.example/?a=b" must be an absolute http(s) URL without query or fragment`},
		{"missing token file", func(o *Options) { o.Config.TokenFile = "/nonexistent/token" },
			"driftwatch/server: Options.Config.TokenFile: read token file: open /nonexistent/token: no such file or directory"},
		{"empty token file", func(o *Options) { o.Config.TokenFile = writeToken(t, " \n") },
			"driftwatch/server: Options.Config.TokenFile: token file is empty"},
		{"huge token file", func(o *Options) { o.Config.TokenFile = writeToken(t, strings.Repeat("x", 5000)) },
			"driftwatch/server: Options.Config.TokenFile: token file is larger than 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := full
			tt.mutate(&o)
			s, err := New(o)
			require.EqualError(t, err, tt.want)
			require.Nil(t, s)
		})
	}
	t.Run("valid", func(t *testing.T) {
		o := full
		o.Now = nil
		s, err := New(o)
		require.NoError(t, err)
		require.NotNil(t, s.Handler())
	})
}

func TestHealthz(t *testing.T) {
	h := newHarness(t)
	h.setReadyErr(errors.New("store not open"))
	ts := serve(t, h.options())
	code, hdr, body := get(t, ts.URL+"/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	require.Equal(t, "text/plain; charset=utf-8", hdr.Get("Content-Type"))

	code, _, _ = do(t, http.MethodPost, ts.URL+"/healthz", nil)
	require.Equal(t, http.StatusMethodNotAllowed, code)
}

// /api/v1/status says how local runs are isolated, so an operator sees a
// daemon whose runs can read each other's secrets.
func TestAPIStatus(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Version = "v9.9.9"
	o.Sandbox = SandboxStatus{Mode: "none", Reason: "bubblewrap (bwrap) is not installed",
		Network: "host", NetworkReason: "runs are not jailed: bubblewrap (bwrap) is not installed"}
	ts := serve(t, o)
	code, hdr, body := get(t, ts.URL+"/api/v1/status")
	requireJSON(t, http.StatusOK, `{"version":"v9.9.9","ready":true,"sandbox":{"mode":"none","reason":"bubblewrap (bwrap) is not installed","network":"host","network_reason":"runs are not jailed: bubblewrap (bwrap) is not installed"}}`, code, hdr, body)
	h.setReadyErr(errors.New("standby"))
	code, hdr, body = get(t, ts.URL+"/api/v1/status")
	requireJSON(t, http.StatusOK, `{"version":"v9.9.9","ready":false,"not_ready":"standby","sandbox":{"mode":"none","reason":"bubblewrap (bwrap) is not installed","network":"host","network_reason":"runs are not jailed: bubblewrap (bwrap) is not installed"}}`, code, hdr, body)

	// With leader election, the Lease holder's identity once known.
	leader := ""
	o.Leader = func() string { return leader }
	ts = serve(t, o)
	code, hdr, body = get(t, ts.URL+"/api/v1/status")
	requireJSON(t, http.StatusOK, `{"version":"v9.9.9","ready":false,"not_ready":"standby","sandbox":{"mode":"none","reason":"bubblewrap (bwrap) is not installed","network":"host","network_reason":"runs are not jailed: bubblewrap (bwrap) is not installed"}}`, code, hdr, body)
	leader = "driftwatch-0_1a2b3c4d"
	code, hdr, body = get(t, ts.URL+"/api/v1/status")
	requireJSON(t, http.StatusOK, `{"version":"v9.9.9","ready":false,"not_ready":"standby","leader":"driftwatch-0_1a2b3c4d","sandbox":{"mode":"none","reason":"bubblewrap (bwrap) is not installed","network":"host","network_reason":"runs are not jailed: bubblewrap (bwrap) is not installed"}}`, code, hdr, body)
}

func TestReadyz(t *testing.T) {
	h := newHarness(t)
	ts := serve(t, h.options())
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantBody string
	}{
		{"ready", nil, http.StatusOK, "ok\n"},
		{"not ready", errors.New("store: migrations pending"), http.StatusServiceUnavailable, "not ready: store: migrations pending\n"},
		{"ready again", nil, http.StatusOK, "ok\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.setReadyErr(tt.err)
			code, _, body := get(t, ts.URL+"/readyz")
			require.Equal(t, tt.wantCode, code)
			require.Equal(t, tt.wantBody, body)
		})
	}
}

func TestMetricsEndpoint(t *testing.T) {
	h := newHarness(t)
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "driftwatch_test_total", Help: "A test counter."})
	h.reg.MustRegister(c)
	c.Add(3)
	ts := serve(t, h.options())
	code, hdr, body := get(t, ts.URL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, hdr.Get("Content-Type"), "text/plain")
	require.Equal(t, "# HELP driftwatch_test_total A test counter.\n# TYPE driftwatch_test_total counter\ndriftwatch_test_total 3\n", body)
}

const wantWorkspacesJSON = `{"workspaces": [
  {"name": "billing-db", "owner": "team-billing", "labels": {}, "schedule": "@hourly", "status": "errored",
   "since": "2026-03-14T01:30:00Z", "last_run_at": "2026-03-14T02:55:00Z", "last_success_at": "2026-03-12T01:00:00Z",
   "next_run": "2026-03-14T03:55:00Z", "last_run_id": "run-db-9", "consecutive_errors": 3,
   "counts": {"drift": 0, "pending": 1, "forbidden": 0, "noise": 0, "hygiene": 0},
   "error": "init: backend: AccessDenied: assume role arn:aws:iam::123456789012:role/terraform failed",
   "url": "/workspaces/billing-db"},
  {"name": "new-service", "owner": "team-web", "labels": {}, "schedule": "@hourly", "status": "unknown",
   "since": null, "last_run_at": null, "last_success_at": null, "next_run": null, "last_run_id": "", "consecutive_errors": 0,
   "counts": {"drift": 0, "pending": 0, "forbidden": 0, "noise": 0, "hygiene": 0}, "error": "", "url": "/workspaces/new-service"},
  {"name": "prod-k8s", "owner": "team-platform", "labels": {"env": "prod"}, "schedule": "@hourly", "status": "forbidden",
   "since": "2026-03-13T01:00:00Z", "last_run_at": "2026-03-14T02:20:00Z", "last_success_at": "2026-03-14T02:22:00Z",
   "next_run": "2026-03-14T03:20:00Z", "last_run_id": "run-k8s-1", "consecutive_errors": 0,
   "counts": {"drift": 1, "pending": 0, "forbidden": 1, "noise": 0, "hygiene": 0}, "error": "", "url": "/workspaces/prod-k8s"},
  {"name": "prod-network", "owner": "team-net", "labels": {"env": "prod", "tier": "network"}, "schedule": "*/30 * * * *", "status": "drift",
   "since": "2026-03-14T00:00:00Z", "last_run_at": "2026-03-14T02:50:00Z", "last_success_at": "2026-03-14T02:52:00Z",
   "next_run": "2026-03-14T03:20:00Z", "last_run_id": "run-net-3", "consecutive_errors": 0,
   "counts": {"drift": 2, "pending": 1, "forbidden": 0, "noise": 1, "hygiene": 0}, "error": "", "url": "/workspaces/prod-network"},
  {"name": "sandbox", "owner": "", "labels": {}, "schedule": "@daily", "status": "pending",
   "since": "2026-03-14T01:00:00Z", "last_run_at": "2026-03-14T02:30:00Z", "last_success_at": "2026-03-14T02:31:00Z",
   "next_run": "2026-03-15T00:00:00Z", "last_run_id": "run-sbx-1", "consecutive_errors": 0,
   "counts": {"drift": 0, "pending": 1, "forbidden": 0, "noise": 0, "hygiene": 1}, "error": "", "url": "/workspaces/sandbox"},
  {"name": "staging-web", "owner": "team-web", "labels": {"env": "staging"}, "schedule": "@hourly", "status": "clean",
   "since": "2026-03-05T03:00:00Z", "last_run_at": "2026-03-14T02:40:00Z", "last_success_at": "2026-03-14T02:41:00Z",
   "next_run": "2026-03-14T03:40:00Z", "last_run_id": "run-stg-1", "consecutive_errors": 0,
   "counts": {"drift": 0, "pending": 0, "forbidden": 0, "noise": 0, "hygiene": 0}, "error": "", "url": "/workspaces/staging-web"}
]}`

func TestListWorkspaces(t *testing.T) {
	h := newHarness(t)
	ts := serve(t, h.options())
	code, hdr, body := get(t, ts.URL+"/api/v1/workspaces")
	requireJSON(t, http.StatusOK, wantWorkspacesJSON, code, hdr, body)

	t.Run("config reloaded", func(t *testing.T) {
		h.setWorkspaces([]WorkspaceInfo{{Name: "retired"}})
		defer h.setWorkspaces(fixture(newFakeStore()))
		code, hdr, body := get(t, ts.URL+"/api/v1/workspaces")
		requireJSON(t, http.StatusOK, `{"workspaces": [
		  {"name": "retired", "owner": "", "labels": {}, "schedule": "", "status": "drift",
		   "since": null, "last_run_at": "2026-03-14T02:00:00Z", "last_success_at": null, "next_run": null,
		   "last_run_id": "", "consecutive_errors": 0, "counts": {"drift": 0, "pending": 0, "forbidden": 0, "noise": 0, "hygiene": 0},
		   "error": "", "url": "/workspaces/retired"}]}`, code, hdr, body)
	})
	t.Run("no workspaces", func(t *testing.T) {
		h.setWorkspaces(nil)
		defer h.setWorkspaces(fixture(newFakeStore()))
		code, hdr, body := get(t, ts.URL+"/api/v1/workspaces")
		requireJSON(t, http.StatusOK, `{"workspaces": []}`, code, hdr, body)
	})
}

func TestExternalURL(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Config.ExternalURL = "https://ops.example.com/driftwatch/"
	ts := serve(t, o)
	code, hdr, body := get(t, ts.URL+"/api/v1/workspaces/sandbox")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "application/json", hdr.Get("Content-Type"))
	require.Contains(t, body, `"url": "https://ops.example.com/driftwatch/workspaces/sandbox"`)

	_, _, page := get(t, ts.URL+"/")
	require.Contains(t, page, `href="/driftwatch/workspaces/sandbox"`)
	require.Contains(t, page, `href="/driftwatch/api/v1/workspaces"`)
}

func TestGetWorkspace(t *testing.T) {
	h := newHarness(t)
	ts := serve(t, h.options())
	tests := []struct {
		name, path string
		wantCode   int
		want       string
	}{
		{"drifted", "/api/v1/workspaces/prod-network", http.StatusOK, `{
		  "name": "prod-network", "owner": "team-net", "labels": {"env": "prod", "tier": "network"}, "schedule": "*/30 * * * *",
		  "status": "drift", "since": "2026-03-14T00:00:00Z", "last_run_at": "2026-03-14T02:50:00Z",
		  "last_success_at": "2026-03-14T02:52:00Z", "next_run": "2026-03-14T03:20:00Z", "last_run_id": "run-net-3",
		  "consecutive_errors": 0, "counts": {"drift": 2, "pending": 1, "forbidden": 0, "noise": 1, "hygiene": 0}, "error": "",
		  "url": "/workspaces/prod-network",
		  "findings": [
		    {"kind": "drift", "address": "aws_autoscaling_group.web", "type": "aws_autoscaling_group", "action": "update",
		     "attributes": ["desired_capacity"], "seen_in": [], "ignored": true},
		    {"kind": "drift", "address": "aws_route53_record.api", "type": "aws_route53_record", "action": "update",
		     "attributes": ["ttl"], "seen_in": [], "ignored": false},
		    {"kind": "drift", "address": "aws_security_group.web", "type": "aws_security_group", "action": "update",
		     "attributes": ["ingress", "egress[0].cidr_blocks"], "seen_in": [], "ignored": false},
		    {"kind": "pending", "address": "aws_instance.bastion", "type": "aws_instance", "action": "update",
		     "attributes": ["tags.Owner"], "seen_in": [], "ignored": false},
		    {"kind": "noise", "address": "data.aws_ami.ubuntu", "type": "aws_ami", "action": "read",
		     "attributes": [], "seen_in": [], "ignored": false}
		  ],
		  "incidents": [
		    {"key": "dw-drift-prod-network-1", "class": "drift", "state": "open", "severity": "critical", "severity_rule": "sg-ingress",
		     "since": "2026-03-14T00:00:00Z", "notified_at": "2026-03-14T02:52:00Z", "findings": 1},
		    {"key": "dw-errored-prod-network-1", "class": "errored", "state": "pending", "severity": "low", "severity_rule": "",
		     "since": "2026-03-14T02:00:00Z", "findings": 0}
		  ]}`},
		{"forbidden", "/api/v1/workspaces/prod-k8s", http.StatusOK, `{
		  "name": "prod-k8s", "owner": "team-platform", "labels": {"env": "prod"}, "schedule": "@hourly",
		  "status": "forbidden", "since": "2026-03-13T01:00:00Z", "last_run_at": "2026-03-14T02:20:00Z",
		  "last_success_at": "2026-03-14T02:22:00Z", "next_run": "2026-03-14T03:20:00Z", "last_run_id": "run-k8s-1",
		  "consecutive_errors": 0, "counts": {"drift": 1, "pending": 0, "forbidden": 1, "noise": 0, "hygiene": 0}, "error": "",
		  "url": "/workspaces/prod-k8s",
		  "findings": [
		    {"kind": "forbidden", "address": "kubernetes_deployment.api[\"default\"]", "type": "kubernetes_deployment",
		     "action": "create", "attributes": [], "seen_in": ["config", "plan"], "ignored": false},
		    {"kind": "drift", "address": "helm_release.ingress", "type": "helm_release", "action": "update",
		     "attributes": ["values"], "seen_in": [], "ignored": false}
		  ], "incidents": []}`},
		{"never ran", "/api/v1/workspaces/new-service", http.StatusOK, `{
		  "name": "new-service", "owner": "team-web", "labels": {}, "schedule": "@hourly", "status": "unknown",
		  "since": null, "last_run_at": null, "last_success_at": null, "next_run": null, "last_run_id": "",
		  "consecutive_errors": 0, "counts": {"drift": 0, "pending": 0, "forbidden": 0, "noise": 0, "hygiene": 0}, "error": "",
		  "url": "/workspaces/new-service", "findings": [], "incidents": []}`},
		{"unknown", "/api/v1/workspaces/nope", http.StatusNotFound, `{"error": "unknown workspace"}`},
		{"stored but no longer configured", "/api/v1/workspaces/retired", http.StatusNotFound, `{"error": "unknown workspace"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, hdr, body := get(t, ts.URL+tt.path)
			requireJSON(t, tt.wantCode, tt.want, code, hdr, body)
		})
	}
}

const (
	wantRun4 = `{"id": "run-net-4", "workspace": "prod-network", "trigger": "schedule", "status": "running",
	  "started_at": "2026-03-14T02:59:30Z", "finished_at": null, "duration_seconds": null, "error": "", "tool": "",
	  "counts": {"drift": 0, "pending": 0, "forbidden": 0, "noise": 0, "hygiene": 0}}`
	wantRun3 = `{"id": "run-net-3", "workspace": "prod-network", "trigger": "manual", "status": "drift",
	  "started_at": "2026-03-14T02:50:00Z", "finished_at": "2026-03-14T02:52:00Z", "duration_seconds": 120,
	  "error": "", "tool": "terraform 1.11.4", "counts": {"drift": 2, "pending": 1, "forbidden": 0, "noise": 1, "hygiene": 0}}`
	wantRun2 = `{"id": "run-net-2", "workspace": "prod-network", "trigger": "schedule", "status": "errored",
	  "started_at": "2026-03-13T23:30:00Z", "finished_at": "2026-03-13T23:31:00Z", "duration_seconds": 60,
	  "error": "plan: timeout after 30m0s", "tool": "terraform 1.11.4", "counts": {"drift": 0, "pending": 0, "forbidden": 0, "noise": 0, "hygiene": 0}}`
	wantRun1 = `{"id": "run-net-1", "workspace": "prod-network", "trigger": "schedule", "status": "clean",
	  "started_at": "2026-03-13T23:00:00Z", "finished_at": "2026-03-13T23:01:35Z", "duration_seconds": 95,
	  "error": "", "tool": "terraform 1.11.4", "counts": {"drift": 0, "pending": 0, "forbidden": 0, "noise": 0, "hygiene": 0}}`
)

func TestListRuns(t *testing.T) {
	h := newHarness(t)
	ts := serve(t, h.options())
	all := `{"workspace": "prod-network", "runs": [` + wantRun4 + "," + wantRun3 + "," + wantRun2 + "," + wantRun1 + `]}`
	tests := []struct {
		name, query string
		wantCode    int
		want        string
		wantLimit   int // passed to the store; 0: not called
	}{
		{"default limit", "", http.StatusOK, all, api.DefaultRunsLimit},
		{"limit", "?limit=2", http.StatusOK, `{"workspace": "prod-network", "runs": [` + wantRun4 + "," + wantRun3 + `]}`, 2},
		{"limit capped", "?limit=100000", http.StatusOK, all, api.MaxRunsLimit},
		{"limit zero", "?limit=0", http.StatusBadRequest, `{"error": "limit must be a positive integer"}`, 0},
		{"limit negative", "?limit=-3", http.StatusBadRequest, `{"error": "limit must be a positive integer"}`, 0},
		{"limit not a number", "?limit=ten", http.StatusBadRequest, `{"error": "limit must be a positive integer"}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.store.mu.Lock()
			h.store.lastLimit = 0
			h.store.mu.Unlock()
			code, hdr, body := get(t, ts.URL+"/api/v1/workspaces/prod-network/runs"+tt.query)
			requireJSON(t, tt.wantCode, tt.want, code, hdr, body)
			h.store.mu.Lock()
			defer h.store.mu.Unlock()
			require.Equal(t, tt.wantLimit, h.store.lastLimit)
		})
	}
	t.Run("no runs yet", func(t *testing.T) {
		code, hdr, body := get(t, ts.URL+"/api/v1/workspaces/new-service/runs")
		requireJSON(t, http.StatusOK, `{"workspace": "new-service", "runs": []}`, code, hdr, body)
	})
	t.Run("unknown workspace", func(t *testing.T) {
		code, hdr, body := get(t, ts.URL+"/api/v1/workspaces/nope/runs")
		requireJSON(t, http.StatusNotFound, `{"error": "unknown workspace"}`, code, hdr, body)
	})
}

func TestGetRun(t *testing.T) {
	h := newHarness(t)
	ts := serve(t, h.options())
	tests := []struct {
		name, id string
		wantCode int
		want     string
	}{
		{"finished", "run-net-3", http.StatusOK, `{"id": "run-net-3", "workspace": "prod-network", "trigger": "manual",
		  "status": "drift", "started_at": "2026-03-14T02:50:00Z", "finished_at": "2026-03-14T02:52:00Z",
		  "duration_seconds": 120, "error": "", "tool": "terraform 1.11.4",
		  "counts": {"drift": 2, "pending": 1, "forbidden": 0, "noise": 1, "hygiene": 0},
		  "findings": [
		    {"kind": "drift", "address": "aws_autoscaling_group.web", "type": "aws_autoscaling_group", "action": "update",
		     "attributes": ["desired_capacity"], "seen_in": [], "ignored": true},
		    {"kind": "drift", "address": "aws_route53_record.api", "type": "aws_route53_record", "action": "update",
		     "attributes": ["ttl"], "seen_in": [], "ignored": false},
		    {"kind": "drift", "address": "aws_security_group.web", "type": "aws_security_group", "action": "update",
		     "attributes": ["ingress", "egress[0].cidr_blocks"], "seen_in": [], "ignored": false},
		    {"kind": "pending", "address": "aws_instance.bastion", "type": "aws_instance", "action": "update",
		     "attributes": ["tags.Owner"], "seen_in": [], "ignored": false},
		    {"kind": "noise", "address": "data.aws_ami.ubuntu", "type": "aws_ami", "action": "read",
		     "attributes": [], "seen_in": [], "ignored": false}
		  ],
		  "phases": [
		    {"name": "source", "duration_seconds": 0.25}, {"name": "init", "duration_seconds": 3},
		    {"name": "plan", "duration_seconds": 115}, {"name": "show", "duration_seconds": 1.5},
		    {"name": "classify", "duration_seconds": 0.002}
		  ],
		  "url": "/runs/run-net-3"}`},
		{"running", "run-net-4", http.StatusOK, `{"id": "run-net-4", "workspace": "prod-network", "trigger": "schedule",
		  "status": "running", "started_at": "2026-03-14T02:59:30Z", "finished_at": null, "duration_seconds": null,
		  "error": "", "tool": "", "counts": {"drift": 0, "pending": 0, "forbidden": 0, "noise": 0, "hygiene": 0},
		  "findings": [], "phases": [], "url": "/runs/run-net-4"}`},
		{"unknown", "run-nope", http.StatusNotFound, `{"error": "unknown run"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, hdr, body := get(t, ts.URL+"/api/v1/runs/"+tt.id)
			requireJSON(t, tt.wantCode, tt.want, code, hdr, body)
		})
	}
}

func TestStoreErrors(t *testing.T) {
	h := newHarness(t)
	h.store.err = errors.New("database is locked: /var/lib/driftwatch/state.db")
	ts := serve(t, h.options())
	for _, path := range []string{
		"/api/v1/workspaces", "/api/v1/workspaces/prod-network", "/api/v1/workspaces/prod-network/runs", "/api/v1/runs/run-net-1",
	} {
		t.Run(path, func(t *testing.T) {
			code, hdr, body := get(t, ts.URL+path)
			requireJSON(t, http.StatusInternalServerError, `{"error": "internal error (see the driftwatch log)"}`, code, hdr, body)
		})
	}
	for _, path := range []string{"/", "/workspaces/prod-network"} {
		t.Run(path, func(t *testing.T) {
			code, hdr, body := get(t, ts.URL+path)
			require.Equal(t, http.StatusInternalServerError, code)
			require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
			require.Contains(t, body, "Internal error")
			require.NotContains(t, body, "database is locked", "store errors stay in the log")
		})
	}
	require.Contains(t, h.logs.String(), "database is locked")
}

func TestUnknownPaths(t *testing.T) {
	ts := serve(t, newHarness(t).options())
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/nope", http.StatusNotFound},
		{http.MethodGet, "/api/v1/nope", http.StatusNotFound},
		{http.MethodDelete, "/api/v1/workspaces/prod-network", http.StatusMethodNotAllowed},
		{http.MethodPut, "/api/v1/workspaces/prod-network/runs", http.StatusMethodNotAllowed},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			code, _, _ := do(t, tt.method, ts.URL+tt.path, nil)
			require.Equal(t, tt.want, code)
		})
	}
}

func TestNotifiers(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	ts := serve(t, o)
	code, _, body := get(t, ts.URL+"/api/v1/notifiers")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"notifiers":[]}`, body, "no notifiers configured")

	now := o.Now()
	old := now.Add(-20 * time.Minute)
	h.setNotifiers(func(context.Context) ([]NotifierStatus, error) {
		return []NotifierStatus{
			{Name: "slack-oncall", Pending: 3, LastError: "slack: ratelimited", OldestPending: &old},
			{Name: "hook"},
		}, nil
	})
	o.Handlers = map[string]http.Handler{"POST /internal/v1/ping": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})}
	ts = serve(t, o)
	code, _, body = get(t, ts.URL+"/api/v1/notifiers")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"notifiers":[
	  {"name":"hook","pending":0,"dead":0,"last_error":"","oldest_pending":null},
	  {"name":"slack-oncall","pending":3,"dead":0,"last_error":"slack: ratelimited","oldest_pending":"`+old.UTC().Format(time.RFC3339Nano)+`"}]}`, body)

	code, _, page := get(t, ts.URL+"/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, `id="notifier-slack-oncall"`)
	require.Regexp(t, `(?s)id="notifier-slack-oncall".*failing.*slack: ratelimited`, page, "a notifier stuck for 20m is flagged")
	require.NotRegexp(t, `(?s)id="notifier-hook"[^/]*failing`, page)

	code, _, _ = do(t, http.MethodPost, ts.URL+"/internal/v1/ping", nil)
	require.Equal(t, http.StatusTeapot, code, "extra handlers are mounted")
}
