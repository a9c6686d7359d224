package e2etest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// Canaries of the attribution command's environment: a plain env value
// and a secret file's content. Neither may appear in any output.
const (
	canaryAttrEnv    = "CANARY-attr-env-6b2e91"
	canaryAttrSecret = "CANARY-attr-secret-d47a03"
)

// attributionScript answers by address: dwtest_file.ok with an actor, fail
// with an error that echoes its canaries, hang never, anything else with
// garbage. Every query is appended to $CALLS.
const attributionScript = `#!/bin/sh
q=$(cat)
printf '%s\n' "$q" >> "$CALLS"
case "$q" in
*'"dwtest_file.ok"'*) printf '{"actor":"carol@example.com","time":"2026-11-29T10:00:00Z","source":"test-trail","event_id":"ev-42","url":"https://trail.example.com/ev-42"}' ;;
*'"dwtest_file.fail"'*) echo "denied for $AUDIT_TOKEN and $PLAIN" >&2; exit 4 ;;
*'"dwtest_file.hang"'*) sleep 60 ;;
*) echo "this is not json" ;;
esac
`

// gitAs runs git in dir as author name.
func gitAs(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + strings.ToLower(name) + "@example.com",
		"GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@example.invalid", "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// TestAttribution: a workspace in git with two pending changes committed
// by two authors, and four drifted resources whose attribution command
// answers, fails, hangs and prints garbage. The audit's JSON report and
// the daemon's API and page show who changed what; the failures are
// recorded on their findings and never fail the run; the daemon asks once
// per drift and keeps the answer and the window; the command's env values
// appear nowhere.
func TestAttribution(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	out := filepath.Join(e.root, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	resource := func(name, content string) string {
		return fmt.Sprintf("resource \"dwtest_file\" %q {\n  filename = \"%s/%s.txt\"\n  content  = %q\n}\n", name, out, name, content)
	}
	drifted := []string{"ok", "fail", "hang", "garbage"}
	var mainTF strings.Builder
	mainTF.WriteString("terraform {\n  backend \"local\" {}\n}\n")
	for _, n := range drifted {
		mainTF.WriteString(resource(n, "v1"))
	}
	repo := e.workspace(t, "repo", map[string]string{
		"envs/prod/providers.tf": providers,
		"envs/prod/main.tf":      mainTF.String(),
		"envs/prod/p1.tf":        resource("p1", "v1"),
		"envs/prod/p2.tf":        "# the second pending resource\n\n" + resource("p2", "v1"),
		".gitignore":             ".terraform/\n.terraform.lock.hcl\n",
	})
	gitAs(t, repo, "Init", "init", "-q", "-b", "main")
	gitAs(t, repo, "Init", "add", ".")
	gitAs(t, repo, "Init", "commit", "-qm", "initial")
	state := filepath.Join(e.root, "prod.tfstate")
	dir := filepath.Join(repo, "envs/prod")
	e.tf(t, dir, "init", "-input=false", "-no-color", "-backend-config=path="+state)
	e.tf(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	// Two pending changes by two authors, then drift on four resources.
	e.workspace(t, "repo", map[string]string{"envs/prod/p1.tf": resource("p1", "v2")})
	gitAs(t, repo, "Ann", "commit", "-qam", "p1: v2")
	e.workspace(t, "repo", map[string]string{"envs/prod/p2.tf": "# the second pending resource\n\n" + resource("p2", "v2")})
	gitAs(t, repo, "Ben", "commit", "-qam", "p2: v2")
	for _, n := range drifted {
		require.NoError(t, os.WriteFile(filepath.Join(out, n+".txt"), []byte("changed by hand"), 0o644))
	}
	served := filepath.Join(e.root, "served")
	require.NoError(t, os.MkdirAll(served, 0o755))
	git(t, served, "clone", "-q", "--bare", repo, filepath.Join(served, "infra.git"))
	base, _ := gitServer(t, served)
	creds := filepath.Join(e.root, "git-token")
	require.NoError(t, os.WriteFile(creds, []byte(canaryGitToken+"\n"), 0o600))

	sh := filepath.Join(e.root, "attribute.sh")
	require.NoError(t, os.WriteFile(sh, []byte(attributionScript), 0o700))
	secret := filepath.Join(e.root, "audit-token")
	require.NoError(t, os.WriteFile(secret, []byte(canaryAttrSecret+"\n"), 0o600))
	calls := filepath.Join(e.root, "calls")
	token := "dw-api-token-attribution-0123456789abcdef0123"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
defaults:
  attribution:
    command: [%s]
    env: { CALLS: %s, PLAIN: %s }
    timeout: 2s
workspaces:
  - name: prod
    source:
      git: { url: "%s/infra.git", ref: main, path: envs/prod, credentials_file: %s }
    backend_config: ["path=%s"]
    attribution:
      secret_env_files: { AUDIT_TOKEN: %s }
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db"), sh, calls, canaryAttrEnv, base, creds, state, secret))

	noCanary := func(what, s string) {
		t.Helper()
		for _, c := range []string{canaryAttrEnv, canaryAttrSecret, canaryGitToken} {
			require.NotContains(t, s, c, "%s leaks a secret", what)
		}
	}
	checkFindings := func(what string, fs []drift.Finding) {
		t.Helper()
		by := map[string]drift.Finding{}
		for _, f := range fs {
			by[f.Address] = f
		}
		require.Equal(t, &drift.Attribution{Actor: "carol@example.com", Time: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
			Source: "test-trail", EventID: "ev-42", URL: "https://trail.example.com/ev-42"}, by["dwtest_file.ok"].Attribution, what)
		for n, why := range map[string]string{"fail": "exit status 4", "hang": "timed out", "garbage": "not a JSON object"} {
			f := by["dwtest_file."+n]
			require.Equal(t, drift.KindDrift, f.Kind, "%s: %s", what, n)
			require.Nil(t, f.Attribution, "%s: %s", what, n)
			require.True(t, strings.HasPrefix(f.AttributionError, "attribution failed: "), "%s: %s: %q", what, n, f.AttributionError)
			require.Contains(t, f.AttributionError, why, "%s: %s", what, n)
		}
		require.Contains(t, by["dwtest_file.fail"].AttributionError, "[REDACTED]", what)
		for n, author := range map[string]string{"p1": "Ann", "p2": "Ben"} {
			f := by["dwtest_file."+n]
			require.Equal(t, drift.KindPending, f.Kind, "%s: %s", what, n)
			require.NotNil(t, f.Commit, "%s: %s has no commit", what, n)
			require.Equal(t, author, f.Commit.Author, "%s: %s", what, n)
			require.Equal(t, n+": v2", f.Commit.Subject, "%s: %s", what, n)
			require.Regexp(t, `^[0-9a-f]{40}$`, f.Commit.Hash)
		}
	}

	// The one-shot audit: no history, so no window; every drift is asked about.
	r := driftwatch(t, nil, "audit", "--config", cfg, "--format", "json")
	require.Equal(t, 2, r.code, "drift: changes found\n%s", r.stderr)
	rep := parseReport(t, r.stdout)
	st, msg, fs := rep.ws(t, "prod")
	require.Equal(t, drift.StatusDrift, st, msg)
	checkFindings("audit", fs)
	for _, f := range fs {
		require.Nil(t, f.Window, f.Address)
	}
	noCanary("audit", r.stdout+r.stderr)
	queries := strings.Split(strings.TrimSpace(mustRead(t, calls)), "\n")
	require.Len(t, queries, 4, "one query per drifted resource")
	var q struct {
		Workspace, Address, Type, Provider string
		IDs                                map[string]string
		Window                             struct{ From, To string }
	}
	for _, line := range queries {
		if strings.Contains(line, `"dwtest_file.ok"`) {
			require.NoError(t, json.Unmarshal([]byte(line), &q))
		}
	}
	require.Equal(t, "prod", q.Workspace)
	require.Equal(t, "dwtest_file", q.Type)
	require.Contains(t, q.Provider, "driftwatch/dwtest")
	require.Equal(t, filepath.Join(out, "ok.txt"), q.IDs["id"])
	require.NotEmpty(t, q.Window.To)
	require.NoError(t, os.Remove(calls))

	// The daemon: its first run dates the drift and asks once.
	d := startDaemon(t, cfg, listen)
	d.eventually("the initial run", 90*time.Second, func() bool {
		runs := d.runs("prod")
		return len(runs) == 1 && runs[0].Status == "drift"
	})
	var ws struct {
		Findings []drift.Finding `json:"findings"`
	}
	d.getJSON("/api/v1/workspaces/prod", &ws)
	checkFindings("daemon", ws.Findings)
	first := map[string]*drift.Window{}
	for _, f := range ws.Findings {
		if f.Kind == drift.KindDrift {
			require.NotNil(t, f.Window, f.Address)
			require.True(t, f.Window.From.IsZero(), "nothing was clean before: %s", f.Address)
			require.False(t, f.Window.To.IsZero(), f.Address)
			first[f.Address] = f.Window
		}
	}
	require.Len(t, strings.Split(strings.TrimSpace(mustRead(t, calls)), "\n"), 4)

	// A second run keeps the windows and answers and asks nothing.
	id := triggerRun(t, d, "prod", token)
	d.eventually("the second run", 90*time.Second, func() bool {
		runs := d.runs("prod")
		return len(runs) == 2 && runs[0].ID == id && runs[0].Status == "drift"
	})
	d.getJSON("/api/v1/workspaces/prod", &ws)
	checkFindings("daemon, second run", ws.Findings)
	for _, f := range ws.Findings {
		if f.Kind == drift.KindDrift {
			require.True(t, first[f.Address].From.Equal(f.Window.From) && first[f.Address].To.Equal(f.Window.To), f.Address)
		}
	}
	require.Len(t, strings.Split(strings.TrimSpace(mustRead(t, calls)), "\n"), 4, "the same drift is not asked about again")

	page := d.getText("/workspaces/prod")
	require.Contains(t, page, "changed by <strong>carol@example.com</strong>")
	require.Contains(t, page, " by Ann ")
	require.Contains(t, page, " by Ben ")
	var run map[string]any
	d.getJSON("/api/v1/runs/"+id, &run)
	raw, err := json.Marshal(run)
	require.NoError(t, err)
	noCanary("the run", string(raw))
	noCanary("the page", page)
	noCanary("the daemon's log", d.logs.String())
	require.Contains(t, d.logs.String(), "attribution failed")
	noCanary("the run's log", logSnapshot(t, d, id, token))
}
