package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// remediationsServer answers approve and reject as the daemon does for
// remediation "r1" of workspace net (hash "h1"), "garbled" (a 200 that is
// not JSON) and unknown ones; it wants "Bearer tok". bodies records the
// request bodies.
func remediationsServer(t *testing.T) (url string, bodies func() []string) {
	var mu sync.Mutex
	var got []string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/remediations/{id}/{verb}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer tok":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error": "invalid bearer token"}`)
		case r.PathValue("id") == "garbled":
			fmt.Fprint(w, `<html>`)
		case r.PathValue("id") != "r1":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error": "unknown remediation"}`)
		case r.PathValue("verb") == "approve" && string(b) != "" && string(b) != `{"change_set_hash":"h1"}`:
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error": "change_set_hash does not match the remediation's change set"}`)
		default:
			state := map[string]string{"approve": "approved", "reject": "rejected"}[r.PathValue("verb")]
			fmt.Fprintf(w, `{"id": "r1", "workspace": "net", "state": %q, "change_set_hash": "h1"}`, state)
		}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// approve and reject: the remediation's new state on stdout, exit 0; a
// refusal is the status and the daemon's reason on stderr, exit 1; the
// token is never shown.
func TestDecideCmd(t *testing.T) {
	srv, bodies := remediationsServer(t)
	dir := t.TempDir()
	tok, bad := filepath.Join(dir, "token"), filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(tok, []byte("tok\n"), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte("tok-CANARY-nope"), 0o600))
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	for _, c := range []struct {
		args      []string
		code      int
		out, errb string
	}{
		{[]string{"approve", "r1", "--server", srv, "--token-file", tok}, 0, "remediation r1 of workspace net: approved\n", ""},
		{[]string{"approve", "--server", srv, "--token-file", tok, "--hash", "h1", "r1"}, 0, "remediation r1 of workspace net: approved\n", ""},
		{[]string{"reject", "r1", "--server", srv + "/", "--token-file", tok}, 0, "remediation r1 of workspace net: rejected\n", ""},
		{[]string{"approve", "r1", "--server", srv, "--token-file", tok, "--hash", "h0"}, 1, "",
			"driftwatch: approve r1: 409 Conflict: change_set_hash does not match the remediation's change set\n"},
		{[]string{"reject", "nope", "--server", srv, "--token-file", tok}, 1, "", "driftwatch: reject nope: 404 Not Found: unknown remediation\n"},
		{[]string{"approve", "r1", "--server", srv, "--token-file", bad}, 1, "", "driftwatch: approve r1: 401 Unauthorized: invalid bearer token\n"},
		// The decision was made: what could be read of the answer.
		{[]string{"approve", "garbled", "--server", srv, "--token-file", tok}, 0, "remediation garbled of workspace : \n", ""},
		{[]string{"approve", "r1", "--server", srv}, 1, "", "driftwatch: --token-file is required\n"},
		{[]string{"reject", "--server", srv, "--token-file", tok}, 1, "", "driftwatch: usage: driftwatch reject ID [--server URL] --token-file FILE\n"},
		{[]string{"approve", "r1", "extra", "--token-file", tok}, 1, "", "driftwatch: unexpected argument \"extra\"\n"},
		{[]string{"approve", "r1", "--server", srv, "--token-file", filepath.Join(dir, "missing")}, 1, "",
			"driftwatch: open " + filepath.Join(dir, "missing") + ": no such file or directory\n"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, c.code, run(c.args, &out, &errb), c.args)
		require.Equal(t, c.out, out.String(), c.args)
		require.Equal(t, c.errb, errb.String(), c.args)
	}
	require.Equal(t, []string{"", `{"change_set_hash":"h1"}`, "", `{"change_set_hash":"h0"}`, "", "", ""}, bodies(), "--hash is sent as the change set hash")

	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"reject", "r1", "--server", dead.URL, "--token-file", tok}, &out, &errb))
	require.Regexp(t, `^driftwatch: Post "`+dead.URL+`/api/v1/remediations/r1/reject": dial tcp .*\n$`, errb.String())
	require.NotContains(t, errb.String(), "CANARY")
}
