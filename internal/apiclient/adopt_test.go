package apiclient_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/apiclient"
)

// Adopt: the exact request (the API token, the findings as JSON) and the
// adoption answered; a running adoption of the scan is ErrConflict.
func TestAdopt(t *testing.T) {
	var got request
	answer, code := `{"scan": "files", "findings": ["f[a]"], "state": "proven", "proven": true, "file": "import {}", "file_name": "driftwatch_adopt.tf"}`, http.StatusOK
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = request{Method: r.Method, URI: r.RequestURI, Authorization: r.Header.Get("Authorization"), Accept: r.Header.Get("Accept"),
			ContentType: r.Header.Get("Content-Type"), Body: string(b)}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(ts.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(apiToken+"\n"), 0o600))
	c := apiclient.New(ts.URL, tokenFile, nil)

	a, err := c.Adopt(t.Context(), "my scan", []string{"f[a]"})
	require.NoError(t, err)
	require.Equal(t, apiclient.Adoption{Scan: "files", Findings: []string{"f[a]"}, State: "proven", Proven: true, File: "import {}", FileName: "driftwatch_adopt.tf"}, a)
	require.Equal(t, request{Method: "POST", URI: "/api/v1/workspaces/my%20scan/adopt", Authorization: "Bearer " + apiToken,
		Accept: "application/json", ContentType: "application/json", Body: `{"findings":["f[a]"]}`}, got)

	answer, code = `{"error": "an adoption of this scan is already running"}`, http.StatusConflict
	_, err = c.Adopt(t.Context(), "files", []string{"f[a]"})
	requireStatus(t, err, apiclient.ErrConflict, "409 Conflict: an adoption of this scan is already running")
}
