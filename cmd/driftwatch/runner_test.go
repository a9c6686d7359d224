package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runner/remote"
)

func TestRunnerCmdUsage(t *testing.T) {
	for _, args := range [][]string{
		{"runner"},
		{"runner", "--spec", "/x"},
		{"runner", "--socket", "/x"},
		{"runner", "report", "--spec", "/x"},
		{"runner", "report", "--spec", "/x", "--socket", "/y", "extra"},
	} {
		var stderr bytes.Buffer
		require.Equal(t, 1, run(args, &bytes.Buffer{}, &stderr), "%v", args)
		require.Contains(t, stderr.String(), "--spec FILE --socket PATH", "%v", args)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunnerCmdRoles runs a pod's two containers as main runs them: the
// runner (no token) hands its result, here a failed run (no such
// Terraform binary), to the reporter, which delivers it with the token.
func TestRunnerCmdRoles(t *testing.T) {
	recv := remote.NewReceiver(remote.ReceiverOptions{})
	mux := http.NewServeMux()
	mux.Handle(remote.Route, recv)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	dir := t.TempDir()
	token, hash := remote.NewToken()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o400))
	expires := time.Now().Add(time.Minute)
	spec := remote.Spec{
		Version: remote.Version, RunID: "r1", Workspace: "ws",
		Binary:      filepath.Join(dir, "no-such-terraform"),
		Source:      remote.Source{Path: dir},
		WorkDir:     filepath.Join(dir, "work"),
		CallbackURL: srv.URL + remote.ResultPath("r1"),
		TokenFile:   tokenFile,
		ExpiresAt:   expires,
	}
	b, err := spec.Encode()
	require.NoError(t, err)
	specFile := filepath.Join(dir, "spec.json")
	require.NoError(t, os.WriteFile(specFile, b, 0o400))
	ch, err := recv.Expect("r1", hash, expires)
	require.NoError(t, err)
	sockDir, err := os.MkdirTemp("", "dw-cmd-")
	require.NoError(t, err)
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "reporter.sock")

	var reporterLog, runnerLog syncBuffer
	codes := make(chan int, 1)
	go func() {
		codes <- run([]string{"runner", "report", "--spec", specFile, "--socket", sock}, &bytes.Buffer{}, &reporterLog)
	}()
	require.Equal(t, 0, run([]string{"runner", "--spec", specFile, "--socket", sock}, &bytes.Buffer{}, &runnerLog), runnerLog.String())
	require.Equal(t, 0, <-codes, reporterLog.String())

	d := <-ch
	require.NoError(t, d.Conflict)
	_, err = d.Result.Unpack()
	require.Error(t, err, "the failed run is delivered as a result")
	require.Contains(t, reporterLog.String(), "result delivered")
	require.NotContains(t, runnerLog.String()+reporterLog.String(), token)
	require.NotContains(t, runnerLog.String(), "reporter", "the runner logs nothing of the reporter's")
}
