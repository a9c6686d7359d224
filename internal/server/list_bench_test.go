package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// benchWorkspaces is how many workspaces the list benchmarks configure:
// the size an organisation reaches (issue 19's target).
const benchWorkspaces = 1000

// benchHost is the listen address the benchmarks' requests name (the
// Host allowlist admits it); nothing listens there.
const benchHost = "127.0.0.1:8080"

// benchStatuses spreads statuses the way a large estate looks: mostly
// clean, a tail of drift, pending changes and failures, some never run
// (view.StatusUnknown: no state stored).
var benchStatuses = []struct {
	status drift.Status
	per1k  int
}{
	{drift.StatusErrored, 40}, {drift.StatusForbidden, 20}, {drift.StatusDrift, 120},
	{drift.StatusValidation, 20}, {drift.StatusPending, 80}, {view.StatusUnknown, 50}, {drift.StatusClean, 670},
}

// benchServer is a Server over a real SQLite store holding the latest
// finished run of n workspaces (25 owners, env/region/tier labels,
// drift and pending findings, ages from minutes to weeks), with the
// fixture's Control. It is built once per benchmark, outside the timer.
func benchServer(b testing.TB, n int) http.Handler {
	b.Helper()
	st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, st.Close()) })

	envs := []string{"prod", "staging", "dev"}
	regions := []string{"eu-west-1", "us-east-1", "us-west-2", "ap-south-1", "eu-central-1"}
	tiers := []string{"network", "data", "compute", "edge"}
	var infos []WorkspaceInfo
	i := 0
	for _, bs := range benchStatuses {
		for range bs.per1k * n / 1000 {
			name := fmt.Sprintf("ws-%04d-%s", i, tiers[i%len(tiers)])
			infos = append(infos, WorkspaceInfo{
				Name: name, Owner: fmt.Sprintf("team-%02d", i%25), Schedule: "@hourly",
				Labels:  map[string]string{"env": envs[i%len(envs)], "region": regions[i%len(regions)], "tier": tiers[i%len(tiers)]},
				NextRun: testNow.Add(time.Duration(i%60) * time.Minute),
			})
			if bs.status != view.StatusUnknown {
				benchRun(b, st, name, bs.status, i)
			}
			i++
		}
	}
	h := &harness{store: newFakeStore(), logs: &syncBuffer{}, reg: prometheus.NewRegistry(), workspaces: infos}
	o := h.options()
	o.Store = st
	o.Incidents = st
	o.Logger = slog.New(slog.DiscardHandler)
	o.Config.Listen = benchHost
	s, err := New(o)
	require.NoError(b, err)
	return s.Handler()
}

// benchRun stores one finished run of a workspace, started i·7 minutes
// before testNow (so the ages spread over about five days).
func benchRun(b testing.TB, st *sqlite.Store, name string, status drift.Status, i int) {
	b.Helper()
	at := testNow.Add(-time.Duration(i*7) * time.Minute)
	var fs []drift.Finding
	switch status {
	case drift.StatusDrift, drift.StatusForbidden, drift.StatusPending:
		kind := map[drift.Status]drift.Kind{drift.StatusDrift: drift.KindDrift, drift.StatusForbidden: drift.KindForbidden, drift.StatusPending: drift.KindPending}[status]
		for j := range 1 + i%12 {
			fs = append(fs, drift.Finding{
				Kind: kind, Address: fmt.Sprintf("aws_security_group.sg_%d", j), Type: "aws_security_group",
				Action: "update", Attributes: []string{"ingress", "tags.Owner"},
			})
		}
	}
	id := fmt.Sprintf("run-%04d", i)
	require.NoError(b, st.StartRun(b.Context(), store.Run{ID: id, Workspace: name, Trigger: "schedule", StartedAt: at}))
	r := store.Run{ID: id, FinishedAt: at.Add(time.Minute), Status: status, Findings: fs}
	if status == drift.StatusErrored {
		r.Error = "plan: exit status 1: Error: timeout while waiting for state lock"
	}
	_, _, err := st.FinishRun(b.Context(), r)
	require.NoError(b, err)
}

// benchGetTB serves path on h in memory (server time only, no network)
// and fails unless it answers 200.
func benchGetTB(tb testing.TB, h http.Handler, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(tb.Context(), http.MethodGet, path, nil)
	req.Host = benchHost
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET %s: %d: %.300s", path, rec.Code, rec.Body.String())
	}
	return rec
}

func benchGet(b *testing.B, h http.Handler, path string) { benchGetTB(b, h, path) }

// BenchmarkStatusPage1000 renders the status page of 1,000 workspaces:
// page 1 as it opens, and a filtered page. Issue 19's goal is under
// 200 ms a render; the benchmark reports, no test asserts a time.
func BenchmarkStatusPage1000(b *testing.B) {
	h := benchServer(b, benchWorkspaces)
	for _, path := range []string{"/", "/?status=drift&label=env%3Dprod&q=network&page=2", "/?owner=team-03"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchGet(b, h, path)
			}
		})
	}
}

// BenchmarkAPIWorkspaces1000 lists 1,000 workspaces through the API:
// all of them (no parameters, the answer before paging) and one page.
func BenchmarkAPIWorkspaces1000(b *testing.B) {
	h := benchServer(b, benchWorkspaces)
	for _, path := range []string{"/api/v1/workspaces", "/api/v1/workspaces?per_page=100&page=3", "/api/v1/workspaces?status=drift&q=network"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchGet(b, h, path)
			}
		})
	}
}
