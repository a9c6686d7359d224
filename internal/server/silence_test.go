package server

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/server/api"
	"github.com/driftwatch/driftwatch/internal/store"
)

// silenceFixture is what on-call finds at 3 am: prod-network silenced by
// alice for a migration, a scheduled silence of staging by labels, one
// that has ended, the weekly patching window of prod-* on now and a
// nightly window of tier=network off.
func silenceFixture(h *harness) {
	h.setSilences([]store.Silence{
		{ID: "sil-db", Workspace: "prod-network", StartsAt: testNow.Add(-time.Hour), EndsAt: testNow.Add(3 * time.Hour),
			Comment: "DB migration, CHG-1234", CreatedBy: "alice", CreatedAt: testNow.Add(-time.Hour)},
		{ID: "sil-stg", Labels: map[string]string{"env": "staging"}, StartsAt: testNow.Add(2 * time.Hour), EndsAt: testNow.Add(6 * time.Hour),
			Comment: "load test <script>", CreatedBy: "bob", CreatedAt: testNow.Add(-10 * time.Minute)},
		{ID: "sil-old", Workspace: "sandbox", StartsAt: testNow.Add(-5 * time.Hour), EndsAt: testNow.Add(-time.Hour),
			Comment: "over", CreatedBy: "carol", CreatedAt: testNow.Add(-5 * time.Hour)},
	}, []MaintenanceWindow{
		{Name: "weekly-patching", Workspaces: []string{"prod-*"}, Schedule: "0 2 * * 6", TimeZone: "Europe/Berlin",
			Duration: 2 * time.Hour, Active: true, Ends: testNow.Add(time.Hour), NextStart: testNow.Add(7*24*time.Hour - time.Hour)},
		{Name: "nightly-network", Labels: map[string]string{"tier": "network"}, Schedule: "0 23 * * *", TimeZone: "UTC",
			Duration: 30 * time.Minute, NextStart: testNow.Add(20 * time.Hour)},
	})
}

