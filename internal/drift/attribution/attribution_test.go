package attribution

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// canary is an env value that must never appear in an error.
const canary = "sk-CANARY-5f2a9c1e"

var testQuery = Query{
	Workspace: "prod",
	Address:   "aws_s3_bucket.logs",
	Type:      "aws_s3_bucket",
	Provider:  "registry.terraform.io/hashicorp/aws",
	IDs:       map[string]string{"id": "logs", "arn": "arn:aws:s3:::logs"},
	Window: Window{
		From: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC),
		To:   time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC),
	},
}

// script writes a shell script to a new directory and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "adapter.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700))
	return p
}

func TestAskAnswers(t *testing.T) {
	dir := t.TempDir()
	// The script records its stdin, environment and working directory,
	// then answers.
	prog := script(t, `cat > "$OUT/stdin"
env > "$OUT/env"
pwd > "$OUT/pwd"
echo '{"actor":"alice@example.com","time":"2026-11-28T10:42:00Z","source":"cloudtrail","event_id":"ev-1","url":"https://console.example.com/ev-1"}'`)
	t.Setenv("DRIFTWATCH_DAEMON_SECRET", canary) // the daemon's own: not inherited
	a, err := Command{Argv: []string{prog}, Env: map[string]string{"OUT": dir, "AWS_REGION": "eu-west-1"}}.Ask(t.Context(), testQuery)
	require.NoError(t, err)
	require.Equal(t, Answer{
		Actor:   "alice@example.com",
		Time:    time.Date(2026, 11, 28, 10, 42, 0, 0, time.UTC),
		Source:  "cloudtrail",
		EventID: "ev-1",
		URL:     "https://console.example.com/ev-1",
	}, a)

	stdin, err := os.ReadFile(filepath.Join(dir, "stdin"))
	require.NoError(t, err)
	require.JSONEq(t, `{
		"workspace":"prod","address":"aws_s3_bucket.logs","type":"aws_s3_bucket",
		"provider":"registry.terraform.io/hashicorp/aws",
		"ids":{"id":"logs","arn":"arn:aws:s3:::logs"},
		"window":{"from":"2026-11-28T10:00:00Z","to":"2026-11-28T11:00:00Z"}}`, string(stdin))
	var back Query
	require.NoError(t, json.Unmarshal(stdin, &back))
	require.Equal(t, testQuery, back)

	env, err := os.ReadFile(filepath.Join(dir, "env"))
	require.NoError(t, err)
	names := map[string]string{}
	for line := range strings.Lines(strings.TrimSpace(string(env))) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		names[k] = v
	}
	delete(names, "PWD") // the shell's own
	delete(names, "SHLVL")
	delete(names, "_")
	require.ElementsMatch(t, []string{"PATH", "HOME", "OUT", "AWS_REGION"}, keys(names))
	require.Equal(t, os.Getenv("PATH"), names["PATH"])
	require.NotEqual(t, os.Getenv("HOME"), names["HOME"])
	require.NoDirExists(t, names["HOME"], "the private HOME is removed after the run")
	pwd, err := os.ReadFile(filepath.Join(dir, "pwd"))
	require.NoError(t, err)
	require.Equal(t, names["HOME"], strings.TrimSpace(string(pwd)), "Dir defaults to the private HOME")
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestAskDirAndMinimalAnswer(t *testing.T) {
	dir := t.TempDir()
	prog := script(t, `pwd > pwd; echo '{"actor":"bob"}'`)
	a, err := Command{Argv: []string{prog}, Dir: dir}.Ask(t.Context(), testQuery)
	require.NoError(t, err)
	require.Equal(t, Answer{Actor: "bob"}, a)
	pwd, err := os.ReadFile(filepath.Join(dir, "pwd"))
	require.NoError(t, err)
	require.Equal(t, dir, strings.TrimSpace(string(pwd)))
}

