package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

func sample() *Report {
	t0 := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	return New(t0, t0.Add(9*time.Second), []drift.Result{
		{Workspace: "network", Status: drift.StatusDrift, Duration: 1234 * time.Millisecond, Findings: []drift.Finding{
			{Kind: drift.KindDrift, Address: "module.a.local_file.x", Type: "local_file", Action: "update", Attributes: []string{"content"}},
			{Kind: drift.KindNoise, Address: "data.local_file.y", Type: "local_file", Action: "read"},
		}},
		{Workspace: "dns", Status: drift.StatusClean, Duration: time.Second},
		{Workspace: "k8s", Status: drift.StatusForbidden, Findings: []drift.Finding{
			{Kind: drift.KindForbidden, Address: "helm_release.x", Type: "helm_release", Action: "none", SeenIn: []string{"state"}},
		}},
		{Workspace: "broken|pipe", Status: drift.StatusErrored, Error: "plan: Error: Unsupported argument (main.tf line 4)"},
	})
}

func TestSummaryAndExitCode(t *testing.T) {
	r := sample()
	require.Equal(t, Summary{Clean: 1, Drift: 1, Forbidden: 1, Errored: 1}, r.Summary)
	require.Equal(t, ExitError, r.ExitCode(false), "errored wins over drift")
	r.Summary.Errored = 0
	require.Equal(t, ExitChanges, r.ExitCode(false))
	r.Summary = Summary{Clean: 3}
	require.Equal(t, ExitClean, r.ExitCode(false))
	r.Summary = Summary{Clean: 3, Hygiene: 1}
	require.Equal(t, ExitClean, r.ExitCode(false), "backend findings never fail an audit by default")
	require.Equal(t, ExitChanges, r.ExitCode(true), "--strict")
	r.Summary = Summary{Pending: 1}
	require.Equal(t, ExitChanges, r.ExitCode(false), "pending changes exit 2")
}

func TestJSONContract(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, "json", sample()))
	var got map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &got))
	require.EqualValues(t, 2, got["version"])
	require.Contains(t, got["summary"], "validation", "summary.validation is always present")
	require.Equal(t, "2026-11-21T23:00:00Z", got["started_at"])
	ws := got["workspaces"].([]any)
	first := ws[0].(map[string]any)
	require.EqualValues(t, 1234, first["duration_ms"])
	require.Contains(t, first, "error", "error is always present")
	require.Empty(t, first["error"])
	f := first["findings"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"kind": "drift", "address": "module.a.local_file.x", "type": "local_file",
		"action": "update", "attributes": []any{"content"}}, f)
	clean := ws[1].(map[string]any)
	require.Equal(t, []any{}, clean["findings"], "findings is always a list")
}

func TestJUnit(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, "junit", sample()))
	var s junitSuites
	require.NoError(t, xml.Unmarshal(b.Bytes(), &s))
	require.Len(t, s.Suites, 4)
	require.Equal(t, 2, s.Failures, "drift and forbidden findings fail; noise does not")
	require.Equal(t, 1, s.Errors)
	require.Equal(t, "module.a.local_file.x", s.Suites[0].Cases[0].Name)
	require.Contains(t, s.Suites[0].Cases[0].Failure.Message, "drift: update module.a.local_file.x (content)")
	require.Nil(t, s.Suites[1].Cases[0].Failure, "a clean workspace is a passing case")
}

func TestMarkdownEscapes(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, "markdown", sample()))
	md := b.String()
	require.Contains(t, md, `broken\|pipe`, "pipes cannot break the table")
	require.Contains(t, md, "| drift | update | `module.a.local_file.x` | content |")
	require.NotContains(t, md, "data.local_file.y", "noise is not listed in the summary")
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, "table", sample()))
	out := b.String()
	require.Contains(t, out, "WORKSPACE")
	require.Regexp(t, `network +drift +1 +0 +0 +0 +1.2s +1 noise`, out)
	require.Contains(t, out, "4 workspaces: 1 clean, 1 drift, 0 pending, 1 forbidden, 0 validation, 1 errored; 0 with state-backend findings")
	require.Regexp(t, `k8s +forbidden +none +helm_release.x +in state`, out)
	require.Error(t, Write(&b, "yaml", sample()))
}

func TestProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, false, 2)
	p.Started("a")
	p.Finished(drift.Result{Workspace: "a", Status: drift.StatusDrift, Duration: 1500 * time.Millisecond,
		Findings: []drift.Finding{{Kind: drift.KindDrift}}})
	p.Close()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Equal(t, []string{"[0/2] a: started", "[1/2] a: drift (drift 1, pending 0, forbidden 0) in 1.5s"}, lines)
}

func TestProgressTTYKeepsLiveStatusLine(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, true, 3)
	p.Started("a")
	p.Started("b")
	p.Finished(drift.Result{Workspace: "a", Status: drift.StatusClean})
	p.Close()
	out := b.String()
	// Each permanent line first clears the status line; the status line is
	// redrawn below it with what is still running.
	require.Contains(t, out, "\r\033[K[1/3] a: clean (drift 0, pending 0, forbidden 0) in 0s\n")
	require.Contains(t, out, "\r\033[K1/3 done, 1 running (b)")
	require.True(t, strings.HasSuffix(out, "\r\033[K"), "Close clears the status line")
}

// A workspace with a failing check: status validation, counted in the
// summary, exit code 2, and the check's message shown in every format.
func TestValidation(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	r := New(t0, t0, []drift.Result{{Workspace: "api", Status: drift.StatusValidation, Findings: []drift.Finding{
		{Kind: drift.KindCheck, Address: "check.health", Type: "check", Action: "fail", Detail: "health is 503 | want 200"},
	}}})
	require.Equal(t, Summary{Validation: 1}, r.Summary)
	require.Equal(t, ExitChanges, r.ExitCode(false))

	var b bytes.Buffer
	require.NoError(t, Write(&b, "table", r))
	require.Regexp(t, `api +validation +0 +0 +0 +1 `, b.String())
	require.Regexp(t, `api +check +fail +check\.health +health is 503 \| want 200`, b.String())
	require.Contains(t, b.String(), "1 validation, 0 errored")
	b.Reset()
	require.NoError(t, Write(&b, "markdown", r))
	require.Contains(t, b.String(), "| check | fail | `check.health` | health is 503 \\| want 200 |")
	b.Reset()
	require.NoError(t, Write(&b, "junit", r))
	require.Contains(t, b.String(), `check: fail check.health (health is 503 | want 200)`)
	b.Reset()
	require.NoError(t, Write(&b, "json", r))
	require.Contains(t, b.String(), `"validation": 1`)
	require.Contains(t, b.String(), `"detail": "health is 503 | want 200"`)
}

// A scan's findings in every format: counted, failing, with the holders
// of a resource managed twice.
func TestScanFindings(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	r := New(t0, t0.Add(time.Second), []drift.Result{{Workspace: "files", Status: drift.StatusDrift, Findings: []drift.Finding{
		{Kind: drift.KindManagedTwice, Address: `dwtest_file[filename="/d/s"]`, Type: "dwtest_file", Action: "none", Detail: "/d/s",
			ManagedBy: []string{"a: dwtest_file.s", "b: dwtest_file.s"}},
		{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="/d/hand"]`, Type: "dwtest_file", Action: "none", Detail: "/d/hand"},
		{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="/d/tmp"]`, Type: "dwtest_file", Action: "none", Detail: "/d/tmp", Ignored: true},
	}}})
	require.Equal(t, ExitChanges, r.ExitCode(false))
	out := map[string]string{}
	for _, f := range []string{"table", "markdown", "junit", "json", "sarif"} {
		var b bytes.Buffer
		require.NoError(t, Write(&b, f, r))
		out[f] = b.String()
	}
	require.Regexp(t, `files +drift +0 +0 +0 +0 +0s +1 unmanaged, 1 managed twice`, out["table"])
	require.Contains(t, out["markdown"], "| managed_twice | none | `dwtest_file[filename=\"/d/s\"]` | /d/s; managed by a: dwtest_file.s and b: dwtest_file.s |")
	require.Contains(t, out["markdown"], "| unmanaged | none | `dwtest_file[filename=\"/d/hand\"]` | /d/hand |")
	var s junitSuites
	require.NoError(t, xml.Unmarshal([]byte(out["junit"]), &s))
	require.Equal(t, 2, s.Failures, "the ignored one does not fail")
	require.Contains(t, out["json"], `"managed_by": [`)
	require.Contains(t, out["sarif"], `"ruleId": "driftwatch/unmanaged"`)
	require.Contains(t, out["sarif"], `Workspace \"files\": managed_twice on dwtest_file[filename=\"/d/s\"]: /d/s; managed by a: dwtest_file.s and b: dwtest_file.s`)
}