// send sends a request with a body and returns the status, headers and
// body of the answer.
func send(t *testing.T, method, url string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
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

// serveSilences serves the fixture with silences and the API token.
func serveSilences(t *testing.T) (*harness, string) {
	h := newHarness(t)
	silenceFixture(h)
	o := h.options()
	o.Config.TokenFile = writeToken(t, testToken)
	o.Config.ReadTokenFile = writeToken(t, testReadToken)
	return h, serve(t, o).URL
}

// GET /api/v1/silences lists the silences that have not ended and the
// windows with their state, without a credential (like the other reads).
func TestAPISilences(t *testing.T) {
	_, base := serveSilences(t)
	code, hdr, body := get(t, base+"/api/v1/silences")
	requireJSON(t, http.StatusOK, `{
	  "silences": [
	    {"id": "sil-db", "workspace": "prod-network", "labels": {}, "starts_at": "2026-03-14T02:00:00Z", "ends_at": "2026-03-14T06:00:00Z",
	     "comment": "DB migration, CHG-1234", "created_by": "alice", "created_at": "2026-03-14T02:00:00Z", "active": true},
	    {"id": "sil-stg", "workspace": "", "labels": {"env": "staging"}, "starts_at": "2026-03-14T05:00:00Z", "ends_at": "2026-03-14T09:00:00Z",
	     "comment": "load test <script>", "created_by": "bob", "created_at": "2026-03-14T02:50:00Z", "active": false}
	  ],
	  "maintenance_windows": [
	    {"name": "weekly-patching", "workspaces": ["prod-*"], "labels": {}, "schedule": "0 2 * * 6", "time_zone": "Europe/Berlin",
	     "duration": "2h0m0s", "active": true, "ends": "2026-03-14T04:00:00Z", "next_start": "2026-03-21T02:00:00Z"},
	    {"name": "nightly-network", "workspaces": [], "labels": {"tier": "network"}, "schedule": "0 23 * * *", "time_zone": "UTC",
	     "duration": "30m0s", "active": false, "ends": null, "next_start": "2026-03-14T23:00:00Z"}
	  ]
	}`, code, hdr, body)

	h := newHarness(t)
	code, hdr, body = get(t, serve(t, h.options()).URL+"/api/v1/silences")
	requireJSON(t, http.StatusOK, `{"silences": [], "maintenance_windows": []}`, code, hdr, body)

	h.setSilenceErr(errors.New("sqlite: database is locked at /var/lib/driftwatch/dw.db"))
	code, hdr, body = get(t, serve(t, h.options()).URL+"/api/v1/silences")
	requireJSON(t, http.StatusInternalServerError, `{"error": "internal error (see the driftwatch log)"}`, code, hdr, body)
	require.Contains(t, h.logs.String(), "database is locked")
}

// POST /api/v1/silences with the API token: 201 with the silence as the
// daemon stored it; the request reaches the daemon as sent, except
// created_by: the token that authenticated it, with the name the client
// claims marked as a claim (a token holder cannot pass for anyone).
func TestAPIAddSilence(t *testing.T) {
	h, base := serveSilences(t)
	code, hdr, body := send(t, http.MethodPost, base+"/api/v1/silences", bearerAuth(testToken),
		`{"workspace": "billing-db", "for": "4h", "comment": " restoring a snapshot ", "created_by": "dave"}`)
	requireJSON(t, http.StatusCreated, `{"id": "sil-1", "workspace": "billing-db", "labels": {}, "starts_at": "2026-03-14T03:00:00Z",
	  "ends_at": "2026-03-14T07:00:00Z", "comment": "restoring a snapshot", "created_by": "token:api (claimed: dave)", "created_at": "2026-03-14T03:00:00Z", "active": true}`,
		code, hdr, body)

	code, hdr, body = send(t, http.MethodPost, base+"/api/v1/silences", bearerAuth(testToken),
		`{"labels": {"env": "prod"}, "for": "90m", "starts_at": "2026-03-14T22:00:00+01:00", "comment": "game day"}`)
	requireJSON(t, http.StatusCreated, `{"id": "sil-2", "workspace": "", "labels": {"env": "prod"}, "starts_at": "2026-03-14T21:00:00Z",
	  "ends_at": "2026-03-14T22:30:00Z", "comment": "game day", "created_by": "token:api", "created_at": "2026-03-14T03:00:00Z", "active": false}`,
		code, hdr, body)

	added, _ := h.silenceCalls()
	require.Equal(t, []SilenceRequest{
		{Workspace: "billing-db", For: 4 * time.Hour, Comment: "restoring a snapshot", CreatedBy: "token:api (claimed: dave)"},
		{Labels: map[string]string{"env": "prod"}, For: 90 * time.Minute, Comment: "game day", CreatedBy: "token:api",
			StartsAt: time.Date(2026, 3, 14, 22, 0, 0, 0, time.FixedZone("", 3600))},
	}, normalizeStarts(added))
	require.Contains(t, h.logs.String(), `msg="silence added through the api" silence=sil-1 workspace=billing-db`)

	// The new silence is listed.
	_, _, body = get(t, base+"/api/v1/silences")
	require.Contains(t, body, `"id": "sil-1"`)
}

// normalizeStarts makes StartsAt comparable with require.Equal: the same
// instant in a zone without a name.
func normalizeStarts(rs []SilenceRequest) []SilenceRequest {
	for i := range rs {
		if !rs[i].StartsAt.IsZero() {
			_, off := rs[i].StartsAt.Zone()
			rs[i].StartsAt = rs[i].StartsAt.In(time.FixedZone("", off))
		}
	}
	return rs
}

// A refused silence names the field or the daemon's reason; nothing that
// fails the shape reaches the daemon; an internal error shows no detail.
func TestAPIAddSilenceErrors(t *testing.T) {
	for _, c := range []struct {
		name, body string
		daemonErr  error
		code       int
		want       string
		reached    bool
	}{
		{"unknown field", `{"workspace": "sandbox", "for": "4h", "comment": "x", "until": "tomorrow"}`, nil, 400,
			`body must be a JSON silence: unknown field "until"`, false},
		{"wrong type", `{"workspace": "sandbox", "for": 4, "comment": "x"}`, nil, 400,
			`body must be a JSON silence: for has the wrong type (want a string)`, false},
		{"labels wrong type", `{"labels": ["env=prod"], "for": "4h", "comment": "x"}`, nil, 400,
			`body must be a JSON silence: labels has the wrong type (want an object of strings)`, false},
		{"not json", `workspace=sandbox`, nil, 400, `body must be a JSON silence: malformed JSON`, false},
		{"empty", ``, nil, 400, `body must be a JSON silence: empty body`, false},
		{"two objects", `{"workspace": "sandbox", "for": "4h", "comment": "x"} {}`, nil, 400, `body must be one JSON object`, false},
		{"bad duration", `{"workspace": "sandbox", "for": "4 hours", "comment": "x"}`, nil, 400,
			`for "4 hours" must be a positive duration, e.g. "4h" or "90m"`, false},
		{"negative duration", `{"workspace": "sandbox", "for": "-1h", "comment": "x"}`, nil, 400,
			`for "-1h" must be a positive duration, e.g. "4h" or "90m"`, false},
		{"no duration, no comment", `{"workspace": "sandbox"}`, nil, 400,
			"for is required: how long the silence lasts, e.g. \"4h\"\ncomment is required: why notifications are held", false},
		{"bad start", `{"workspace": "sandbox", "for": "4h", "comment": "x", "starts_at": "tonight"}`, nil, 400,
			`starts_at "tonight" must be an RFC 3339 time, e.g. "2026-03-14T22:00:00Z"`, false},
		{"nothing matched", `{"for": "4h", "comment": "x"}`, nil, 400, `workspace or labels is required`, false},
		{"both", `{"workspace": "sandbox", "labels": {"env": "prod"}, "for": "4h", "comment": "x"}`, nil, 400,
			`workspace and labels are exclusive: a silence matches one workspace, or every workspace with all the labels`, false},
		{"empty label key", `{"labels": {"": "prod"}, "for": "4h", "comment": "x"}`, nil, 400, `labels: a label key must not be empty`, false},
		{"unknown workspace", `{"workspace": "nope", "for": "4h", "comment": "x"}`, nil, 404, `unknown workspace`, true},
		{"refused by the daemon", `{"workspace": "sandbox", "for": "800h", "comment": "x"}`,
			&SilenceError{Reason: "for 800h0m0s is longer than the longest silence, 168h"}, 400, `for 800h0m0s is longer than the longest silence, 168h`, true},
		{"standby", `{"workspace": "sandbox", "for": "4h", "comment": "x"}`, errStandby, 503, `not scheduling: a standby`, true},
		{"store failure", `{"workspace": "sandbox", "for": "4h", "comment": "x"}`, errors.New("sqlite: disk I/O error at /var/lib/dw.db"), 500,
			`internal error (see the driftwatch log)`, true},
		{"too large", `{"workspace": "sandbox", "for": "4h", "comment": "` + strings.Repeat("x", api.MaxSilenceBody) + `"}`, nil, 413,
			`body is larger than 65536 bytes`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, base := serveSilences(t)
			h.setSilenceErr(c.daemonErr)
			code, hdr, body := send(t, http.MethodPost, base+"/api/v1/silences", bearerAuth(testToken), c.body)
			requireJSON(t, c.code, `{"error": `+jsonString(c.want)+`}`, code, hdr, body)
			added, _ := h.silenceCalls()
			require.Equal(t, c.reached, len(added) == 1, "reached the daemon")
			require.NotContains(t, body, "sqlite")
		})
	}
}