func TestAskFailures(t *testing.T) {
	env := map[string]string{"TOKEN": canary}
	tests := []struct {
		name    string
		body    string
		wantErr string
	}{
		{
			name:    "exit 3 with stderr",
			body:    `cat >/dev/null; echo "lookup failed for token $TOKEN" >&2; printf 'second\tline\n' >&2; exit 3`,
			wantErr: "exit status 3: stderr: lookup failed for token [REDACTED] second line",
		},
		{name: "garbage", body: `echo "not json $TOKEN"`, wantErr: "answer is not a JSON object of actor, time, source, event_id and url: invalid JSON at byte 2"},
		{name: "empty", body: `exit 0`, wantErr: "answer is empty"},
		{name: "array", body: `echo '["alice"]'`, wantErr: "it is a JSON array, not an object"},
		{name: "unknown field named by a secret", body: `echo "{\"actor\":\"a\",\"$TOKEN\":1}"`, wantErr: "it has an unknown field"},
		{name: "field of the wrong type", body: `echo '{"actor":7}'`, wantErr: "actor is a JSON number, not a string"},
		{name: "two objects", body: `echo '{"actor":"a"} {"actor":"b"}'`, wantErr: "answer has data after its JSON object"},
		{name: "cut short", body: `printf '{"actor":"a"'`, wantErr: "it ends early"},
		{name: "no actor", body: `echo '{"source":"cloudtrail"}'`, wantErr: "actor is required"},
		{name: "blank actor", body: `echo '{"actor":"  "}'`, wantErr: "actor is required"},
		{name: "control character", body: `echo '{"actor":"a\u001b[31mb"}'`, wantErr: "actor contains a control character"},
		{name: "long actor", body: `printf '{"actor":"%0300d"}' 0`, wantErr: "actor is longer than 256 bytes"},
		{name: "javascript url", body: `echo '{"actor":"a","url":"javascript:alert(1)"}'`, wantErr: "url is not an http(s) URL"},
		{name: "url with userinfo", body: `echo '{"actor":"a","url":"https://u:p@h/x"}'`, wantErr: "url is not an http(s) URL"},
		{name: "bad time", body: `echo '{"actor":"a","time":"yesterday"}'`, wantErr: "time is not an RFC 3339 timestamp"},
		{name: "invalid utf-8", body: `printf '{"actor":"\377"}'`, wantErr: "answer is not valid UTF-8"},
		{name: "two problems", body: `echo '{"actor":"","source":"x\u0007"}'`, wantErr: "source contains a control character\nactor is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := script(t, tt.body)
			_, err := Command{Argv: []string{prog}, Env: env}.Ask(t.Context(), testQuery)
			require.ErrorContains(t, err, "attribution command "+prog+": ")
			require.ErrorContains(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), canary)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, prog, e.Program)
			require.NoError(t, errors.Unwrap(err), "a failure of the program has no cause to test for")
		})
	}
}

func TestAskRefusesBadCommands(t *testing.T) {
	tests := []struct {
		name    string
		cmd     Command
		wantErr string
	}{
		{name: "no argv", cmd: Command{}, wantErr: "attribution command (none): argv is empty"},
		{name: "missing program", cmd: Command{Argv: []string{"driftwatch-no-such-adapter"}}, wantErr: "attribution command driftwatch-no-such-adapter: not found in PATH"},
		{name: "bad env name", cmd: Command{Argv: []string{"true"}, Env: map[string]string{"A=B": "x"}}, wantErr: `attribution command true: env name "A=B" is not valid`},
		{name: "negative timeout", cmd: Command{Argv: []string{"true"}, Timeout: -time.Second}, wantErr: "attribution command true: timeout is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cmd.Ask(t.Context(), testQuery)
			require.EqualError(t, err, tt.wantErr)
		})
	}
}

