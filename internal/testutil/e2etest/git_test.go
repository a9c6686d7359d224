package e2etest

import (
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

const canaryGitToken = "ghp_CANARY_e2e_token_0f1e2d3c4b5a"

// gitServer serves repos under root with the real `git http-backend`,
// behind HTTP Basic auth that only accepts canaryGitToken, on 127.0.0.1.
// It records every request URL.
func gitServer(t *testing.T, root string) (base string, urls func() []string) {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	require.NoError(t, err)
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	var mu sync.Mutex
	var seen []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.String())
		mu.Unlock()
		if _, pw, ok := r.BasicAuth(); !ok || pw != canaryGitToken {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// TestAuditGitSource audits a workspace whose code lives in a git
// repository behind token auth: the token comes from credentials_file and
// never appears in any output, log or request URL.
func TestAuditGitSource(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		// The repository: a module under envs/prod that uses a sibling module.
		repo := filepath.Join(e.root, "repo")
		e.workspace(t, "repo", map[string]string{
			"envs/prod/main.tf": providers + `
variable "dir" { type = string }
module "cfg" {
  source = "../../modules/cfg"
  dir    = var.dir
}
`,
			"envs/prod/backend.tf": "terraform {\n  backend \"local\" {}\n}\n",
			".gitignore":           ".terraform/\n.terraform.lock.hcl\n",
			"modules/cfg/main.tf": `
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
variable "dir" { type = string }
resource "dwtest_file" "app" {
  filename = "${var.dir}/git-app.conf"
  content  = "replicas = 2"
}
`,
		})
		git(t, repo, "init", "-q", "-b", "main")
		git(t, repo, "add", ".")
		git(t, repo, "commit", "-qm", "initial")
		served := filepath.Join(e.root, "served")
		require.NoError(t, os.MkdirAll(served, 0o755))
		git(t, served, "clone", "-q", "--bare", repo, filepath.Join(served, "infra.git"))
		base, urls := gitServer(t, served)

		// Apply from the working copy so state exists; state lives in a local
		// backend file outside the repository, set through backend_config.
		state := filepath.Join(e.root, "prod.tfstate")
		dir := filepath.Join(repo, "envs/prod")
		e.tf(t, dir, "init", "-input=false", "-no-color", "-backend-config=path="+state)
		e.tf(t, dir, "apply", "-auto-approve", "-input=false", "-no-color", "-var", "dir="+filepath.Join(e.root, "out"))
		require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "git-app.conf"), []byte("replicas = 5"), 0o644))

		creds := filepath.Join(e.root, "git-token")
		require.NoError(t, os.WriteFile(creds, []byte(canaryGitToken+"\n"), 0o600))
		bad := filepath.Join(e.root, "bad-token")
		require.NoError(t, os.WriteFile(bad, []byte("ghp_WRONG_token_value_1234\n"), 0o600))
		cfg := e.config(t, `
workspaces:
  - name: prod
    source:
      git: { url: "`+base+`/infra.git", ref: main, path: envs/prod, credentials_file: `+creds+` }
    backend_config: ["path=`+state+`"]
    vars: { dir: "`+filepath.Join(e.root, "out")+`" }
  - name: wrong-token
    source:
      git: { url: "`+base+`/infra.git", ref: main, path: envs/prod, credentials_file: `+bad+` }
`)
		r := driftwatch(t, nil, "audit", "--config", cfg, "--format", "json", "--log-level", "debug")
		require.Equal(t, 1, r.code, r.stderr)
		rep := parseReport(t, r.stdout)
		st, msg, fs := rep.ws(t, "prod")
		require.Equal(t, drift.StatusDrift, st, msg)
		require.Equal(t, []drift.Finding{{Kind: drift.KindDrift, Address: "module.cfg.dwtest_file.app", Type: "dwtest_file",
			Action: "update", Attributes: []string{"content"}}}, counted(fs))
		st, msg, _ = rep.ws(t, "wrong-token")
		require.Equal(t, drift.StatusErrored, st)
		require.Contains(t, msg, "authentication failed")

		for _, out := range []string{r.stdout, r.stderr} {
			require.NotContains(t, out, canaryGitToken)
			require.NotContains(t, out, "ghp_WRONG_token_value_1234")
		}
		for _, u := range urls() {
			require.NotContains(t, u, canaryGitToken, "the token never travels in a URL")
		}
		for _, format := range []string{"table", "markdown", "junit", "sarif"} {
			r := driftwatch(t, nil, "audit", "--config", cfg, "--format", format)
			require.NotContains(t, r.stdout+r.stderr, canaryGitToken, format)
			require.NotContains(t, r.stdout+r.stderr, "ghp_WRONG_token_value_1234", format)
		}
	})
}
