package e2etest

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// remediationWorkspace keeps its state outside the code (remediation
// refuses state written into the throw-away copy).
const remediationWorkspace = `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
    helm   = { source = "driftwatch/helm" }
  }
  backend "local" { path = "@ROOT@/state/%[1]s.tfstate" }
}
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/%[1]s.txt"
  content  = "v1"
}
%[2]s`

type apiRefusal struct {
	Code    string `json:"code"`
	Address string `json:"address"`
	Reason  string `json:"reason"`
}

type apiRemediation struct {
	ID            string          `json:"id"`
	Workspace     string          `json:"workspace"`
	State         string          `json:"state"`
	Reason        string          `json:"reason"`
	ChangeSetHash string          `json:"change_set_hash"`
	Refusals      []apiRefusal    `json:"refusals"`
	ApplyRunID    string          `json:"apply_run_id"`
	Outcome       json.RawMessage `json:"outcome"`
}

func (d *daemonProc) remediations(ws string) []apiRemediation {
	d.t.Helper()
	var body struct {
		Remediations []apiRemediation `json:"remediations"`
	}
	d.getJSON("/api/v1/remediations?workspace="+ws, &body)
	return body.Remediations
}

// page GETs a status page and returns its HTML.
func (d *daemonProc) page(path string) string {
	d.t.Helper()
	return d.pageAs(path, "")
}

// pageAs is page signed in as a browser does, with HTTP Basic auth and
// token as the password (run pages need a read credential); "": none.
func (d *daemonProc) pageAs(path, token string) string {
	d.t.Helper()
	contentType, body := d.getAs(path, token)
	require.Equal(d.t, "text/html; charset=utf-8", contentType)
	return body
}

// getAs GETs path as pageAs does, requires 200, and returns the content
// type and the body.
func (d *daemonProc) getAs(path, token string) (contentType, body string) {
	d.t.Helper()
	req, err := http.NewRequestWithContext(d.t.Context(), http.MethodGet, d.base+path, nil)
	require.NoError(d.t, err)
	if token != "" {
		req.SetBasicAuth("e2e", token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(d.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(d.t, err)
	require.Equal(d.t, 200, resp.StatusCode, "%s: %s", path, b)
	return resp.Header.Get("Content-Type"), string(b)
}

// refusal returns the refusal of r with code, failing the test without one.
func (r apiRemediation) refusal(t *testing.T, code string) apiRefusal {
	t.Helper()
	for _, x := range r.Refusals {
		if x.Code == code {
			return x
		}
	}
	t.Fatalf("remediation %s has no %s refusal: %+v", r.ID, code, r.Refusals)
	return apiRefusal{}
}

// remediation waits for the newest remediation of ws to be in one of states.
func (d *daemonProc) waitRemediation(ws string, within time.Duration, states ...string) apiRemediation {
	d.t.Helper()
	var got apiRemediation
	d.eventually(ws+" remediation "+strings.Join(states, "|"), within, func() bool {
		rs := d.remediations(ws)
		if len(rs) == 0 {
			return false
		}
		got = rs[0]
		for _, s := range states {
			if got.State == s {
				return true
			}
		}
		return false
	})
	return got
}

// TestRemediation drives guarded remediation through a real daemon and
// real Terraform: auto mode reverts drift and the workspace turns clean;
// approve mode waits for an approval (API and CLI); rejected and expired
// proposals never apply; forbidden resources and a resource deleted by
// hand are refused with their reasons; the kill switch holds an approved
// apply until resumed, across the persisted flag.
func TestRemediation(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	out := filepath.Join(e.root, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "state"), 0o755))
	extra := map[string]string{
		"forbidden": `resource "helm_release" "ingress" {
  filename = "@ROOT@/out/ingress.yaml"
  content  = "chart: ingress-nginx"
}
`,
		"toomany": `resource "dwtest_file" "b" {
  filename = "@ROOT@/out/toomany-b.txt"
  content  = "v1"
}
resource "dwtest_file" "c" {
  filename = "@ROOT@/out/toomany-c.txt"
  content  = "v1"
}
`,
	}
	names := []string{"auto", "approve", "reject", "expire", "forbidden", "deleted", "paused", "toomany", "pendingcfg"}
	dirs := map[string]string{}
	for _, n := range names {
		dirs[n] = e.workspace(t, n, map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, n, extra[n])})
		e.apply(t, dirs[n])
	}
	file := func(n string) string { return filepath.Join(out, n+".txt") }
	for _, n := range names {
		if n == "deleted" {
			require.NoError(t, os.Remove(file(n)))
		} else {
			require.NoError(t, os.WriteFile(file(n), []byte("hand edit"), 0o644))
		}
	}
	// toomany: three drifted resources, max_resources 2.
	for _, n := range []string{"toomany-b", "toomany-c"} {
		require.NoError(t, os.WriteFile(file(n), []byte("hand edit"), 0o644))
	}
	// pendingcfg: drift plus a configuration change nobody applied.
	e.workspace(t, "pendingcfg", map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, "pendingcfg", `resource "dwtest_file" "b" {
  filename = "@ROOT@/out/pendingcfg-b.txt"
  content  = "unreviewed"
}
`)})
	token := "dw-remediation-token-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	listen := freePort(t)
	ws := func(name, mode, more string) string {
		return fmt.Sprintf("  - name: %s\n    source: { path: %s }\n    remediation: { mode: %s%s }\n", name, dirs[name], mode, more)
	}
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
max_concurrent_runs: 4
allow_sub_minute_schedules: true
defaults:
  schedule: "@every 3s"
  backend_policy: { allow_local: true }
