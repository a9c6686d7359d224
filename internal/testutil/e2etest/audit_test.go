package e2etest

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

const providers = `terraform {
  required_providers {
    dwtest     = { source = "driftwatch/dwtest" }
    local      = { source = "hashicorp/local" }
    kubernetes = { source = "driftwatch/kubernetes" }
    helm       = { source = "driftwatch/helm" }
  }
}
`

// Canary values: none of them may ever appear in any output.
const (
	canarySensitive = "CANARY-sensitive-3f9a1c"
	canaryDrifted   = "CANARY-drifted-77b2e4"
	canaryEnv       = "CANARY-secret-env-51d0aa"
)

// TestAuditRealDrift builds one inventory covering every classification,
// makes real changes behind Terraform's back, and audits it with the real
// binary (terraform and, where built, OpenTofu).
func TestAuditRealDrift(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		out := filepath.Join(e.root, "out")
		require.NoError(t, os.MkdirAll(out, 0o755))

		clean := e.workspace(t, "clean", map[string]string{"main.tf": providers + `
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/clean.txt"
  content  = "v1"
}
output "name" { value = dwtest_file.a.filename }
`})
		e.apply(t, clean)

		content := e.workspace(t, "content", map[string]string{"main.tf": providers + `
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/content.txt"
  content  = "v1"
}
resource "dwtest_file" "untouched" {
  filename = "@ROOT@/out/content-untouched.txt"
  content  = "same"
}
`})
		e.apply(t, content)
		require.NoError(t, os.WriteFile(filepath.Join(out, "content.txt"), []byte("edited by hand"), 0o644))

		deleted := e.workspace(t, "deleted", map[string]string{"main.tf": providers + `
resource "local_file" "gone" {
  filename = "@ROOT@/out/gone.txt"
  content  = "bye"
}
`})
		e.apply(t, deleted)
		require.NoError(t, os.Remove(filepath.Join(out, "gone.txt")))

		pending := e.workspace(t, "pending", map[string]string{"main.tf": `
variable "release" {
  type    = string
  default = "v2"
}
resource "terraform_data" "release" {
  input = var.release
}
`})
		e.apply(t, pending, "-var", "release=v1")

		nested := e.workspace(t, "nested", map[string]string{
			"main.tf": providers + `
module "app" {
  source = "./modules/app"
  dir    = "@ROOT@/out"
}
`,
			"modules/app/main.tf": `
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
variable "dir" { type = string }
resource "dwtest_file" "cfg" {
  filename = "${var.dir}/nested.txt"
  content  = "module v1"
}
`})
		e.apply(t, nested)
		require.NoError(t, os.WriteFile(filepath.Join(out, "nested.txt"), []byte("module hotfix"), 0o644))

		forbiddenCfg := e.workspace(t, "forbidden-config", map[string]string{"main.tf": providers + `
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/fc.txt"
  content  = "ok"
}
resource "kubernetes_config_map" "disabled" {
  count    = 0
  filename = "@ROOT@/out/never.yaml"
}
`})
		e.apply(t, forbiddenCfg)

		forbiddenState := e.workspace(t, "forbidden-state", map[string]string{"main.tf": providers + `
resource "helm_release" "ingress" {
  filename = "@ROOT@/out/ingress.yaml"
  content  = "chart: ingress-nginx"
}
`})
		e.apply(t, forbiddenState)
		// The release leaves the code but is still in state.
		e.workspace(t, "forbidden-state", map[string]string{"main.tf": providers + `
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/fs.txt"
  content  = "ok"
}
`})

		sensitive := e.workspace(t, "sensitive", map[string]string{
			"main.tf": providers + `
variable "secret" {
  type      = string
  sensitive = true
}
resource "dwtest_file" "s" {
  filename          = "@ROOT@/out/secret.txt"
  sensitive_content = var.secret
}
`,
			"secret.tfvars": `secret = "` + canarySensitive + `"` + "\n",
			"env-secret":    canaryEnv + "\n",
		})
		e.apply(t, sensitive, "-var-file=secret.tfvars")
		require.NoError(t, os.WriteFile(filepath.Join(out, "secret.txt"), []byte(canaryDrifted), 0o644))

		ignored := e.workspace(t, "ignored", map[string]string{"main.tf": providers + `
resource "dwtest_file" "scaled" {
  filename = "@ROOT@/out/scaled.txt"
  content  = "3"
}
`})
		e.apply(t, ignored)
		require.NoError(t, os.WriteFile(filepath.Join(out, "scaled.txt"), []byte("5"), 0o644))

		e.workspace(t, "invalid", map[string]string{"main.tf": `
resource "terraform_data" "x" {
  input = "a"
  bogus_argument = true
}
`})

		cfg := e.config(t, `
defaults:
  timeout: 3m
workspaces:
  - name: clean
    source: { path: ./clean }
    labels: { case: clean }
  - name: content
    source: { path: ./content }
    labels: { case: drift }
  - name: deleted
    source: { path: ./deleted }
    labels: { case: drift }
  - name: pending
    source: { path: ./pending }
  - name: nested
    source: { path: ./nested }
    labels: { case: drift }
  - name: forbidden-config
    source: { path: ./forbidden-config }
  - name: forbidden-state
    source: { path: ./forbidden-state }
  - name: sensitive
    source: { path: ./sensitive }
    var_files: [secret.tfvars]
    secret_env_files: { APP_TOKEN: ./sensitive/env-secret }
    labels: { case: sensitive }
  - name: ignored
    source: { path: ./ignored }
    ignore: [{ address: "dwtest_file.scaled", attributes: ["content"] }]
  - name: invalid
    source: { path: ./invalid }
`)
		v := driftwatch(t, nil, "validate", "--config", cfg)
		require.Equal(t, 0, v.code, v.stderr)
		require.Contains(t, v.stdout, "10 workspaces")

		r := driftwatch(t, nil, "audit", "--config", cfg, "--format", "json", "--concurrency", "4", "--log-level", "debug")
		require.Equal(t, 1, r.code, "an errored workspace wins over drift\n%s", r.stderr)
		rep := parseReport(t, r.stdout)
		require.Equal(t, 2, rep.Version)
		require.Len(t, rep.Workspaces, 10)

		st, msg, fs := rep.ws(t, "clean")
		require.Equal(t, drift.StatusClean, st, msg)
		require.Empty(t, counted(fs))
		// Local state outside a dev workspace, in a file Terraform made
		// world-readable: two hygiene findings, status still clean.
		var hygiene []drift.Finding
		for _, f := range fs {
			if f.Kind == drift.KindBackend {
				hygiene = append(hygiene, f)
			}
		}
		require.Len(t, hygiene, 2, "%+v", fs)
		require.Equal(t, "backend.local", hygiene[0].Address)
		require.NotEmpty(t, hygiene[0].Detail)
		require.Equal(t, 10, rep.Summary.Hygiene)

		st, _, fs = rep.ws(t, "content")
		require.Equal(t, drift.StatusDrift, st)
		require.Equal(t, []drift.Finding{{Kind: drift.KindDrift, Address: "dwtest_file.a", Type: "dwtest_file", Action: "update", Attributes: []string{"content"}}}, counted(fs))

		st, _, fs = rep.ws(t, "deleted")
		require.Equal(t, drift.StatusDrift, st)
		require.Equal(t, []drift.Finding{{Kind: drift.KindDrift, Address: "local_file.gone", Type: "local_file", Action: "delete", Attributes: []string{}}}, counted(fs))

		st, _, fs = rep.ws(t, "pending")
		require.Equal(t, drift.StatusPending, st)
		require.Len(t, counted(fs), 1)
		require.Equal(t, drift.KindPending, fs[0].Kind)
		require.Equal(t, "terraform_data.release", fs[0].Address)
		require.Equal(t, "update", fs[0].Action)
		require.Contains(t, fs[0].Attributes, "input")

		st, _, fs = rep.ws(t, "nested")
		require.Equal(t, drift.StatusDrift, st)
		require.Equal(t, []drift.Finding{{Kind: drift.KindDrift, Address: "module.app.dwtest_file.cfg", Type: "dwtest_file", Action: "update", Attributes: []string{"content"}}}, counted(fs))

		st, _, fs = rep.ws(t, "forbidden-config")
		require.Equal(t, drift.StatusForbidden, st)
		require.Len(t, counted(fs), 1)
		require.Equal(t, drift.KindForbidden, fs[0].Kind)
		require.Equal(t, "kubernetes_config_map.disabled", fs[0].Address)
		require.Equal(t, []string{drift.SeenInConfig}, fs[0].SeenIn)

		st, _, fs = rep.ws(t, "forbidden-state")
		require.Equal(t, drift.StatusForbidden, st)
		var helm *drift.Finding
		for i := range fs {
			if fs[i].Kind == drift.KindForbidden {
				helm = &fs[i]
			}
		}
		require.NotNil(t, helm, "%+v", fs)
		require.Equal(t, "helm_release.ingress", helm.Address)
		require.Contains(t, helm.SeenIn, drift.SeenInState)
		require.NotContains(t, helm.SeenIn, drift.SeenInConfig)

		st, _, fs = rep.ws(t, "sensitive")
		require.Equal(t, drift.StatusDrift, st)
		require.Equal(t, []drift.Finding{{Kind: drift.KindDrift, Address: "dwtest_file.s", Type: "dwtest_file", Action: "update", Attributes: []string{"sensitive_content"}}}, counted(fs))

		st, _, fs = rep.ws(t, "ignored")
		require.Equal(t, drift.StatusClean, st, "an ignore rule silences the drift")
		require.Equal(t, "dwtest_file.scaled", fs[0].Address)
		require.True(t, fs[0].Ignored)

		st, msg, _ = rep.ws(t, "invalid")
		require.Equal(t, drift.StatusErrored, st)
		require.Contains(t, msg, "Unsupported argument")
		require.Contains(t, msg, "main.tf line 4")

		require.Equal(t, 2, rep.Summary.Clean, "clean and ignored")
		require.Equal(t, 4, rep.Summary.Drift)
		require.Equal(t, 1, rep.Summary.Pending)
		require.Equal(t, 2, rep.Summary.Forbidden)
		require.Equal(t, 1, rep.Summary.Errored)
		assertNoCanary(t, "json report and debug logs", r.stdout+r.stderr)

		// Progress: one line per workspace as it starts and as it ends.
		require.Equal(t, 10, strings.Count(r.stderr, ": started"), r.stderr)
		require.Contains(t, r.stderr, "content: drift (drift 1, pending 0, forbidden 0)")

		// Every other format, for the sensitive workspace: no canary anywhere.
		for _, format := range []string{"table", "markdown", "junit", "sarif"} {
			r := driftwatch(t, nil, "audit", "--config", cfg, "--workspace", "sensitive", "--format", format, "--log-level", "debug")
			require.Equal(t, 2, r.code, r.stderr)
			require.Contains(t, r.stdout, "dwtest_file.s", format)
			require.Contains(t, r.stdout, "sensitive_content", format)
			assertNoCanary(t, format, r.stdout+r.stderr)
		}
		// In GitHub Actions: an annotation on the line declaring each
		// finding's resource, and the Markdown report appended to the step
		// summary.
		summary := filepath.Join(e.root, "step-summary.md")
		require.NoError(t, os.WriteFile(summary, []byte("earlier step\n"), 0o644))
		r = driftwatch(t, []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary, "GITHUB_WORKSPACE=" + e.root},
			"audit", "--config", cfg, "--workspace", "sensitive")
		require.Equal(t, 2, r.code, r.stderr)
		require.Regexp(t, `(?m)^::error file=sensitive/main\.tf,line=[1-9][0-9]*,title=[^\n]*dwtest_file\.s`, r.stdout)
		md, err := os.ReadFile(summary)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(md), "earlier step\n"), "appended, not overwritten")
		require.Contains(t, string(md), "dwtest_file.s")
		assertNoCanary(t, "github annotations and step summary", r.stdout+r.stderr+string(md))
		// --output writes the file; --label filters; exit codes per outcome.
		reportFile := filepath.Join(e.root, "report.json")
		r = driftwatch(t, nil, "audit", "--config", cfg, "--label", "case=drift", "--format", "json", "--output", reportFile)
		require.Equal(t, 2, r.code, r.stderr)
		require.Empty(t, r.stdout)
		data, err := os.ReadFile(reportFile)
		require.NoError(t, err)
		rep = parseReport(t, string(data))
		require.Len(t, rep.Workspaces, 3)
		r = driftwatch(t, nil, "audit", "--config", cfg, "--workspace", "clean,ignored")
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stdout, "backend.local")
		r = driftwatch(t, nil, "audit", "--config", cfg, "--workspace", "clean,ignored", "--strict")
		require.Equal(t, 2, r.code, "--strict fails on state-backend findings")

		// Terraform never wrote into the user's directories, and every run
		// directory was removed.
		_, err = os.Stat(filepath.Join(clean, "driftwatch.tfplan"))
		require.True(t, os.IsNotExist(err))
		entries, err := os.ReadDir(e.workDir())
		require.NoError(t, err)
		require.Empty(t, entries, "run directories are cleaned up")
	})
}