// TestAskKillsTheGroup: a program that hangs, with a child of its own
// that holds stdout, is killed with that child at the timeout; so is a
// child left behind by a program that answered.
func TestAskKillsTheGroup(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		timeout time.Duration
		cancel  bool
		wantErr string
		wantIs  error
	}{
		{
			name: "hangs", timeout: 2 * time.Second,
			body:    `sleep 300 & echo $! > "$OUT/child"; echo $$ > "$OUT/parent"; echo "waiting for $TOKEN" >&2; wait`,
			wantErr: "timed out after 2s: stderr: waiting for [REDACTED]",
			wantIs:  ErrTimeout,
		},
		{
			name: "context cancelled", timeout: time.Minute, cancel: true,
			body:    `sleep 300 & echo $! > "$OUT/child"; echo $$ > "$OUT/parent"; wait`,
			wantErr: "context canceled",
			wantIs:  context.Canceled,
		},
		{
			name: "answers and leaves a child", timeout: time.Minute,
			body: `sleep 300 >/dev/null 2>&1 & echo $! > "$OUT/child"; echo $$ > "$OUT/parent"; echo '{"actor":"a"}'`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			prog := script(t, tt.body)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				go func() {
					waitForFile(t, filepath.Join(out, "parent"))
					cancel()
				}()
			}
			began := time.Now()
			a, err := Command{Argv: []string{prog}, Env: map[string]string{"OUT": out, "TOKEN": canary}, Timeout: tt.timeout}.Ask(ctx, testQuery)
			require.Less(t, time.Since(began), 10*time.Second)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, "a", a.Actor)
			} else {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorIs(t, err, tt.wantIs)
				require.NotContains(t, err.Error(), canary)
			}
			for _, f := range []string{"parent", "child"} {
				pid := readPID(t, filepath.Join(out, f))
				require.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 20*time.Millisecond, "%s %d still runs", f, pid)
			}
		})
	}
}

func TestAskBoundsTheAnswer(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{name: "too long, then exits", body: `head -c 70000 /dev/zero | tr '\0' a`},
		{name: "endless", body: `echo "$$" > "$OUT/parent"; while :; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; done`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			began := time.Now()
			_, err := Command{Argv: []string{script(t, tt.body)}, Env: map[string]string{"OUT": out}, Timeout: time.Minute}.Ask(t.Context(), testQuery)
			require.ErrorContains(t, err, "answer is longer than 65536 bytes")
			require.NotErrorIs(t, err, ErrTimeout)
			require.Less(t, time.Since(began), 20*time.Second, "killed on overflow, not at the timeout")
			if p := filepath.Join(out, "parent"); fileExists(p) {
				pid := readPID(t, p)
				require.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 20*time.Millisecond)
			}
		})
	}
}

func TestAskDoesNotWaitForStdin(t *testing.T) {
	// A program that never reads a large query still answers.
	q := testQuery
	q.IDs = map[string]string{}
	for i := range 2000 {
		q.IDs["k"+strconv.Itoa(i)] = strings.Repeat("v", 100)
	}
	a, err := Command{Argv: []string{script(t, `echo '{"actor":"a"}'`)}, Timeout: 10 * time.Second}.Ask(t.Context(), q)
	require.NoError(t, err)
	require.Equal(t, "a", a.Actor)
}

func waitForFile(t *testing.T, p string) {
	deadline := time.Now().Add(10 * time.Second)
	for !fileExists(p) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readPID(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// alive reports whether pid runs: a zombie (exited, not yet reaped by
// whoever adopted it) does not.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestAskDoesNotWaitForAnEscapedProcess: a process that left the group
// (a new session) is not killed, but holding stdout open does not keep
// Ask from answering.
func TestAskDoesNotWaitForAnEscapedProcess(t *testing.T) {
	out := t.TempDir()
	prog := script(t, `setsid sh -c 'echo $$ > "$OUT/escaped.tmp"; mv "$OUT/escaped.tmp" "$OUT/escaped"; exec sleep 300' &
while [ ! -f "$OUT/escaped" ]; do sleep 0.05; done
echo '{"actor":"a"}'`)
	began := time.Now()
	a, err := Command{Argv: []string{prog}, Env: map[string]string{"OUT": out}, Timeout: time.Minute}.Ask(t.Context(), testQuery)
	pid := readPID(t, filepath.Join(out, "escaped"))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	require.NoError(t, err)
	require.Equal(t, "a", a.Actor)
	require.Less(t, time.Since(began), readGrace+5*time.Second)
}