workspaces:
`, listen, tokenFile, filepath.Join(e.root, "dw.db"))+
		ws("auto", "auto", "")+ws("approve", "approve", "")+ws("reject", "approve", "")+
		ws("expire", "approve", ", approval_ttl: 2s")+ws("forbidden", "auto", "")+ws("deleted", "auto", "")+
		ws("paused", "approve", "")+ws("toomany", "auto", ", max_resources: 2")+ws("pendingcfg", "auto", ""))
	start := time.Now()
	d := startDaemon(t, cfg, listen)

	// auto: reverted, verified, and the fresh detection turns it clean.
	r := d.waitRemediation("auto", 60*time.Second, "applied", "failed", "verification_failed", "refused")
	require.Equal(t, "applied", r.State, "%+v %s", r, r.Outcome)
	require.Equal(t, "v1", mustRead(t, file("auto")))
	d.eventually("auto clean", 30*time.Second, func() bool { return d.workspaces()["auto"].Status == "clean" })
	var remRun *apiRun
	for _, run := range d.runs("auto") {
		if run.Trigger == "remediate" {
			remRun = &run
		}
	}
	require.NotNil(t, remRun, "the apply is recorded as a run")
	require.Equal(t, "applied", remRun.Status)
	require.Equal(t, r.ApplyRunID, remRun.ID)
	// The apply run keeps its log, as a detection does: init, the plan,
	// the change set, the apply's progress and the outcome; no value.
	_, applyLog := d.getAs("/api/v1/runs/"+remRun.ID+"/logs", token)
	for _, want := range []string{"== remediation " + r.ID + ": change set ", "== init ==", "== plan ==", "== changes ==",
		"== apply ==", "apply    dwtest_file.a: updating", "apply    dwtest_file.a: updated after ", "== applied =="} {
		require.Contains(t, applyLog, want)
	}
	require.NotContains(t, applyLog, "hand edit")
	t.Logf("auto reverted after %s", time.Since(start))

	// Refusals, each with its reason; nothing applied.
	r = d.waitRemediation("forbidden", 30*time.Second, "refused")
	require.Equal(t, "forbidden", r.Refusals[0].Code, "%+v", r)
	r = d.waitRemediation("deleted", 30*time.Second, "refused")
	require.Equal(t, "action_not_allowed", r.Refusals[0].Code, "%+v", r)
	require.Contains(t, r.Reason, "create")
	require.Equal(t, "hand edit", mustRead(t, file("forbidden")))
	require.NoFileExists(t, file("deleted"))

	// Too many resources: three drifted, max_resources 2; nothing applied.
	r = d.waitRemediation("toomany", 30*time.Second, "refused")
	tooMany := r.refusal(t, "too_many_resources")
	require.Equal(t, "the apply would change 3 resources; remediation.max_resources is 2", tooMany.Reason)
	require.Contains(t, r.Reason, tooMany.Reason)
	for _, n := range []string{"toomany", "toomany-b", "toomany-c"} {
		require.Equal(t, "hand edit", mustRead(t, file(n)), n)
	}
	requireRefusedOnPages(t, d, r, tooMany)

	// Pending configuration: a remediation never deploys unreviewed code,
	// not even alongside drift it could revert; nothing applied.
	r = d.waitRemediation("pendingcfg", 30*time.Second, "refused")
	pending := r.refusal(t, "pending")
	require.Equal(t, "dwtest_file.b", pending.Address)
	require.Contains(t, pending.Reason, "unapplied configuration")
	require.Equal(t, "hand edit", mustRead(t, file("pendingcfg")))
	require.NoFileExists(t, file("pendingcfg-b"))
	requireRefusedOnPages(t, d, r, pending)

	// expire: a 2s approval_ttl passes; approving afterwards is refused.
	exp := d.waitRemediation("expire", 30*time.Second, "pending")
	d.eventually("expired", 15*time.Second, func() bool {
		var x apiRemediation
		d.getJSON("/api/v1/remediations/"+exp.ID, &x)
		return x.State == "expired"
	})
	require.Equal(t, 409, d.post("/api/v1/remediations/"+exp.ID+"/approve", token))

	// reject: never applies, and the same change set is not proposed again.
	rej := d.waitRemediation("reject", 30*time.Second, "pending")
	require.Equal(t, 401, d.post("/api/v1/remediations/"+rej.ID+"/reject", ""))
	require.Equal(t, 200, d.post("/api/v1/remediations/"+rej.ID+"/reject", token))
	require.Equal(t, 409, d.post("/api/v1/remediations/"+rej.ID+"/approve", token))

	// Kill switch: an approval given while paused does not apply.
	pend := d.waitRemediation("paused", 30*time.Second, "pending")
	require.Equal(t, 200, d.post("/api/v1/remediation/pause", token))
	var status struct{ Enabled, Paused bool }
	d.getJSON("/api/v1/remediation", &status)
	require.True(t, status.Enabled)
	require.True(t, status.Paused)
	require.Equal(t, 200, d.post("/api/v1/remediations/"+pend.ID+"/approve", token))
	overview := d.page("/")
	require.Contains(t, overview, `<span class="badge s-pending">paused</span>`)
	require.Contains(t, overview, `<span class="chip"><b>1</b> approved, waiting</span>`)

	// approve: waits for the approval, given with the CLI.
	appr := d.waitRemediation("approve", 30*time.Second, "pending")
	time.Sleep(4 * time.Second) // several detection runs: still only proposed
	require.Equal(t, "hand edit", mustRead(t, file("approve")))
	var again apiRemediation
	d.getJSON("/api/v1/remediations/"+appr.ID, &again)
	require.Equal(t, "pending", again.State)
	require.Len(t, d.remediations("approve"), 1, "one proposal per change set")

	// What the approver sees: the pending approval on the overview, and the
	// change set and the command that approves exactly it.
	require.Contains(t, d.page("/"), `<a href="/remediations/`+appr.ID+`" title="remediation `+appr.ID+`: change set and commands">`)
	rp := d.page("/remediations/" + appr.ID)
	require.Contains(t, rp, `<tr><td class="nowrap">update</td><td class="addr mono">dwtest_file.a</td><td><span class="attrs"><code>content</code></span></td></tr>`)
	require.Contains(t, rp, "driftwatch approve "+appr.ID+" --hash "+appr.ChangeSetHash+" --server "+d.base)
	require.NotContains(t, rp, "hand edit", "no value on the page")

	var x apiRemediation
	d.getJSON("/api/v1/remediations/"+pend.ID, &x)
	require.Equal(t, "approved", x.State, "held by the kill switch")
	require.Equal(t, "hand edit", mustRead(t, file("paused")))
	require.Equal(t, 200, d.post("/api/v1/remediation/resume", token))

	res := driftwatch(t, nil, "approve", appr.ID, "--server", d.base, "--token-file", tokenFile, "--hash", appr.ChangeSetHash)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, "approved")
	r = d.waitRemediation("approve", 60*time.Second, "applied", "failed", "verification_failed", "refused")
	require.Equal(t, "applied", r.State, "%+v %s", r, r.Outcome)
	require.Equal(t, "v1", mustRead(t, file("approve")))
	row := d.page("/workspaces/approve")
	require.Contains(t, row, `<span class="badge s-applied">applied</span>`)
	require.Contains(t, row, `<a href="/runs/`+r.ApplyRunID+`">apply</a>`)
	require.Contains(t, d.pageAs("/runs/"+r.ApplyRunID, token), `This run applied remediation <a class="mono" href="/remediations/`+r.ID+`">`+r.ID+`</a> <span class="badge s-applied">applied</span>`)
	r = d.waitRemediation("paused", 60*time.Second, "applied", "failed", "verification_failed", "refused")
	require.Equal(t, "applied", r.State, "%+v %s", r, r.Outcome)
	require.Equal(t, "v1", mustRead(t, file("paused")))

	// The rejected and expired proposals never applied.
	require.Equal(t, "hand edit", mustRead(t, file("reject")))
	require.Equal(t, "hand edit", mustRead(t, file("expire")))
	rs := d.remediations("reject")
	require.Equal(t, "rejected", rs[0].State, "a rejected change set is not proposed again")

	require.GreaterOrEqual(t, d.metric(`driftwatch_remediations_total{result="applied"}`), 3.0)
	require.GreaterOrEqual(t, d.metric(`driftwatch_remediations_total{result="refused"}`), 2.0)
	require.GreaterOrEqual(t, d.metric(`driftwatch_remediations_total{result="rejected"}`), 1.0)
	require.GreaterOrEqual(t, d.metric(`driftwatch_remediations_total{result="expired"}`), 1.0)
	t.Logf("done after %s", time.Since(start))
}

// requireRefusedOnPages checks that the workspace page and the
// remediation's page show the refusal in plain words.
func requireRefusedOnPages(t *testing.T, d *daemonProc, r apiRemediation, x apiRefusal) {
	t.Helper()
	ws := d.page("/workspaces/" + r.Workspace)
	require.Contains(t, ws, `<tr class="s-row-refused" id="rem-`+r.ID+`">`)
	require.Contains(t, ws, `<span class="badge s-refused">refused</span>`)
	require.Contains(t, ws, "<li>"+html.EscapeString(x.Reason)+` <span class="label">`+x.Code+"</span></li>")
	rp := d.page("/remediations/" + r.ID)
	require.Contains(t, rp, `<td class="nowrap"><span class="label">`+x.Code+`</span></td><td class="addr mono">`+html.EscapeString(x.Address)+`</td><td>`+html.EscapeString(x.Reason)+`</td>`)
	require.NotContains(t, rp, "driftwatch approve", "a refused remediation cannot be approved")
}
