package e2etest

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/gittest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// acceptRepo is a repository whose root module (envs/prod) sets a drifted
// value in each place accept rewrites (a literal, a local, a tfvars
// file, a variable's default, a module input) and two it refuses (a
// function call, a sensitive value).
func acceptRepo(root string) map[string]string {
	files := map[string]string{
		"envs/prod/main.tf": `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
  backend "local" { path = "@ROOT@/state/prod.tfstate" }
}

locals {
  greeting = "hello" # a local
}

variable "fromvars" { type = string }

variable "replicas" {
  type    = string
  default = "2" # raised by hand during incidents
}

variable "secret" {
  type      = string
  sensitive = true
  default   = "canary-propose-old"
}

resource "dwtest_file" "literal" {
  filename = "@ROOT@/out/literal.txt"
  content  = "v1"
}

resource "dwtest_file" "local" {
  filename = "@ROOT@/out/local.txt"
  content  = local.greeting
}

resource "dwtest_file" "tfvars" {
  filename = "@ROOT@/out/tfvars.txt"
  content  = var.fromvars
}

resource "dwtest_file" "default" {
  filename = "@ROOT@/out/default.txt"
  content  = var.replicas
}

module "m" {
  source  = "./modules/m"
  content = "mod1"
}

resource "dwtest_file" "func" {
  filename = "@ROOT@/out/func.txt"
  content  = upper("f1")
}

resource "dwtest_file" "secret" {
  filename          = "@ROOT@/out/secret.txt"
  sensitive_content = var.secret
}
`,
		"envs/prod/terraform.tfvars": "fromvars = \"tv1\"\n",
		"envs/prod/modules/m/main.tf": `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
variable "content" { type = string }
resource "dwtest_file" "f" {
  filename = "@ROOT@/out/module.txt"
  content  = var.content
}
`,
		".gitignore": ".terraform/\n.terraform.lock.hcl\n",
	}
	for k, v := range files {
		files[k] = strings.ReplaceAll(v, "@ROOT@", root)
	}
	return files
}

// acceptDrift changes every file of acceptRepo behind Terraform's back;
// acceptDriftRefused is what of it accept refuses, the values it had.
var (
	acceptDrift = map[string]string{"literal": "v2", "local": "hi", "tfvars": "tv2", "default": "5", "module": "mod2",
		"func": "F2", "secret": "canary-propose-new"}
	acceptDriftRefused = map[string]string{"func": "F1", "secret": "canary-propose-old"}
)

type apiAcceptance struct {
	ID        string   `json:"id"`
	State     string   `json:"state"`
	Error     string   `json:"error"`
	Remaining []string `json:"remaining"`
	Accepted  []struct {
		Address, Attribute, Where, Kind string
	} `json:"accepted"`
	Refused []struct {
		Address, Attribute, Reason string
	} `json:"refused"`
	Patch    string `json:"patch"`
	Proposal *struct {
		Branch, Base, URL string
		Number            int
		Existing          bool
	} `json:"proposal"`
	RequestedBy string `json:"requested_by"`
}