func jsonString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// Creating and expiring a silence are mutating calls: the API token as a
// bearer token and nothing else, as for triggering a run; no call
// reaches the daemon otherwise.
func TestSilenceMutationsNeedToken(t *testing.T) {
	const body = `{"workspace": "sandbox", "for": "4h", "comment": "x"}`
	calls := []struct{ method, path string }{
		{http.MethodPost, "/api/v1/silences"},
		{http.MethodDelete, "/api/v1/silences/sil-db"},
	}
	for _, hdr := range []map[string]string{nil, bearerAuth("wrong"), bearerAuth(testReadToken), basicAuth(testToken)} {
		h, base := serveSilences(t)
		for _, c := range calls {
			code, rh, got := send(t, c.method, base+c.path, hdr, body)
			if hdr["Authorization"] == "Bearer "+testReadToken {
				// Authenticated, but a viewer: 403.
				require.Equal(t, http.StatusForbidden, code, "%s %s: %s", c.method, c.path, got)
				continue
			}
			require.Equal(t, http.StatusUnauthorized, code, "%s %s %v: %s", c.method, c.path, hdr, got)
			require.Equal(t, `Bearer realm="driftwatch"`, rh.Get("WWW-Authenticate"))
		}
		added, expired := h.silenceCalls()
		require.Empty(t, added)
		require.Empty(t, expired)
	}
	// No API token configured: mutating endpoints are disabled.
	h := newHarness(t)
	base := serve(t, h.options()).URL
	for _, c := range calls {
		code, hdr, got := send(t, c.method, base+c.path, bearerAuth(testToken), body)
		requireJSON(t, http.StatusForbidden, `{"error": "mutating endpoints are disabled: no API token is configured on this driftwatch"}`, code, hdr, got)
	}
	added, expired := h.silenceCalls()
	require.Empty(t, added)
	require.Empty(t, expired)
}

