package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// canaryPath is part of a resource's filename: a Terraform value, which no
// alert may carry.
const canaryPath = "CANARY-path-value-5b2e"

// TestRemediationAlerts drives auto remediation through a real daemon and
// real Terraform, with the incidents on local servers speaking Slack's,
// OpsGenie's and a webhook's wire protocols. "fixme" is reverted: its
// incident's Slack thread says the remediation was approved and applied,
// OpsGenie gets the notes, the webhook the remediation events, then the
// incident resolves. "broken" fails midway through the apply: the failure
// is announced, the incident's severity is raised one step (OpsGenie P3 to
// P2, the Slack parent updated), and the incident stays open with the
// raised severity while the drift the failure left is still there. No
// Terraform value or credential is in any request.
func TestRemediationAlerts(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	out := filepath.Join(e.root, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "state"), 0o755))
	fixme := e.workspace(t, "fixme", map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, "fixme", "")})
	broken := e.workspace(t, "broken", map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, "broken", `
resource "dwtest_file" "b" {
  filename = "@ROOT@/out/sub-`+canaryPath+`/b.txt"
  content  = "v1"
}
`)})
	e.apply(t, fixme)
	e.apply(t, broken)
	require.NoError(t, os.WriteFile(filepath.Join(out, "fixme.txt"), []byte("hand edit"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "broken.txt"), []byte("hand edit"), 0o644))
	// b's directory becomes a dangling symlink: detection sees b deleted
	// (drift, a planned create), and the apply's mkdir fails, even as root.
	sub := filepath.Join(out, "sub-"+canaryPath)
	require.NoError(t, os.RemoveAll(sub))
	require.NoError(t, os.Symlink(filepath.Join(e.root, "nowhere"), sub))

	as := newAlertServers(t, e)
	slackSrv, ogSrv, hookSrv := as.slack, as.og, as.hook

	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", external_url: "https://driftwatch.example.com" }
store: { path: %s }
allow_sub_minute_schedules: true
%s
alerts:
  default_notifiers: [slack-oncall, pager, hook]
defaults:
  schedule: "@every 3s"
  backend_policy: { allow_local: true }
  remediation: { mode: auto, allow_actions: [update, create] }
workspaces:
  - { name: fixme, source: { path: ./fixme } }
  - { name: broken, source: { path: ./broken } }