// TestAcceptProposed: drift accepted as code through the daemon's API,
// proven, pushed as a branch of the workspace's repository (real git
// over HTTP) and proposed as a GitHub pull request; the same drift
// accepted again finds the same branch and request. The branch, checked
// out and planned on its own, shows no change. The drift incident waits
// for the merge; merged, the next check is clean and the incident
// resolves. No token and no sensitive value appears anywhere.
func TestAcceptProposed(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		for _, d := range []string{"out", "state"} {
			require.NoError(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
		}
		gh := notifytest.NewGitHubServer(t)
		srv := gittest.NewServer(t, canaryGitToken)
		repoURL, base := srv.Publish(t, gh.Repository()+".git", acceptRepo(e.root))

		// Applied from a clone; then the world changes.
		seed := filepath.Join(e.root, "seed")
		gittest.Run(t, e.root, "clone", "--quiet", srv.Bare(gh.Repository()+".git"), seed)
		e.apply(t, filepath.Join(seed, "envs/prod"))
		for name, v := range acceptDrift {
			require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", name+".txt"), []byte(v), 0o644))
		}

		secrets := filepath.Join(e.root, "secrets")
		require.NoError(t, os.MkdirAll(secrets, 0o700))
		write := func(name, content string) string {
			p := filepath.Join(secrets, name)
			require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
			return p
		}
		creds := write("git-token", canaryGitToken+"\n")
		ca := write("ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: gh.Certificate().Raw})))
		token := "dw-accept-token-0123456789abcdef0123456789abcdef"
		listen := freePort(t)
		cfg := e.config(t, fmt.Sprintf(`
server:
  listen: "%s"
  external_url: "http://%s"
  auth:
    tokens:
      - { name: oncall, role: operator, file: %s }
store: { path: %s }
allow_sub_minute_schedules: true
notifiers:
  - name: github-infra
    type: github
    github: { token_file: %s, repository: %s, api_url: "%s" }
    ca_file: %s
accept:
  notifier: github-infra
  labels: [drift-accepted]
workspaces:
  - name: prod
    schedule: "@every 1h"
    source:
      git: { url: "%s", ref: main, path: envs/prod, credentials_file: %s }
    backend_policy: { allow_local: true }
`, listen, listen, write("api-token", token+"\n"), filepath.Join(e.root, "dw.db"), gh.TokenFile, gh.Repository(), gh.URL(), ca, repoURL, creds))
		d := startDaemon(t, cfg, listen) // its first run starts at once
		d.eventually("prod drifted", 60*time.Second, func() bool { return d.workspaces()["prod"].Status == "drift" })

		accept := func() apiAcceptance {
			t.Helper()
			code, body := postBody(t, d, "/api/v1/workspaces/prod/accept", token)
			require.Equal(t, http.StatusAccepted, code, body)
			var a apiAcceptance
			require.NoError(t, json.Unmarshal([]byte(body), &a))
			require.Equal(t, "running", a.State)
			require.Equal(t, "token:oncall", a.RequestedBy)
			d.eventually("acceptance "+a.ID+" finished", 90*time.Second, func() bool {
				_, b := d.getAs("/api/v1/acceptances/"+a.ID, token)
				require.NoError(t, json.Unmarshal([]byte(b), &a))
				return a.State != "running"
			})
			return a
		}
		a := accept()
		require.Equal(t, "proposed", a.State, "%s %v", a.Error, a.Remaining)
		kinds := map[string]string{}
		for _, x := range a.Accepted {
			kinds[x.Address+"."+x.Attribute] = x.Kind
		}
		require.Equal(t, map[string]string{
			"dwtest_file.literal.content": "literal", "dwtest_file.local.content": "local", "dwtest_file.tfvars.content": "tfvars",
			"dwtest_file.default.content": "variable default", "module.m.dwtest_file.f.content": "module input",
		}, kinds)
		refused := map[string]string{}
		for _, x := range a.Refused {
			refused[x.Address] = x.Reason
		}
		require.Len(t, refused, 2, "%v", a.Refused)
		require.Contains(t, refused["dwtest_file.func"], "function")
		require.Contains(t, refused["dwtest_file.secret"], "sensitive")
		require.NotNil(t, a.Proposal)
		require.Equal(t, "main", a.Proposal.Base)
		require.True(t, strings.HasPrefix(a.Proposal.Branch, "driftwatch/accept/prod-"), a.Proposal.Branch)
		require.False(t, a.Proposal.Existing)

		pulls := gh.Pulls()
		require.Len(t, pulls, 1)
		pr := pulls[0]
		require.Equal(t, a.Proposal.Number, pr.Number)
		require.Equal(t, a.Proposal.Branch, pr.Head)
		require.Equal(t, "main", pr.Base)
		require.Contains(t, pr.Labels, "drift-accepted")
		for _, want := range []string{"dwtest_file.literal", "module.m.dwtest_file.f", "function", "sensitive", "http://" + listen + "/workspaces/prod"} {
			require.Contains(t, pr.Body, want)
		}

		// The branch is one commit on the planned commit; the repository's
		// main is untouched.
		bare := srv.Bare(gh.Repository() + ".git")
		require.Equal(t, base, gittest.Run(t, bare, "rev-parse", "main"))
		require.Equal(t, base, gittest.Run(t, bare, "rev-parse", a.Proposal.Branch+"^"))

		// Accepted again (the drift is still there), from a terminal
		// through the daemon: the same branch, the request found open,
		// not a second one; the diff on stdout.
		again := driftwatch(t, nil, "accept", "prod", "--server", "http://"+listen, "--token-file", filepath.Join(secrets, "api-token"))
		require.Equal(t, 0, again.code, again.stderr)
		require.Contains(t, again.stderr, "accepted  dwtest_file.literal.content: ")
		require.Contains(t, again.stderr, fmt.Sprintf("proposed: %s (#%d, already open), branch %s into main", a.Proposal.URL, a.Proposal.Number, a.Proposal.Branch))
		require.Contains(t, again.stdout, "+++ b/main.tf")
		require.NotContains(t, again.stdout+again.stderr, "canary-propose")
		require.Len(t, gh.Pulls(), 1)

		// The drift incident waits for the merge.
		var ws struct {
			Incidents []struct {
				Class    string `json:"class"`
				Accepted *struct {
					State string `json:"state"`
					URL   string `json:"url"`
				} `json:"accepted"`
			} `json:"incidents"`
		}
		d.getJSON("/api/v1/workspaces/prod", &ws)
		var waiting string
		for _, in := range ws.Incidents {
			if in.Class == "drift" && in.Accepted != nil {
				waiting = in.Accepted.State
			}
		}
		require.Equal(t, "waiting for merge", waiting, "%+v", ws)
		_, page := d.getAs("/workspaces/prod", token)
		require.Contains(t, page, "accepted, waiting for merge")

		// The branch, checked out and planned on its own, changes nothing
		// once what was refused is put back.
		for name, v := range acceptDriftRefused {
			require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", name+".txt"), []byte(v), 0o644))
		}
		check := filepath.Join(e.root, "check")
		gittest.Run(t, e.root, "clone", "--quiet", "--branch", a.Proposal.Branch, bare, check)
		requireNoChanges(t, e, filepath.Join(check, "envs/prod"))

		// Merged: the next check of the merged code is clean and the
		// incident resolves.
		gittest.Run(t, bare, "update-ref", "refs/heads/main", "refs/heads/"+a.Proposal.Branch)
		require.Equal(t, http.StatusAccepted, d.post("/api/v1/workspaces/prod/runs", token))
		d.eventually("prod clean after the merge", 60*time.Second, func() bool { return d.workspaces()["prod"].Status == "clean" })
		d.getJSON("/api/v1/workspaces/prod", &ws)
		require.Empty(t, ws.Incidents, "the drift incident resolved")

		// Nothing secret anywhere: the daemon's log, the request, the
		// git server's URLs, the audit log's entries.
		_, audit := d.getAs("/api/v1/audit?action=drift.accept", token)
		require.Contains(t, audit, `"drift.accept"`)
		everything := d.logs.String() + pr.Body + pr.Title + audit + strings.Join(srv.URLs(), "\n")
		for _, c := range []string{canaryGitToken, gh.Token, token, "canary-propose"} {
			require.NotContains(t, everything, c)
		}
	})
}