// DELETE /api/v1/silences/{id} ends the silence now: 200 with it, no
// longer active; the daemon learns who; an unknown id is 404.
func TestAPIExpireSilence(t *testing.T) {
	h, base := serveSilences(t)
	code, hdr, body := send(t, http.MethodDelete, base+"/api/v1/silences/sil-db?by=erin", bearerAuth(testToken), "")
	requireJSON(t, http.StatusOK, `{"id": "sil-db", "workspace": "prod-network", "labels": {}, "starts_at": "2026-03-14T02:00:00Z",
	  "ends_at": "2026-03-14T03:00:00Z", "comment": "DB migration, CHG-1234", "created_by": "alice", "created_at": "2026-03-14T02:00:00Z", "active": false}`,
		code, hdr, body)
	code, hdr, body = send(t, http.MethodDelete, base+"/api/v1/silences/nope", bearerAuth(testToken), "")
	requireJSON(t, http.StatusNotFound, `{"error": "unknown silence"}`, code, hdr, body)
	_, expired := h.silenceCalls()
	require.Equal(t, []string{"sil-db token:api (claimed: erin)", "nope token:api"}, expired)
	_, _, body = get(t, base+"/api/v1/silences")
	require.NotContains(t, body, "sil-db")

	h.setSilenceErr(errStandby)
	code, hdr, body = send(t, http.MethodDelete, base+"/api/v1/silences/sil-stg", bearerAuth(testToken), "")
	requireJSON(t, http.StatusServiceUnavailable, `{"error": "not scheduling: a standby"}`, code, hdr, body)
}

// A daemon without silences answers 501 on every silence endpoint (after
// the token check for mutating ones), and the page says so.
func TestSilencesUnavailable(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Control = struct{ Control }{h}
	o.Config.TokenFile = writeToken(t, testToken)
	base := serve(t, o).URL
	want := `{"error": "silences are not available on this driftwatch"}`
	code, hdr, body := get(t, base+"/api/v1/silences")
	requireJSON(t, http.StatusNotImplemented, want, code, hdr, body)
	code, hdr, body = send(t, http.MethodPost, base+"/api/v1/silences", bearerAuth(testToken), `{}`)
	requireJSON(t, http.StatusNotImplemented, want, code, hdr, body)
	code, hdr, body = send(t, http.MethodDelete, base+"/api/v1/silences/x", bearerAuth(testToken), ``)
	requireJSON(t, http.StatusNotImplemented, want, code, hdr, body)
	code, _, body = send(t, http.MethodDelete, base+"/api/v1/silences/x", nil, ``)
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, _, body = get(t, base+"/silences")
	require.Equal(t, http.StatusNotImplemented, code)
	require.Contains(t, body, "Silences are not available on this driftwatch.")
}

