package tfsession

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// render feeds a stream to a planLog in chunks of n bytes (lines split
// across writes, as a pipe delivers them) and returns the rendered log
// and the failure reason.
func render(t *testing.T, stream []byte, n int) (log, reason string) {
	t.Helper()
	var out bytes.Buffer
	pl := newPlanLog(&out, nil, varOrigins{})
	pl.now = func() time.Time { return time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC) }
	for len(stream) > 0 {
		k := min(n, len(stream))
		written, err := pl.Write(stream[:k])
		require.NoError(t, err)
		require.Equal(t, k, written)
		stream = stream[k:]
	}
	pl.flush()
	return out.String(), pl.reason()
}

// Streams recorded from real Terraform and OpenTofu (testdata/planjson)
// render to addresses, actions, the summary and diagnostics, and never to
// a value: not the drifted content, not a planned value, not an id from a
// refresh message, not a diagnostic's snippet or its values.
func TestPlanLogRecordedStreams(t *testing.T) {
	drift := "refresh  dwtest_file.a: refreshing\n" +
		"refresh  dwtest_file.a: refreshed after 0s\n" +
		"drift  ~   update  dwtest_file.a (changed outside Terraform)\n" +
		"plan   +   create  terraform_data.new\n" +
		"plan   ~   update  dwtest_file.a\n" +
		"Plan: 1 to add, 1 to change, 0 to destroy.\n"
	precondition := "Plan: 0 to add, 0 to change, 0 to destroy.\n" +
		"Error: Resource precondition failed (main.tf line 9)\n" +
		"    The name is too long.\n"
	cases := []struct {
		file, want, reason string
	}{
		{file: "terraform-drift.jsonl", want: "Terraform 1.11.4\n" + drift},
		{file: "tofu-drift.jsonl", want: "OpenTofu 1.10.6\n" + drift},
		{file: "terraform-precondition.jsonl", want: "Terraform 1.11.4\n" + precondition, reason: "Error: Resource precondition failed (terraform_data.x, main.tf line 9): The name is too long."},
		{file: "tofu-precondition.jsonl", want: "OpenTofu 1.10.6\n" + precondition, reason: "Error: Resource precondition failed (terraform_data.x, main.tf line 9): The name is too long."},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			stream, err := os.ReadFile(filepath.Join("testdata", "planjson", tc.file))
			require.NoError(t, err)
			if strings.Contains(tc.file, "precondition") {
				require.Contains(t, string(stream), `"values":[{"traversal":"var.s","statement":"is \"CANARY-snippet-value\""}]`, "the recording carries the value")
			}
			for _, n := range []int{len(stream), 7, 1} {
				log, reason := render(t, stream, n)
				require.Equal(t, tc.want, log, "chunks of %d bytes", n)
				require.Equal(t, tc.reason, reason)
				require.NotContains(t, log, "CANARY")
				require.NotContains(t, log, "/tmp/rec/out/a.txt", "refresh messages carry ids")
				require.NotContains(t, log, "length(var.s)", "snippets carry code and values")
			}
		})
	}
}