// requireNoChanges plans dir (its own init) and requires no change.
func requireNoChanges(t *testing.T, e *tfEnv, dir string) {
	t.Helper()
	e.tf(t, dir, "init", "-input=false", "-no-color")
	cmd := exec.Command(e.bin, "plan", "-detailed-exitcode", "-input=false", "-no-color")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.root, "TF_CLI_CONFIG_FILE=" + e.cliConfig, "CHECKPOINT_DISABLE=1"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "plan of %s: exit 2 is a change:\n%s", dir, out)
}

// TestAcceptProposeCLIGitLab: `driftwatch accept --propose` against a
// GitLab project: two at once push one branch and open one merge
// request; the other finds it open.
func TestAcceptProposeCLIGitLab(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	for _, d := range []string{"out", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
	}
	gl := notifytest.NewGitLabServer(t)
	srv := gittest.NewServer(t, canaryGitToken)
	repoURL, _ := srv.Publish(t, notifytest.GitLabProjectPath+".git", acceptRepo(e.root))
	seed := filepath.Join(e.root, "seed")
	gittest.Run(t, e.root, "clone", "--quiet", srv.Bare(notifytest.GitLabProjectPath+".git"), seed)
	e.apply(t, filepath.Join(seed, "envs/prod"))
	for name, v := range acceptDrift {
		require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", name+".txt"), []byte(v), 0o644))
	}
	creds := filepath.Join(e.root, "git-token")
	require.NoError(t, os.WriteFile(creds, []byte(canaryGitToken+"\n"), 0o600))
	ca := filepath.Join(e.root, "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: gl.Certificate().Raw}), 0o600))
	cfg := e.config(t, fmt.Sprintf(`
notifiers:
  - name: gitlab-infra
    type: gitlab
    gitlab: { token_file: %s, project: %s, api_url: "%s" }
    ca_file: %s
accept: { notifier: gitlab-infra }
workspaces:
  - name: prod
    source:
      git: { url: "%s", ref: main, path: envs/prod, credentials_file: %s }
    backend_policy: { allow_local: true }
`, gl.TokenFile, notifytest.GitLabProjectPath, gl.URL(), ca, repoURL, creds))

	// Two at once: both started before either finishes its first plan.
	cmds := make([]*exec.Cmd, 2)
	outs := make([][2]bytes.Buffer, 2)
	for i := range cmds {
		cmds[i] = exec.Command(driftwatchBin, "accept", "prod", "--propose", "--config", cfg, "--output", filepath.Join(e.root, fmt.Sprintf("change-%d.diff", i)))
		cmds[i].Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		cmds[i].Stdout, cmds[i].Stderr = &outs[i][0], &outs[i][1]
		require.NoError(t, cmds[i].Start())
	}
	res := make([]runOut, 2)
	for i, c := range cmds {
		err := c.Wait()
		res[i] = runOut{stdout: outs[i][0].String(), stderr: outs[i][1].String(), code: c.ProcessState.ExitCode()}
		require.NoError(t, err, res[i].stderr)
	}
	var opened, found int
	for _, r := range res {
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stderr, "proven: ")
		switch {
		case strings.Contains(r.stderr, ", opened), branch driftwatch/accept/prod-"):
			opened++
		case strings.Contains(r.stderr, ", already open), branch driftwatch/accept/prod-"):
			found++
		}
		for _, c := range []string{canaryGitToken, gl.Token, "canary-propose"} {
			require.NotContains(t, r.stdout+r.stderr, c)
		}
	}
	require.Equal(t, 1, opened, "%s\n%s", res[0].stderr, res[1].stderr)
	require.Equal(t, 1, found)
	mrs := gl.MergeRequests()
	require.Len(t, mrs, 1)
	require.True(t, strings.HasPrefix(mrs[0].SourceBranch, "driftwatch/accept/prod-"), mrs[0].SourceBranch)
	require.Equal(t, "main", mrs[0].TargetBranch)
	branches := gittest.Run(t, srv.Bare(notifytest.GitLabProjectPath+".git"), "for-each-ref", "--format=%(refname:short)", "refs/heads/driftwatch")
	require.Equal(t, mrs[0].SourceBranch, branches, "one branch")
}