func assertNoCanary(t *testing.T, what, s string) {
	t.Helper()
	for _, c := range []string{canarySensitive, canaryDrifted, canaryEnv} {
		require.NotContains(t, s, c, "%s leaks a secret", what)
	}
}

// TestAuditTimeout: a run that hangs (init waits on a module server that
// never answers) is interrupted, reported errored as a timeout, and leaves
// no process behind.
func TestAuditTimeout(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		release := make(chan struct{})
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { close(release); srv.Close() })

		e.workspace(t, "hang", map[string]string{"main.tf": `
module "slow" {
  source = "http://` + ln.Addr().String() + `/module.zip"
}
`})
		e.workspace(t, "ok", map[string]string{"main.tf": `
resource "terraform_data" "x" {
  input = "a"
}
`})
		e.apply(t, filepath.Join(e.root, "ok"))
		e.allowHost(t, ln.Addr().String())
		cfg := e.config(t, `
workspaces:
  - name: hang
    source: { path: ./hang }
    timeout: 3s
  - name: ok
    source: { path: ./ok }
`)
		start := time.Now()
		r := driftwatch(t, nil, "audit", "--config", cfg, "--format", "json")
		elapsed := time.Since(start)
		require.Equal(t, 1, r.code, r.stderr)
		rep := parseReport(t, r.stdout)
		st, msg, _ := rep.ws(t, "hang")
		require.Equal(t, drift.StatusErrored, st)
		require.Contains(t, msg, "timed out after 3s")
		st, _, _ = rep.ws(t, "ok")
		require.Equal(t, drift.StatusClean, st, "other workspaces are still reported")
		require.Less(t, elapsed, 60*time.Second, "the hung run was stopped, not waited out")

		// No process of the run survives it.
		require.Empty(t, processesUnder(t, e.workDir()))
		entries, _ := os.ReadDir(e.workDir())
		require.Empty(t, entries)
	})
}

// processesUnder lists PIDs whose cwd is inside dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var pids []string
	procs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		if err == nil && strings.HasPrefix(cwd, dir) {
			pids = append(pids, p.Name())
		}
	}
	return pids
}