// Diagnostics hand-written in the stream's format: warnings are shown but
// are no reason; several errors are counted; the detail is shown (the
// log's writer redacts it), snippet values never; lines that are not UI
// messages and a last line without its newline are handled.
func TestPlanLogDiagnostics(t *testing.T) {
	stream := strings.Join([]string{
		`{"@level":"info","@message":"Terraform 1.11.4","type":"version","terraform":"1.11.4","ui":"1.2"}`,
		`not json at all: CANARY-garbage`,
		`{"@level":"warn","@message":"Warning: Deprecated","type":"diagnostic","diagnostic":{"severity":"warning","summary":"Deprecated attribute","detail":"Use x instead.","address":"aws_s3_bucket.b","range":{"filename":"s3.tf","start":{"line":4,"column":3,"byte":40}},"snippet":{"code":"  acl = \"CANARY-warning-snippet\"","values":[]}}}`,
		`{"@level":"error","@message":"Error: Invalid value","type":"diagnostic","diagnostic":{"severity":"error","summary":"Invalid value for variable","detail":"The region must be\none of the allowed ones.","range":{"filename":"main.tf","start":{"line":12,"column":1,"byte":200}},"snippet":{"context":"variable \"region\"","code":"  condition = contains(local.allowed, var.region)","start_line":12,"values":[{"traversal":"var.region","statement":"is \"CANARY-value-in-snippet\""},{"traversal":"local.allowed","statement":"is list of string with 2 elements"}]}}}`,
		`{"@level":"info","@message":"Outputs: 1","type":"outputs","outputs":{"pw":{"sensitive":false,"action":"create","value":"CANARY-output"}}}`,
		`{"@level":"info","@message":"aws_instance.a: Refreshing state... [id=CANARY-id]","type":"refresh_start","hook":{"resource":{"addr":"aws_instance.a"},"id_key":"id","id_value":"CANARY-id"}}`,
		`{"@level":"info","@message":"null_resource.p (local-exec): CANARY-provisioner","type":"provision_progress","hook":{"resource":{"addr":"null_resource.p"},"output":"CANARY-provisioner"}}`,
		`{"@level":"info","@message":"aws_instance.a: Plan to replace","type":"planned_change","change":{"resource":{"addr":"aws_instance.a"},"action":"replace","reason":"cannot_update"}}`,
		`{"@level":"info","@message":"Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.","type":"change_summary","changes":{"add":0,"change":0,"import":1,"remove":0,"operation":"plan"}}`,
		`{"@level":"error","@message":"Error: Provider error","type":"diagnostic","diagnostic":{"severity":"error","summary":"Provider produced an error","address":"aws_instance.a","detail":""}}`,
	}, "\n") // no newline after the last line
	log, reason := render(t, []byte(stream), 5)
	require.Equal(t, "Terraform 1.11.4\n"+
		"Warning: Deprecated attribute (aws_s3_bucket.b, s3.tf line 4)\n"+
		"    Use x instead.\n"+
		"Error: Invalid value for variable (var.region, main.tf line 12)\n"+
		"    The region must be\n"+
		"    one of the allowed ones.\n"+
		"refresh  aws_instance.a: refreshing\n"+
		"plan   -/+ replace  aws_instance.a (cannot update)\n"+
		"Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.\n"+
		"Error: Provider produced an error (aws_instance.a)\n", log)
	require.Equal(t, "Error: Invalid value for variable (var.region, main.tf line 12): The region must be one of the allowed ones. (and 1 more error)", reason,
		"a failed condition's reason names its block and keeps its author's message, on one line")
	require.NotContains(t, log, "CANARY")
	require.NotContains(t, reason, "CANARY")
}

// An overlong line that never ends is dropped, not held without bound.
func TestPlanLogBoundsAnUnendedLine(t *testing.T) {
	var out bytes.Buffer
	pl := newPlanLog(&out, nil, varOrigins{})
	_, _ = pl.Write([]byte(`{"type":"version","@message":"` + strings.Repeat("x", maxLogLine*16) + `"}`))
	require.Empty(t, pl.buf)
	_, _ = pl.Write([]byte("\n" + `{"type":"version","@message":"Terraform 1.11.4"}` + "\n"))
	pl.flush()
	require.Equal(t, "Terraform 1.11.4\n", out.String())
}

func TestWriteChanges(t *testing.T) {
	var out bytes.Buffer
	writeChanges(&out, &planparse.Plan{
		Drift:         []planparse.Change{{Address: "dwtest_file.a", Actions: []string{"update"}, Attributes: []string{"content"}}},
		Changes:       []planparse.Change{{Address: "terraform_data.x", Actions: []string{"delete", "create"}}},
		OutputChanges: []string{"o"},
	})
	require.Equal(t, "drift   update  dwtest_file.a  attributes: content\n"+
		"change  delete,create  terraform_data.x\n"+
		"output  o\n", out.String())
	out.Reset()
	writeChanges(&out, &planparse.Plan{})
	require.Equal(t, "no changes\n", out.String())
}

