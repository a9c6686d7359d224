package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// logsServer serves run "r1" (finished, text/plain or SSE), "live" (SSE
// with lines written while the client reads: release lets the run end)
// and "private" (r1's log, only with "Bearer tok").
func logsServer(t *testing.T, release <-chan struct{}) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/runs/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
		sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
		id := r.PathValue("id")
		if id == "private" {
			if r.Header.Get("Authorization") != "Bearer tok" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"error": "invalid read credential"}`)
				return
			}
			id = "r1"
		}
		switch id {
		case "r1":
			if !sse {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprint(w, "== plan ==\nNo changes.\n")
				return
			}
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			fmt.Fprint(w, "data: == plan ==\n\ndata: No changes.\n\nevent: end\ndata: {\"status\":\"clean\"}\n\n")
		case "live":
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			fmt.Fprint(w, "data: == init ==\n\n: keep-alive\n\n")
			w.(http.Flusher).Flush()
			<-release
			fmt.Fprint(w, "data: Error: Unsupported argument\n\nevent: end\ndata: {\"status\":\"errored\"}\n\n")
		case "cut":
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			fmt.Fprint(w, "data: partial\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error": "unknown run"}`)
		}
	})
	mux.HandleFunc("POST /api/v1/runs/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error": "invalid bearer token"}`)
			return
		}
		switch r.PathValue("id") {
		case "live":
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"run": "live", "status": "cancelling"}`)
		case "waiting":
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"run": "waiting", "status": "cancelled"}`)
		case "r1":
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error": "the run is not queued or running"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error": "unknown run"}`)
		}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func TestLogsCmd(t *testing.T) {
	ts := logsServer(t, nil)
	var out, errb bytes.Buffer
	require.Equal(t, 0, logsCmd([]string{"r1", "--server", ts.URL}, &out, &errb), errb.String())
	require.Equal(t, "== plan ==\nNo changes.\n", out.String())

	out.Reset()
	errb.Reset()
	require.Equal(t, 0, logsCmd([]string{"--follow", "--server", ts.URL, "r1"}, &out, &errb), errb.String())
	require.Equal(t, "== plan ==\nNo changes.\n", out.String())
	require.Equal(t, "run r1: clean\n", errb.String())

	errb.Reset()
	require.Equal(t, 1, logsCmd([]string{"nope", "--server", ts.URL}, &out, &errb))
	require.Contains(t, errb.String(), "404 Not Found: unknown run")

	errb.Reset()
	require.Equal(t, 1, logsCmd([]string{"cut", "-f", "--server", ts.URL}, &out, &errb))
	require.Contains(t, errb.String(), "stream ended before the run did")

	errb.Reset()
	require.Equal(t, 1, logsCmd(nil, &out, &errb))
	require.Contains(t, errb.String(), "usage: driftwatch logs RUN_ID")
}

// --token-file sends the token with the log read, plain and followed; a
// refusal says which token file was rejected; a bad file is an error
// before any request.
func TestLogsTokenFile(t *testing.T) {
	ts := logsServer(t, nil)
	dir := t.TempDir()
	tok, bad, empty := filepath.Join(dir, "token"), filepath.Join(dir, "bad"), filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(tok, []byte("tok\n"), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte("CANARY-nope"), 0o600))
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	for _, follow := range []bool{false, true} {
		args := []string{"private", "--server", ts.URL, "--token-file", tok}
		if follow {
			args = append(args, "--follow")
		}
		var out, errb bytes.Buffer
		require.Equal(t, 0, logsCmd(args, &out, &errb), errb.String())
		require.Equal(t, "== plan ==\nNo changes.\n", out.String())
	}
	var out, errb bytes.Buffer
	require.Equal(t, 1, logsCmd([]string{"private", "--server", ts.URL, "--token-file", bad}, &out, &errb))
	require.Equal(t, "driftwatch: logs private: 401 Unauthorized: invalid read credential: the daemon at "+ts.URL+
		" rejected the token in "+bad+" (it must hold the daemon's server.token_file or server.read_token_file token)\n", errb.String())
	errb.Reset()
	require.Equal(t, 1, logsCmd([]string{"private", "--server", ts.URL}, &out, &errb))
	require.Contains(t, errb.String(), "pass --token-file FILE")
	errb.Reset()
	require.Equal(t, 1, logsCmd([]string{"private", "--server", ts.URL, "--token-file", empty}, &out, &errb))
	require.Equal(t, "driftwatch: token file "+empty+" is empty\n", errb.String())
	require.Empty(t, out.String())
	require.NotContains(t, errb.String(), "CANARY")
}

// syncWriter signals each write.
type syncWriter struct {
	bytes.Buffer
	wrote chan string
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.wrote <- string(p)
	return w.Buffer.Write(p)
}

func TestLogsFollowPrintsBeforeEnd(t *testing.T) {
	release := make(chan struct{})
	ts := logsServer(t, release)
	out := &syncWriter{wrote: make(chan string, 10)}
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- logsCmd([]string{"live", "--follow", "--server", ts.URL}, out, &errb) }()
	require.Equal(t, "== init ==\n", <-out.wrote, "printed while the run is in flight")
	close(release)
	require.Equal(t, 0, <-done)
	require.Equal(t, "== init ==\nError: Unsupported argument\n", out.String())
	require.Equal(t, "run live: errored\n", errb.String())
}

func TestCancelCmd(t *testing.T) {
	ts := logsServer(t, nil)
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("tok\n"), 0o600))
	bad := filepath.Join(t.TempDir(), "bad")
	require.NoError(t, os.WriteFile(bad, []byte("nope"), 0o600))
	var out, errb bytes.Buffer
	require.Equal(t, 0, cancelCmd([]string{"live", "--server", ts.URL, "--token-file", tok}, &out, &errb), errb.String())
	require.Equal(t, "run live: cancelling\n", out.String())
	out.Reset()
	require.Equal(t, 0, cancelCmd([]string{"waiting", "--server", ts.URL, "--token-file", tok}, &out, &errb), errb.String())
	require.Equal(t, "run waiting: cancelled (it was queued and never started)\n", out.String())

	for _, c := range []struct{ id, file, want string }{
		{"r1", tok, "409 Conflict: the run is not queued or running"},
		{"nope", tok, "404 Not Found: unknown run"},
		{"live", bad, "401 Unauthorized: invalid bearer token"},
	} {
		errb.Reset()
		require.Equal(t, 1, cancelCmd([]string{c.id, "--server", ts.URL, "--token-file", c.file}, &out, &errb))
		require.Contains(t, errb.String(), c.want)
	}
	errb.Reset()
	require.Equal(t, 1, cancelCmd([]string{"live", "--server", ts.URL}, &out, &errb))
	require.Contains(t, errb.String(), "--token-file is required")
}
