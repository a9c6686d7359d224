package app

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runner/remote"
)

// In kubernetes mode the run pods' result and proceed routes are served by
// the callback server alone, on runner.kubernetes.callback_listen: the main
// server (API, status page, metrics) answers them 404, and the callback
// server answers nothing else.
func TestCallbackOwnListener(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, "off", "off")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`server: { listen: "127.0.0.1:8080" }
runner:
  mode: kubernetes
  kubernetes:
    kubeconfig: ` + kubeconfig + `
    namespace: runs
    image: driftwatch:test
    callback_url: http://driftwatch.dw.svc:8081
    callback_listen: 127.0.0.1:18081
`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	d := newTestDaemon(t, path, nil, nil)
	require.NotNil(t, d.kube)
	require.Equal(t, "127.0.0.1:18081", d.kube.Listen)
	srv, err := d.server(d.inv.Config())
	require.NoError(t, err)
	do := func(h http.Handler, method, path string) int {
		req := httptest.NewRequestWithContext(t.Context(), method, "http://driftwatch.dw.svc"+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer not-a-run-token")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	callback := d.kube.Callback.Handler()
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, remote.ResultPath("run-1")},
		{http.MethodGet, remote.ProceedPath("run-1")},
	} {
		require.Equal(t, http.StatusNotFound, do(srv.Handler(), r.method, r.path), "main server: %s %s", r.method, r.path)
		require.Equal(t, http.StatusForbidden, do(callback, r.method, r.path), "callback server: %s %s (an unknown run)", r.method, r.path)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/"}, {http.MethodGet, "/healthz"}, {http.MethodGet, "/metrics"},
		{http.MethodGet, "/api/v1/workspaces"}, {http.MethodPost, "/api/v1/workspaces/net/runs"},
		{http.MethodGet, "/api/v1/status"},
	} {
		require.NotEqual(t, http.StatusNotFound, do(srv.Handler(), r.method, r.path), "main server: %s %s", r.method, r.path)
		require.Equal(t, http.StatusNotFound, do(callback, r.method, r.path), "callback server: %s %s", r.method, r.path)
	}
}