// A plan whose read of the state failed (recorded from OpenTofu 1.10.6
// and Terraform 1.11.4, the store behind s3test.FaultProxy resetting the
// connection): the reason says the state backend could not be reached,
// not the SDK's message with the request's URL; the log keeps Terraform's
// own line.
func TestPlanLogBackendFailure(t *testing.T) {
	for tool, line := range map[string]string{
		"tofu":      `{"@level":"error","@message":"Error: error loading state: operation error S3: GetObject, exceeded maximum number of attempts, 5, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Get \"http://127.0.0.1:45249/tfstate-orba18o5/f/ws.tfstate?x-id=GetObject\": read tcp 127.0.0.1:46482-\u003e127.0.0.1:45249: read: connection reset by peer","@module":"tofu.ui","@timestamp":"2026-11-25T18:15:31.937885Z","diagnostic":{"severity":"error","summary":"error loading state: operation error S3: GetObject, exceeded maximum number of attempts, 5, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Get \"http://127.0.0.1:45249/tfstate-orba18o5/f/ws.tfstate?x-id=GetObject\": read tcp 127.0.0.1:46482-\u003e127.0.0.1:45249: read: connection reset by peer","detail":""},"type":"diagnostic"}`,
		"terraform": `{"@level":"error","@message":"Error: error loading state: Unable to access object \"f/ws.tfstate\" in S3 bucket \"tfstate-i6fk1t42\": operation error S3: GetObject, exceeded maximum number of attempts, 5, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Get \"http://127.0.0.1:42229/tfstate-i6fk1t42/f/ws.tfstate?x-id=GetObject\": read tcp 127.0.0.1:37472-\u003e127.0.0.1:42229: read: connection reset by peer","@module":"terraform.ui","@timestamp":"2026-11-25T18:14:19.336190Z","diagnostic":{"severity":"error","summary":"error loading state: Unable to access object \"f/ws.tfstate\" in S3 bucket \"tfstate-i6fk1t42\": operation error S3: GetObject, exceeded maximum number of attempts, 5, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Get \"http://127.0.0.1:42229/tfstate-i6fk1t42/f/ws.tfstate?x-id=GetObject\": read tcp 127.0.0.1:37472-\u003e127.0.0.1:42229: read: connection reset by peer","detail":""},"type":"diagnostic"}`,
	} {
		t.Run(tool, func(t *testing.T) {
			log, reason := render(t, []byte(line+"\n"), 64)
			conn := map[string]string{"tofu": "127.0.0.1:46482->127.0.0.1:45249", "terraform": "127.0.0.1:37472->127.0.0.1:42229"}[tool]
			require.Equal(t, "the state backend could not be reached: S3 GetObject failed after 5 attempts: read tcp "+conn+": read: connection reset by peer (error loading state)", reason)
			require.NotContains(t, reason, "http://")
			require.True(t, strings.HasPrefix(log, "Error: error loading state: "), log)
		})
	}
}

// The stream's summary, which decides whether show -json can be skipped,
// counts every kind of change: a drift or planned change, a non-no-op
// output, a non-zero summary each make a plan "not nothing", as does a
// stream cut short before its change summary.
func TestPlanLogSummary(t *testing.T) {
	const (
		version = `{"type":"version","@message":"Terraform 1.11.4","terraform":"1.11.4"}`
		zero    = `{"type":"change_summary","changes":{"add":0,"change":0,"import":0,"remove":0,"operation":"plan"}}`
	)
	summarise := func(lines ...string) streamSummary {
		pl := newPlanLog(io.Discard, nil, varOrigins{})
		_, _ = pl.Write([]byte(strings.Join(lines, "\n") + "\n"))
		pl.flush()
		return pl.summary()
	}
	require.True(t, summarise(version, zero).nothing(), "a complete stream without changes")
	require.True(t, summarise(version, `{"type":"outputs","outputs":{"o":{"sensitive":false,"action":"noop"}}}`, zero).nothing(), "unchanged outputs")
	for name, lines := range map[string][]string{
		"drift":           {version, `{"type":"resource_drift","change":{"resource":{"addr":"a.b"},"action":"update"}}`, zero},
		"planned change":  {version, `{"type":"planned_change","change":{"resource":{"addr":"a.b"},"action":"move"}}`, zero},
		"output change":   {version, `{"type":"outputs","outputs":{"o":{"sensitive":true,"action":"create"}}}`, zero},
		"import":          {version, `{"type":"change_summary","changes":{"add":0,"change":0,"import":1,"remove":0}}`},
		"no summary":      {version},
		"no version":      {zero},
		"a line unread":   {version, `{"type":"resource_drift","change":`, zero},
		"a failing check": {version, zero, `{"type":"diagnostic","diagnostic":{"severity":"warning","summary":"Check block assertion failed","detail":"n is 5","snippet":{"context":"check \"health\"","values":[]}}}`},
	} {
		require.False(t, summarise(lines...).nothing(), name)
	}
	for _, file := range []string{"terraform-drift.jsonl", "tofu-drift.jsonl"} {
		stream, err := os.ReadFile(filepath.Join("testdata", "planjson", file))
		require.NoError(t, err)
		s := summarise(string(stream))
		require.Equal(t, streamSummary{version: true, summary: true, changes: 2, drift: 1, planned: 2}, s, file)
	}
}