// The silences page shows what holds notifications now and why, every
// silence with who, why and until, and every window's state; under the
// same strict CSP as every page, with the comments escaped.
func TestSilencesPage(t *testing.T) {
	_, base := serveSilences(t)
	code, hdr, body := get(t, base+"/silences")
	require.Equal(t, http.StatusOK, code, body)
	_, statusHdr, _ := get(t, base+"/")
	require.Equal(t, statusHdr.Get("Content-Security-Policy"), hdr.Get("Content-Security-Policy"))
	require.Contains(t, hdr.Get("Content-Security-Policy"), "default-src 'none'; style-src 'sha256-")
	require.NotContains(t, hdr.Get("Content-Security-Policy"), "script-src")
	require.NotContains(t, body, "<script")
	require.NotContains(t, body, " style=")
	require.Contains(t, body, "load test &lt;script&gt;")

	// Held now: prod-network (alice's silence, chained with the window)
	// and prod-k8s (the window), soonest release first.
	require.Contains(t, body, `<h2 id="held">Held now <small>2 workspaces</small></h2>`)
	k8s, net := strings.Index(body, `id="held-prod-k8s"`), strings.Index(body, `id="held-prod-network"`)
	require.True(t, k8s > 0 && net > k8s, "prod-k8s (held 1h) before prod-network (held 3h)")
	require.Contains(t, rowOf(t, body, "held-prod-network"),
		`<time datetime="2026-03-14T06:00:00Z" title="2026-03-14 06:00:00 UTC">in 3h</time>`)
	require.Contains(t, rowOf(t, body, "held-prod-network"),
		`silence by alice: DB migration, CHG-1234; maintenance window weekly-patching`)
	require.Contains(t, rowOf(t, body, "held-prod-k8s"), `in 1h</time>`)
	require.Contains(t, rowOf(t, body, "held-prod-k8s"), `maintenance window weekly-patching`)

	db := rowOf(t, body, "silence-sil-db")
	for _, want := range []string{`>active</span>`, `<a href="/workspaces/prod-network">prod-network</a>`, `>alice<`, `DB migration, CHG-1234`,
		`title="2026-03-14 02:00:00 UTC">1h ago</time>`, `title="2026-03-14 06:00:00 UTC">in 3h</time>`} {
		require.Contains(t, db, want)
	}
	stg := rowOf(t, body, "silence-sil-stg")
	for _, want := range []string{`>scheduled</span>`, `<span class="label">env=staging</span>`, `1 workspace: staging-web`, `>bob<`,
		`in 2h</time>`, `in 6h</time>`} {
		require.Contains(t, stg, want)
	}
	require.NotContains(t, body, "sil-old")

	patch := rowOf(t, body, "window-weekly-patching")
	require.Contains(t, patch, `on, ends <time datetime="2026-03-14T04:00:00Z" title="2026-03-14 04:00:00 UTC">in 1h</time>`)
	require.Contains(t, patch, `2 workspaces: prod-k8s, prod-network`)
	require.Contains(t, patch, `<code>0 2 * * 6</code> <span class="muted small">Europe/Berlin</span>`)
	night := rowOf(t, body, "window-nightly-network")
	require.Contains(t, night, `starts <time datetime="2026-03-14T23:00:00Z" title="2026-03-14 23:00:00 UTC">in 20h</time>`)
	require.Contains(t, night, `1 workspace: prod-network`)
	require.Contains(t, patch, `<td class="nowrap">2h</td>`)
	require.Contains(t, night, `<td class="nowrap">30m</td>`)

	// Every page links it.
	_, _, status := get(t, base+"/")
	require.Contains(t, status, `<a href="/silences">Silences</a>`)
}

func TestSilencesPageEmpty(t *testing.T) {
	h := newHarness(t)
	code, _, body := get(t, serve(t, h.options()).URL+"/silences")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No workspace's notifications are held")
	require.Contains(t, body, "No silences.")
	require.Contains(t, body, "No maintenance windows are configured.")
}
