package e2etest

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// toolsByQuery splits the test binaries into those that run `terraform
// query` (Terraform 1.14 or later) and those that do not, and returns the
// CLI config; with none of the first the test is unavailable
// (tftest.Unavailable: a failure where the tools are provisioned).
func toolsByQuery(t *testing.T) (query, older []string, cli string) {
	t.Helper()
	bins, cli := tftest.Tools(t)
	for _, b := range bins {
		if local.CheckQuery(t.Context(), b) == nil {
			query = append(query, b)
		} else {
			older = append(older, b)
		}
	}
	if len(query) == 0 {
		tftest.Unavailable(t, "no Terraform 1.14 or later among DRIFTWATCH_TF_BINARIES")
	}
	return query, older, cli
}

// scanWorkspace is a workspace managing the files of objs named in names.
func scanWorkspace(names ...string) string {
	var b strings.Builder
	b.WriteString(`terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
`)
	for _, n := range names {
		fmt.Fprintf(&b, "resource \"dwtest_file\" %q {\n  filename = \"@ROOT@/objs/%s\"\n  content  = \"%s\"\n}\n", strings.TrimSuffix(n, ".txt"), n, n)
	}
	return b.String()
}

// TestScanUnmanaged: three workspaces manage files of one directory, two
// of them one same file; two more are made by hand. A scan (Terraform
// 1.14's list blocks over the directory) reports exactly the hand-made
// ones as unmanaged and the shared one as managed twice: in the audit's
// every format, and in the daemon as an incident that updates when a
// hand-made file is deleted; the daemon's API (POST .../adopt, audited)
// and `driftwatch adopt` (here or through the daemon) generate import
// blocks for the other, proven by a plan, and once a workspace applies
// them the next scan is clean of it. validate refuses a scan on an older
// Terraform or on OpenTofu.
func TestScanUnmanaged(t *testing.T) {
	parallel(t)
	query, older, cli := toolsByQuery(t)
	e := &tfEnv{bin: query[0], cliConfig: cli, root: t.TempDir()}
	objs := filepath.Join(e.root, "objs")
	require.NoError(t, os.MkdirAll(objs, 0o755))
	dirs := map[string]string{}
	for name, files := range map[string][]string{
		"ws-a": {"a1.txt", "shared.txt"},
		"ws-b": {"b1.txt", "shared.txt"},
		"ws-c": {"c1.txt"},
	} {
		dirs[name] = e.workspace(t, name, map[string]string{"main.tf": scanWorkspace(files...)})
		e.apply(t, dirs[name])
	}
	for _, f := range []string{"hand1.txt", "hand2.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(objs, f), []byte("made by hand"), 0o644))
	}
	e.workspace(t, "scan", map[string]string{"main.tf": `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
provider "dwtest" {}
`})
	scanYAML := func(bin string) string {
		return fmt.Sprintf(`scans:
  - name: files
    source: { path: ./scan }
    binary: %s
    schedule: "@every 3s"
    labels: { team: platform }
    types: [dwtest_file]
    config: { directory: %s }
    ignore: [{ type: dwtest_file, identity: "*/objs/ignored-*" }]
`, bin, objs)
	}
	require.NoError(t, os.WriteFile(filepath.Join(objs, "ignored-1.txt"), nil, 0o644))
	addr := func(f string) string { return `dwtest_file[filename="` + filepath.Join(objs, f) + `"]` }

	// validate: a scan needs Terraform 1.14 or later.
	for _, b := range older {
		cfg := e.config(t, "allow_sub_minute_schedules: true\n"+scanYAML(b))
		v := driftwatch(t, nil, "validate", "--config", cfg)
		require.Equal(t, 1, v.code, v.stdout)
		require.Contains(t, v.stderr, `scan "files":`)
		require.Contains(t, v.stderr, "has no query command: scans need Terraform 1.14 or later")
	}

	wsYAML := "workspaces:\n"
	for _, n := range []string{"ws-a", "ws-b", "ws-c"} {
		wsYAML += fmt.Sprintf("  - { name: %s, source: { path: ./%s }, schedule: \"@every 3s\" }\n", n, n)
	}
	cfg := e.config(t, "allow_sub_minute_schedules: true\n"+scanYAML(e.bin)+wsYAML)
	v := driftwatch(t, nil, "validate", "--config", cfg)
	require.Equal(t, 0, v.code, v.stderr)
	require.Contains(t, v.stdout, "4 workspaces (files, ws-a, ws-b, ws-c)")

	// The audit: the scan alone is asked for, the workspaces are checked
	// with it (it needs their states).
	r := driftwatch(t, nil, "audit", "--config", cfg, "--workspace", "files", "--format", "json")
	require.Equal(t, 2, r.code, r.stderr)
	rep := parseReport(t, r.stdout)
	require.Len(t, rep.Workspaces, 4)
	st, msg, fs := rep.ws(t, "files")
	require.Equal(t, drift.StatusDrift, st, msg)
	want := []drift.Finding{
		{Kind: drift.KindManagedTwice, Address: addr("shared.txt"), Type: "dwtest_file", Action: "none", Attributes: []string{}, Detail: filepath.Join(objs, "shared.txt"),
			ManagedBy: []string{"ws-a: dwtest_file.shared", "ws-b: dwtest_file.shared"}},
		{Kind: drift.KindUnmanaged, Address: addr("hand1.txt"), Type: "dwtest_file", Action: "none", Attributes: []string{}, Detail: filepath.Join(objs, "hand1.txt")},
		{Kind: drift.KindUnmanaged, Address: addr("hand2.txt"), Type: "dwtest_file", Action: "none", Attributes: []string{}, Detail: filepath.Join(objs, "hand2.txt")},
		{Kind: drift.KindUnmanaged, Address: addr("ignored-1.txt"), Type: "dwtest_file", Action: "none", Attributes: []string{}, Detail: filepath.Join(objs, "ignored-1.txt"), Ignored: true},
	}
	require.Equal(t, want, fs)
	for _, n := range []string{"ws-a", "ws-b", "ws-c"} {
		st, msg, _ := rep.ws(t, n)
		require.Equal(t, drift.StatusClean, st, msg)
	}
	for format, line := range map[string]string{
		"markdown": "| managed_twice | none | `" + addr("shared.txt") + "` | " + filepath.Join(objs, "shared.txt") + "; managed by ws-a: dwtest_file.shared and ws-b: dwtest_file.shared |",
		"sarif":    `"ruleId": "driftwatch/unmanaged"`,
		"junit":    `classname="files.unmanaged"`,
		"table":    "1 unmanaged",
	} {
		r := driftwatch(t, nil, "audit", "--config", cfg, "--format", format)
		require.Equal(t, 2, r.code, r.stderr)
		if format == "table" {
			require.Regexp(t, `files +drift +0 +0 +0 +0 +\S+ +2 unmanaged, 1 managed twice`, r.stdout)
			continue
		}
		require.Contains(t, r.stdout, line, format)
	}

	// The daemon: an incident for the scan, with its findings.
	hook, alerts := webhookAlerts(t, e)
	listen := freePort(t)
	opsToken := "dw-adopt-token-0123456789abcdef0123456789abcdef"
	opsFile := filepath.Join(e.root, "ops-token")
	require.NoError(t, os.WriteFile(opsFile, []byte(opsToken+"\n"), 0o600))
	dcfg := e.config(t, fmt.Sprintf("server: { listen: %q, auth: { anonymous_role: viewer, tokens: [{ name: ops, role: operator, file: %s }] } }\n"+
		"store: { path: %s }\nallow_sub_minute_schedules: true\n%s%s%s",
		listen, opsFile, filepath.Join(e.root, "data", "dw.db"), alerts, scanYAML(e.bin), wsYAML))
	d := startDaemon(t, dcfg, listen)
	opened := func() (drift.Counts, []drift.Finding, bool) {
		for _, dl := range hook.Deliveries() {
			if dl.Payload.Incident.Workspace == "files" && dl.Payload.Event == "open" {
				return dl.Payload.Incident.Counts, dl.Payload.Incident.Findings, true
			}
		}
		return drift.Counts{}, nil, false
	}
	d.eventually("the scan's incident", 120*time.Second, func() bool { _, _, ok := opened(); return ok })
	counts, findings, _ := opened()
	require.Equal(t, 2, counts.Unmanaged)
	require.Equal(t, 1, counts.ManagedTwice)
	require.Len(t, findings, 3, "the ignored one is not alerted")
	page := d.page("/workspaces/files")
	require.Contains(t, page, "managed_twice")
	require.Contains(t, page, "managed by ws-a: dwtest_file.shared and ws-b: dwtest_file.shared")
	require.Contains(t, page, "2 unmanaged · 1 managed twice")
	require.Contains(t, page, "driftwatch adopt files '"+html.EscapeString(addr("hand2.txt"))+"'")
	var api struct {
		Findings []drift.Finding `json:"findings"`
	}
	d.getJSON("/api/v1/workspaces/files", &api)
	require.Len(t, api.Findings, 4)
	require.Equal(t, drift.KindManagedTwice, api.Findings[0].Kind)
	require.Equal(t, []string{"ws-a: dwtest_file.shared", "ws-b: dwtest_file.shared"}, api.Findings[0].ManagedBy)

	// A hand-made file deleted: the incident updates to one unmanaged.
	require.NoError(t, os.Remove(filepath.Join(objs, "hand1.txt")))
	d.eventually("the incident updated", 60*time.Second, func() bool {
		dls := hook.Deliveries()
		last := dls[len(dls)-1].Payload
		return last.Incident.Workspace == "files" && last.Event == "update" && last.Incident.Counts.Unmanaged == 1
	})

	// The daemon's API adopts hand2: proven, with its import block and
	// the file to copy; the audit log names who asked. A workspace that
	// is not a scan, and no findings, are refused.
	code, body := d.send(http.MethodPost, "/api/v1/workspaces/files/adopt", opsToken, `{"findings": [`+strconv.Quote(addr("hand2.txt"))+`]}`)
	require.Equal(t, http.StatusOK, code, body)
	var adopted apitypes.Adoption
	require.NoError(t, json.Unmarshal([]byte(body), &adopted))
	require.Equal(t, "proven", adopted.State, body)
	require.True(t, adopted.Proven)
	require.Empty(t, adopted.Missing)
	require.Equal(t, "token:ops", adopted.RequestedBy)
	require.Len(t, adopted.Adopted, 1)
	require.Equal(t, addr("hand2.txt"), adopted.Adopted[0].Finding)
	require.Regexp(t, `(?s)^import \{\n\s+to\s+= dwtest_file\.\S+\n\s+provider\s+= dwtest\n\s+identity\s+= \{\n\s+filename = "`+regexp.QuoteMeta(filepath.Join(objs, "hand2.txt"))+`"\n\s+\}\n\}$`, adopted.Adopted[0].Import)
	require.Contains(t, adopted.Adopted[0].Config, `resource "dwtest_file"`)
	require.Contains(t, adopted.File, adopted.Adopted[0].Import)
	require.Equal(t, "driftwatch_adopt.tf", adopted.FileName)
	code, body = d.send(http.MethodPost, "/api/v1/workspaces/ws-a/adopt", opsToken, `{"findings": ["x"]}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = d.send(http.MethodPost, "/api/v1/workspaces/files/adopt", opsToken, `{"findings": []}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	var audit struct {
		Entries []struct{ Actor, Action, Target, Result string } `json:"entries"`
	}
	d.getJSON("/api/v1/audit?action=unmanaged.adopt", &audit)
	require.Len(t, audit.Entries, 3)
	first := audit.Entries[2] // newest first
	require.Equal(t, []string{"token:ops", "unmanaged.adopt", "files", "ok"}, []string{first.Actor, first.Action, first.Target, first.Result})

	// `driftwatch adopt --token-file` asks the daemon: the same answer.
	remote := filepath.Join(e.root, "remote-adopted.tf")
	a := driftwatch(t, nil, "adopt", "--token-file", opsFile, "--server", "http://"+listen, "--output", remote, "files", addr("hand2.txt"))
	require.Equal(t, 0, a.code, a.stderr)
	require.Contains(t, a.stderr, "adopting  "+addr("hand2.txt"))
	require.Contains(t, a.stderr, "proven: a plan of the generated configuration imports them and changes nothing else")
	require.Contains(t, mustRead(t, remote), adopted.Adopted[0].Import)
	require.NotContains(t, a.stdout+a.stderr, opsToken)

	// adopt: import blocks for hand2, proven; ws-c applies them and owns
	// the file; the next scan no longer lists it.
	out := filepath.Join(dirs["ws-c"], "adopted.tf")
	a = driftwatch(t, nil, "adopt", "--config", cfg, "--output", out, "files", addr("hand2.txt"))
	require.Equal(t, 0, a.code, a.stderr)
	require.Contains(t, a.stderr, "adopting  "+addr("hand2.txt"))
	require.Contains(t, a.stderr, "proven: a plan of the generated configuration imports them and changes nothing else")
	gen := mustRead(t, out)
	require.Contains(t, gen, "import {")
	require.Contains(t, gen, filepath.Join(objs, "hand2.txt"))
	e.apply(t, dirs["ws-c"])
	d.eventually("hand2 adopted: only the shared one left", 90*time.Second, func() bool {
		dls := hook.Deliveries()
		last := dls[len(dls)-1].Payload
		return last.Incident.Workspace == "files" && last.Incident.Counts.Unmanaged == 0 && last.Incident.Counts.ManagedTwice == 1
	})

	// A finding the scan no longer lists cannot be adopted.
	a = driftwatch(t, nil, "adopt", "--config", cfg, "files", addr("hand1.txt"))
	require.Equal(t, 1, a.code)
	require.Contains(t, a.stderr, "the scan's query lists none of the named resources")
	a = driftwatch(t, nil, "adopt", "--token-file", opsFile, "--server", "http://"+listen, "files", addr("hand1.txt"))
	require.Equal(t, 1, a.code, a.stderr)
	require.Contains(t, a.stderr, "the scan's query lists none of the named resources")
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}

// TestKubeScan: in kubernetes mode a scan runs as a Job like a plan, and
// its list reaches the daemon over the Job's wire. The workspace it
// compares with is checked by a Terraform older than resource identities
// (the state holds none): its file is told apart by its id, the
// hand-made one is unmanaged.
func TestKubeScan(t *testing.T) {
	parallel(t)
	query, _, _ := toolsByQuery(t)
	k := startKubeEnv(t)
	out := filepath.Join(k.e.root, "out")
	require.NoError(t, os.WriteFile(filepath.Join(out, "hand.txt"), []byte("by hand"), 0o644))
	k.e.workspace(t, "scan", map[string]string{"main.tf": `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
`})
	k.extraWorkspaces = fmt.Sprintf(`scans:
  - name: files
    source: { path: ./scan }
    binary: %s
    types: [dwtest_file]
    config: { directory: %s }`, query[0], out)
	listen := freePort(t)
	d := startDaemon(t, k.config(t, "driftwatch.yaml", listen, "data", ""), listen)
	d.eventually("the scan's verdict through a Job", 3*time.Minute, func() bool {
		return d.workspaces()["files"].Status == "drift"
	})
	var run struct {
		Status, Tool string
		Findings     []drift.Finding `json:"findings"`
	}
	d.getJSON("/api/v1/runs/"+d.workspaces()["files"].LastRunID, &run)
	require.Equal(t, []drift.Finding{{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="` + filepath.Join(out, "hand.txt") + `"]`,
		Type: "dwtest_file", Action: "none", Attributes: []string{}, SeenIn: []string{}, Detail: filepath.Join(out, "hand.txt")}}, run.Findings)
	require.True(t, strings.HasPrefix(run.Tool, "terraform 1.1"), run.Tool)
	jobs, err := k.cs.BatchV1().Jobs(k.ns).List(t.Context(), metav1.ListOptions{
		LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy + "," + kube.LabelWorkspace + "=files",
	})
	require.NoError(t, err)
	require.NotEmpty(t, jobs.Items, "the scan ran as a Job")
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second), d.logs.String())
}