// A failed condition's error keeps its author's message without
// Terraform's trailer, redacted and capped; warnings from a check block
// are counted (a plan with a failing check is not "nothing"), and a
// nested data source's failure is remembered as the check's problem reads.
func TestPlanLogConditions(t *testing.T) {
	stream := strings.Join([]string{
		`{"type":"version","@message":"Terraform 1.11.4"}`,
		`{"type":"change_summary","changes":{"add":0,"change":0,"import":0,"remove":0}}`,
		`{"type":"diagnostic","diagnostic":{"severity":"warning","summary":"Check block assertion failed","detail":"token CANARY-secret is stale","snippet":{"context":"check \"health\"","values":[{"traversal":"var.n","statement":"is CANARY-snippet"}]}}}`,
		`{"type":"diagnostic","diagnostic":{"severity":"warning","summary":"Cannot read file","detail":"open /x: no such file","address":"data.dwtest_file.f","snippet":{"context":"check \"ds\"","values":[]}}}`,
		`{"type":"diagnostic","diagnostic":{"severity":"error","summary":"Invalid value for variable","detail":"n must be < 10, not CANARY-secret.\n\nThis was checked by the validation rule at main.tf:4,3-13.","range":{"filename":"main.tf","start":{"line":4}}}}`,
		`{"type":"diagnostic","diagnostic":{"severity":"error","summary":"Resource postcondition failed","detail":"` + strings.Repeat("long ", 100) + `","snippet":{"context":"resource \"terraform_data\" \"x\"","values":[]}}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	pl := newPlanLog(&out, func(s string) string { return strings.ReplaceAll(s, "CANARY-secret", "[REDACTED]") }, varOrigins{})
	_, _ = pl.Write([]byte(stream))
	pl.flush()
	require.Equal(t, 2, pl.summary().checks)
	require.False(t, pl.summary().nothing())
	require.True(t, pl.checkDataFailure("Cannot read file: open /x: no such file"))
	require.False(t, pl.checkDataFailure("token CANARY-secret is stale"), "an assertion's failure is not a data source's")
	reason := pl.reason()
	require.True(t, strings.HasPrefix(reason, "Error: Invalid value for variable (main.tf line 4): n must be < 10, not [REDACTED]. (and 1 more error)"), reason)
	require.NotContains(t, reason, "CANARY")
	require.NotContains(t, out.String(), "CANARY-snippet")

	pl = newPlanLog(io.Discard, nil, varOrigins{})
	_, _ = pl.Write([]byte(strings.Split(stream, "\n")[5] + "\n"))
	reason = pl.reason()
	require.True(t, strings.HasPrefix(reason, "Error: Resource postcondition failed (terraform_data.x): long long"), reason)
	require.True(t, strings.HasSuffix(reason, "…"), "capped: %s", reason)
}

func TestBlockAddress(t *testing.T) {
	for in, want := range map[string]string{
		`check "health"`:                "check.health",
		`resource "terraform_data" "x"`: "terraform_data.x",
		`data "http" "api"`:             "data.http.api",
		`output "o"`:                    "output.o",
		`variable "n"`:                  "var.n",
		`module "m"`:                    "",
		``:                              "",
	} {
		require.Equal(t, want, blockAddress(in), in)
	}
}

// A failed variable validation names the variable and where its value
// came from, as Terraform and OpenTofu report it: never the run's own var
// file of the inventory's vars, nor a path in the run's copy of the source.
func TestVariableOrigins(t *testing.T) {
	vars := varOrigins{
		file:      "/tmp/dw-1/driftwatch-vars.tfvars.json",
		moduleDir: "/tmp/dw-1/src/envs/prod",
		inventory: map[string]bool{"size": true},
		env:       map[string]bool{"region": true, "zone": true},
	}
	diag := func(file string, line int, variable string) string {
		return `{"type":"diagnostic","diagnostic":{"severity":"error","summary":"Invalid value for variable","detail":"must be small\n\nThis was checked by the validation rule at main.tf:3,3-13.","range":{"filename":"` + file + `","start":{"line":` + strconv.Itoa(line) + `}},"snippet":{"context":null,"code":"x","values":[{"traversal":"` + variable + `","statement":"is CANARY-value"}]}}}`
	}
	for name, c := range map[string]struct {
		vars       varOrigins
		line, want string
	}{
		"terraform: the inventory's vars, through the run's var file": {vars, diag(vars.file, 1, "var.size"),
			"Error: Invalid value for variable (var.size, from the inventory's vars): must be small"},
		"opentofu: the declaration, for a variable the inventory sets": {vars, diag("main.tf", 1, "var.size"),
			"Error: Invalid value for variable (var.size, from the inventory's vars): must be small"},
		"the environment, when no var file can have set it": {vars, diag("main.tf", 1, "var.region"),
			"Error: Invalid value for variable (var.region, from TF_VAR_region in the workspace's env): must be small"},
		"a var file in the run's copy of the source, relative to the module": {varOrigins{moduleDir: vars.moduleDir, varFiles: true, env: vars.env},
			diag("/tmp/dw-1/src/envs/prod/prod.tfvars", 2, "var.zone"),
			"Error: Invalid value for variable (var.zone, prod.tfvars line 2): must be small"},
		"a default: the declaration": {varOrigins{}, diag("main.tf", 4, "var.n"),
			"Error: Invalid value for variable (var.n, main.tf line 4): must be small"},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			pl := newPlanLog(&out, nil, c.vars)
			_, err := pl.Write([]byte(c.line + "\n"))
			require.NoError(t, err)
			require.Equal(t, c.want, pl.reason())
			require.NotContains(t, out.String()+pl.reason(), "CANARY")
			require.NotContains(t, out.String()+pl.reason(), "driftwatch-vars")
			require.NotContains(t, out.String()+pl.reason(), "/tmp/dw-1")
		})
	}
}

// Progress: a resource's refresh and a data source's read as they start
// and end, with the time taken (the stream's elapsed_seconds, else the
// clock); no id; at most maxProgress lines a second, the rest counted.
func TestPlanLogProgress(t *testing.T) {
	var out bytes.Buffer
	pl := newPlanLog(&out, nil, varOrigins{})
	clock := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	pl.now = func() time.Time { return clock }
	write := func(lines ...string) {
		_, err := pl.Write([]byte(strings.Join(lines, "\n") + "\n"))
		require.NoError(t, err)
	}
	write(`{"type":"refresh_start","hook":{"resource":{"addr":"aws_db_instance.main"},"id_key":"id","id_value":"CANARY-id"}}`,
		`{"type":"apply_start","hook":{"resource":{"addr":"data.dwtest_sleep.slow"},"action":"read"}}`)
	clock = clock.Add(31 * time.Second)
	write(`{"type":"apply_progress","hook":{"resource":{"addr":"data.dwtest_sleep.slow"},"action":"read","elapsed_seconds":10}}`,
		`{"type":"refresh_complete","hook":{"resource":{"addr":"aws_db_instance.main"},"id_key":"id","id_value":"CANARY-id"}}`,
		`{"type":"apply_complete","hook":{"resource":{"addr":"data.dwtest_sleep.slow"},"action":"read","id_key":"id","id_value":"CANARY-id","elapsed_seconds":30}}`,
		`{"type":"apply_start","hook":{"resource":{"addr":"aws_instance.web"},"action":"create"}}`,
		`{"type":"apply_errored","hook":{"resource":{"addr":"aws_instance.web"},"action":"create","elapsed_seconds":2}}`)
	require.Equal(t, "refresh  aws_db_instance.main: refreshing\n"+
		"read     data.dwtest_sleep.slow: reading\n"+
		"read     data.dwtest_sleep.slow: still reading (10s)\n"+
		"refresh  aws_db_instance.main: refreshed after 31s\n"+
		"read     data.dwtest_sleep.slow: read after 30s\n"+
		"apply    aws_instance.web: creating\n"+
		"apply    aws_instance.web: create failed after 2s\n", out.String())
	require.NotContains(t, out.String(), "CANARY")

	// A burst of 50 refreshes in one second: 20 lines, then the count.
	out.Reset()
	clock = clock.Add(time.Minute)
	for i := range 50 {
		write(fmt.Sprintf(`{"type":"refresh_start","hook":{"resource":{"addr":"null_resource.n[%d]"}}}`, i))
	}
	clock = clock.Add(time.Second)
	write(`{"type":"refresh_complete","hook":{"resource":{"addr":"null_resource.n[0]"}}}`)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, maxProgress+2)
	require.Equal(t, "refresh  null_resource.n[19]: refreshing", lines[maxProgress-1])
	require.Equal(t, "(30 more progress lines)", lines[maxProgress])
	require.Equal(t, "refresh  null_resource.n[0]: refreshed after 1s", lines[maxProgress+1])
}
