package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTriggerAuth(t *testing.T) {
	const url = "/api/v1/workspaces/prod-network/runs"
	tests := []struct {
		name      string
		tokenFile bool // configure a token file holding testToken
		auth      string
		wantCode  int
		want      string
	}{
		{"no token configured", false, "Bearer " + testToken, http.StatusForbidden,
			`{"error": "mutating endpoints are disabled: no API token is configured on this driftwatch"}`},
		{"no token configured, no header", false, "", http.StatusForbidden,
			`{"error": "mutating endpoints are disabled: no API token is configured on this driftwatch"}`},
		{"missing header", true, "", http.StatusUnauthorized, `{"error": "missing bearer token"}`},
		{"empty bearer", true, "Bearer ", http.StatusUnauthorized, `{"error": "missing bearer token"}`},
		{"wrong scheme", true, "Basic " + testToken, http.StatusUnauthorized, `{"error": "missing bearer token"}`},
		{"wrong token", true, "Bearer nope", http.StatusUnauthorized, `{"error": "invalid bearer token"}`},
		{"token prefix", true, "Bearer " + testToken[:5], http.StatusUnauthorized, `{"error": "invalid bearer token"}`},
		{"token with suffix", true, "Bearer " + testToken + "x", http.StatusUnauthorized, `{"error": "invalid bearer token"}`},
		{"right token", true, "Bearer " + testToken, http.StatusAccepted,
			`{"workspace": "prod-network", "run_id": "run-prod-network-q1", "status": "queued"}`},
		{"scheme is case-insensitive", true, "bearer " + testToken, http.StatusAccepted,
			`{"workspace": "prod-network", "run_id": "run-prod-network-q1", "status": "queued"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			o := h.options()
			if tt.tokenFile {
				o.Config.TokenFile = writeToken(t, testToken+"\n")
			}
			ts := serve(t, o)
			hdr := map[string]string{}
			if tt.auth != "" {
				hdr["Authorization"] = tt.auth
			}
			code, rh, body := do(t, http.MethodPost, ts.URL+url, hdr)
			requireJSON(t, tt.wantCode, tt.want, code, rh, body)
			if tt.wantCode == http.StatusUnauthorized {
				require.Equal(t, `Bearer realm="driftwatch"`, rh.Get("WWW-Authenticate"))
			}
			if tt.wantCode == http.StatusAccepted {
				require.Equal(t, []string{"prod-network"}, h.triggeredNames())
				require.Equal(t, "/api/v1/runs/run-prod-network-q1", rh.Get("Location"))
			} else {
				require.Empty(t, h.triggeredNames(), "no run may be queued without authorization")
			}
			require.NotContains(t, body, testToken)
			require.NotContains(t, h.logs.String(), testToken)
		})
	}
}

func TestTriggerOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		workspace  string
		triggerErr error
		wantCode   int
		want       string
	}{
		{"queued", "billing-db", nil, http.StatusAccepted, `{"workspace": "billing-db", "run_id": "run-billing-db-q1", "status": "queued"}`},
		{"not configured", "nope", nil, http.StatusNotFound, `{"error": "unknown workspace"}`},
		{"unknown to the scheduler", "billing-db", fmt.Errorf("trigger %q: %w", "billing-db", errUnknown), http.StatusNotFound, `{"error": "unknown workspace"}`},
		{"busy", "billing-db", fmt.Errorf("trigger %q: %w", "billing-db", errBusy), http.StatusConflict,
			`{"error": "a run of this workspace is already queued or running", "run_id": "run-billing-db-inflight"}`},
		{"busy with a run the api does not show", "billing-db", &BusyError{Err: errBusy}, http.StatusConflict,
			`{"error": "a run of this workspace is already queued or running"}`},
		{"standby", "billing-db", errStandby, http.StatusServiceUnavailable, `{"error": "not scheduling: a standby"}`},
		{"scheduler stopped", "billing-db", fmt.Errorf("scheduler is shutting down"), http.StatusInternalServerError,
			`{"error": "internal error (see the driftwatch log)"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.setTriggerErr(tt.triggerErr)
			o := h.options()
			o.Config.TokenFile = writeToken(t, testToken)
			ts := serve(t, o)
			code, rh, body := do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/"+tt.workspace+"/runs",
				map[string]string{"Authorization": "Bearer " + testToken})
			requireJSON(t, tt.wantCode, tt.want, code, rh, body)
		})
	}
}

func TestTokenRotation(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Config.TokenFile = writeToken(t, "old-token")
	ts := serve(t, o)
	post := func(tok string) int {
		code, _, _ := do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", map[string]string{"Authorization": "Bearer " + tok})
		return code
	}
	require.Equal(t, http.StatusAccepted, post("old-token"))

	require.NoError(t, os.WriteFile(o.Config.TokenFile, []byte("new-token\n"), 0o600))
	require.Equal(t, http.StatusUnauthorized, post("old-token"))
	require.Equal(t, http.StatusAccepted, post("new-token"))

	// A token file that vanishes or empties fails closed, never open.
	require.NoError(t, os.WriteFile(o.Config.TokenFile, nil, 0o600))
	code, rh, body := do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", map[string]string{"Authorization": "Bearer "})
	requireJSON(t, http.StatusInternalServerError, `{"error": "the API token is unavailable (see the driftwatch log)"}`, code, rh, body)
	require.NoError(t, os.Remove(o.Config.TokenFile))
	require.Equal(t, http.StatusInternalServerError, post("new-token"))
	require.Contains(t, h.logs.String(), "token file is empty")
	require.Equal(t, []string{"sandbox", "sandbox"}, h.triggeredNames())
	require.NotContains(t, h.logs.String(), "new-token")
	require.NotContains(t, h.logs.String(), "old-token")
}

func TestBearer(t *testing.T) {
	tests := []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"Bearer  abc ", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic abc", "", false},
		{"", "", false},
		{"abc", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			got, ok := bearer(tt.header)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestAccessLog(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Config.TokenFile = writeToken(t, testToken)
	o.Config.AllowedHosts = []string{"example.com"} // httptest.NewRequest's Host
	s, err := New(o)
	require.NoError(t, err)

	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/workspaces/sandbox/runs?secret=query-canary", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusAccepted, rec.Code)

	req = httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/workspaces/nope?limit=3", nil)
	req.Header.Set("Authorization", "Bearer wrong-canary")
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusNotFound, rec.Code)

	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/healthz", nil))

	logs := h.logs.String()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	var access []string
	for _, l := range lines {
		if strings.Contains(l, `msg="http request"`) {
			access = append(access, l)
		}
	}
	require.Len(t, access, 3, logs)
	require.Contains(t, access[0], `level=INFO msg="http request" method=POST path=/api/v1/workspaces/sandbox/runs status=202 bytes=`)
	require.Contains(t, access[0], " duration=0s")
	require.Contains(t, access[1], `level=INFO msg="http request" method=GET path=/api/v1/workspaces/nope status=404`)
	require.Contains(t, access[2], `level=DEBUG msg="http request" method=GET path=/healthz status=200`)
	for _, canary := range []string{"query-canary", "limit=3", "wrong-canary", testToken, "Bearer", "Authorization"} {
		require.NotContains(t, logs, canary)
	}
}