`, listen, filepath.Join(e.root, "dw.db"), as.notifiers))
	d := startDaemonEnv(t, cfg, listen, as.env)

	hooks := func(ws string) []notifytest.WebhookPayload {
		var outp []notifytest.WebhookPayload
		for _, dl := range hookSrv.Deliveries() {
			require.True(t, dl.Verified, dl.Reason)
			if dl.Payload.Incident.Workspace == ws {
				outp = append(outp, dl.Payload)
			}
		}
		return outp
	}
	events := func(ps []notifytest.WebhookPayload) []string {
		var outp []string
		for _, p := range ps {
			ev := p.Event
			if p.Remediation != nil {
				ev += ":" + p.Remediation.Result
			}
			outp = append(outp, ev)
		}
		return outp
	}
	parent := func(ws string) notifytest.SlackMessage {
		var found []notifytest.SlackMessage
		for _, m := range slackSrv.Messages("C0DRIFT01") {
			if strings.Contains(m.Text, "Drift in "+ws) {
				found = append(found, m)
			}
		}
		require.Len(t, found, 1, "one parent message for %s's incident", ws)
		return found[0]
	}
	alert := func(ws string) notifytest.OpsGenieAlert {
		for _, a := range ogSrv.Alerts() {
			if a.Entity == ws {
				return a
			}
		}
		t.Fatalf("no OpsGenie alert for %s", ws)
		return notifytest.OpsGenieAlert{}
	}

	// fixme: opened, approved (auto), applied, resolved; in that order
	// everywhere.
	r := d.waitRemediation("fixme", 90*time.Second, "applied", "failed", "verification_failed", "refused")
	require.Equal(t, "applied", r.State, "%+v %s", r, r.Outcome)
	d.eventually("fixme resolved everywhere", 60*time.Second, func() bool {
		ps := hooks("fixme")
		return len(ps) == 4 && ps[3].Event == "resolve"
	})
	ps := hooks("fixme")
	require.Equal(t, []string{"open", "remediation:approved", "remediation:applied", "resolve"}, events(ps))
	applied := ps[2]
	require.Equal(t, &notifytest.WebhookRemediation{ID: r.ID, Mode: "auto", Result: "applied", Resources: 1,
		ApplyRunID: r.ApplyRunID, URL: "https://driftwatch.example.com/runs/" + r.ApplyRunID}, applied.Remediation)
	require.Equal(t, "moderate", applied.Incident.Severity)
	require.Equal(t, ps[0].Incident.Key, applied.Incident.Key, "on the incident that was paged")
	require.Equal(t, r.ApplyRunID, applied.Incident.RunID)

	d.eventually("fixme's slack thread", 30*time.Second, func() bool {
		return len(slackSrv.Replies("C0DRIFT01", parent("fixme").TS)) == 3
	})
	p := parent("fixme")
	var texts []string
	for _, m := range slackSrv.Replies("C0DRIFT01", p.TS) {
		texts = append(texts, m.Text)
	}
	require.Equal(t, "Remediation approved", texts[0])
	require.Equal(t, "Remediation applied", texts[1])
	require.True(t, strings.HasPrefix(texts[2], "Resolved"), texts[2])
	require.Equal(t, 1, p.Edits, "the parent is edited by the resolve only")
	d.eventually("fixme's alert closed", 30*time.Second, func() bool { return alert("fixme").Status == "closed" })
	a := alert("fixme")
	require.Equal(t, "P3", a.Priority, "a successful remediation raises nothing")
	require.Len(t, a.Notes, 2)
	require.True(t, strings.HasPrefix(a.Notes[0], "Remediation approved (auto): reverting 1 resource now"), a.Notes[0])
	require.True(t, strings.HasPrefix(a.Notes[1], "Remediation applied: reverted 1 resource"), a.Notes[1])
	require.Contains(t, a.Notes[1], "Run: https://driftwatch.example.com/runs/"+r.ApplyRunID)

	// broken: the apply fails midway; the failure is announced and raises
	// the incident one step, which later messages keep.
	r = d.waitRemediation("broken", 90*time.Second, "applied", "failed", "verification_failed", "refused")
	require.Equal(t, "failed", r.State, "%+v %s", r, r.Outcome)
	d.eventually("broken's failure and the verification's update", 60*time.Second, func() bool {
		return len(hooks("broken")) >= 4
	})
	ps = hooks("broken")
	require.Equal(t, []string{"open", "remediation:approved", "remediation:failed", "update"}, events(ps))
	failed := ps[2]
	require.Equal(t, "failed", failed.Remediation.Result)
	require.Contains(t, failed.Remediation.Reason, "apply: Error: Cannot write file (dwtest_file.b")
	require.Equal(t, 2, failed.Remediation.Resources)
	require.Equal(t, "moderate", ps[0].Incident.Severity)
	require.Equal(t, "high", failed.Incident.Severity, "raised one step")
	require.Equal(t, 1, failed.Incident.Escalated)
	// The failed apply reverted a and left b as a planned create: the
	// verification run updates the incident, which stays raised and open.
	require.Equal(t, "high", ps[3].Incident.Severity)
	require.Equal(t, 1, ps[3].Incident.Escalated)
	require.Equal(t, 1, ps[3].Incident.Counts.Pending)

	d.eventually("broken's slack thread and alert", 30*time.Second, func() bool {
		return len(slackSrv.Replies("C0DRIFT01", parent("broken").TS)) == 3 && len(alert("broken").Notes) == 3
	})
	p = parent("broken")
	require.Contains(t, string(p.Blocks), "remediation failed")
	require.Contains(t, string(p.Blocks), ":red_circle: high")
	require.Equal(t, 2, p.Edits, "the failure, then the update")
	texts = nil
	for _, m := range slackSrv.Replies("C0DRIFT01", p.TS) {
		texts = append(texts, m.Text)
	}
	require.Equal(t, "Remediation approved", texts[0])
	require.True(t, strings.HasPrefix(texts[1], "Remediation failed: apply: Error: Cannot write file (dwtest_file.b"), texts[1])
	require.True(t, strings.HasSuffix(texts[1], "(severity raised to high)"), texts[1])
	require.True(t, strings.HasPrefix(texts[2], "Findings changed"), texts[2])

	a = alert("broken")
	require.Equal(t, "P2", a.Priority, "P3 raised one step")
	require.Equal(t, "open", a.Status)
	require.True(t, strings.HasPrefix(a.Notes[1], "Remediation failed (remediation "+r.ID), a.Notes[1])
	require.Contains(t, a.Notes[1], "Priority raised to P2 (severity high).")
	var priorities []string
	for _, rq := range ogSrv.Requests() {
		if rq.Method == "PUT" && rq.Path == "/v2/alerts/"+a.Alias+"/priority" {
			priorities = append(priorities, rq.JSON(t)["priority"].(string))
		}
	}
	require.Equal(t, []string{"P2"}, priorities, "one priority change, by the failure")

	// Several detection runs later: still open and raised, nothing new.
	runs := len(d.runs("broken"))
	d.eventually("three more runs of broken", 60*time.Second, func() bool { return len(d.runs("broken")) >= runs+3 })
	require.Len(t, hooks("broken"), 4)
	require.Equal(t, "open", alert("broken").Status)
	require.Equal(t, "clean", string(d.workspaces()["fixme"].Status))

	// No Terraform value, credential or signing secret in any request or
	// log line.
	var wire strings.Builder
	for _, rq := range slackSrv.Requests() {
		fmt.Fprintf(&wire, "%v %v\n", rq.Form, rq.JSON)
	}
	for _, rq := range ogSrv.Requests() {
		wire.Write(rq.Body)
	}
	for _, dl := range hookSrv.Deliveries() {
		wire.Write(dl.Body)
	}
	for _, s := range []string{canaryPath, "hand edit", notifytest.SlackTestToken, ogSrv.APIKey, hookSrv.Secret, hookSrv.URL} {
		require.NotContains(t, wire.String(), s)
		require.NotContains(t, d.logs.String(), s)
	}
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}
