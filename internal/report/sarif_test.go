package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// writeTree creates files (slash path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// located builds a report whose workspaces have source trees: prod
// (relative SourceDir, a local module, .tf.json, a backend block), k8s
// (no main.tf), broken (errored), ext (outside the base directory) and
// nosrc (no SourceDir).
func located(t *testing.T) (r *Report, base, outside string) {
	t.Helper()
	base, outside = t.TempDir(), t.TempDir()
	writeTree(t, base, map[string]string{
		"envs/prod/main.tf": `terraform {
  backend "s3" {}
}

resource "aws_instance" "web" {
  count = 2
}

module "net" {
  source = "../../modules/net"
}
`,
		"envs/prod/extra.tf.json": `{
  "resource": {
    "null_resource": {
      "j": {}
    }
  }
}
`,
		"modules/net/vpc.tf":    "\n\nresource \"aws_vpc\" \"main\" {}\n",
		"envs/k8s/providers.tf": "provider \"helm\" {}\n",
		"envs/k8s/helm.tf":      "\nresource \"helm_release\" \"x\" {}\n",
		"envs/broken/main.tf":   "resource {\n",
	})
	writeTree(t, outside, map[string]string{"main.tf": "\nresource \"aws_iam_role\" \"r\" {}\n"})
	t0 := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	r = New(t0, t0.Add(time.Minute), []drift.Result{
		{Workspace: "prod", Status: drift.StatusDrift, Findings: []drift.Finding{
			{Kind: drift.KindDrift, Address: "aws_instance.web[0]", Type: "aws_instance", Action: "update", Attributes: []string{"tags.Owner", "instance_type"}},
			{Kind: drift.KindDrift, Address: "aws_instance.web[1]", Type: "aws_instance", Action: "update", Attributes: []string{"tags"}, Ignored: true},
			{Kind: drift.KindDrift, Address: "module.net.aws_vpc.main", Type: "aws_vpc", Action: "update", Attributes: []string{"cidr_block"}},
			{Kind: drift.KindPending, Address: "null_resource.j", Type: "null_resource", Action: "create"},
			{Kind: drift.KindBackend, Address: "backend.s3", Action: "none", Detail: "state is not encrypted at rest (encrypt is not true)"},
			{Kind: drift.KindNoise, Address: "data.aws_ami.x", Type: "aws_ami", Action: "read"},
		}},
		{Workspace: "k8s", Status: drift.StatusForbidden, Findings: []drift.Finding{
			{Kind: drift.KindForbidden, Address: `helm_release.x["a"]`, Type: "helm_release", Action: "none", SeenIn: []string{"config", "state"}},
		}},
		{Workspace: "broken", Status: drift.StatusErrored, Error: "plan: main.tf:1,10: invalid block definition"},
		{Workspace: "ext", Status: drift.StatusDrift, Findings: []drift.Finding{
			{Kind: drift.KindDrift, Address: "aws_iam_role.r", Type: "aws_iam_role", Action: "update", Attributes: []string{"assume_role_policy"}},
		}},
		{Workspace: "nosrc", Status: drift.StatusDrift, Findings: []drift.Finding{
			{Kind: drift.KindDrift, Address: "aws_instance.web[0]", Type: "aws_instance", Action: "delete"},
		}},
	})
	r.Workspaces[0].SourceDir = filepath.Join("envs", "prod")
	r.Workspaces[1].SourceDir = filepath.Join(base, "envs", "k8s")
	r.Workspaces[2].SourceDir = filepath.Join(base, "envs", "broken")
	r.Workspaces[3].SourceDir = outside
	r.SourceRoot = base
	return r, base, outside
}

func sarifOf(t *testing.T, r *Report) ([]byte, sarifLog) {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteSARIF(t.Context(), &b, r))
	var log sarifLog
	require.NoError(t, json.Unmarshal(b.Bytes(), &log))
	return b.Bytes(), log
}

// sarifSchema compiles the official SARIF 2.1.0 schema, formats asserted.
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile(filepath.Join("testdata", "sarif-schema-2.1.0.json"))
	require.NoError(t, err)
	return sch
}

func validateSARIF(t *testing.T, sch *jsonschema.Schema, doc []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	require.NoError(t, err)
	return sch.Validate(inst)
}

func TestSARIFValidatesAgainstTheSchema(t *testing.T) {
	sch := sarifSchema(t)
	r, base, _ := located(t)
	doc, _ := sarifOf(t, r)
	require.NoError(t, validateSARIF(t, sch, doc))

	t.Run("an empty report", func(t *testing.T) {
		doc, log := sarifOf(t, New(time.Now(), time.Now(), nil))
		require.NoError(t, validateSARIF(t, sch, doc))
		require.Empty(t, log.Runs[0].Results)
	})
	t.Run("names with quotes, commas, colons, newlines and spaces", func(t *testing.T) {
		r := tricky(t)
		writeTree(t, r.SourceRoot, map[string]string{"with space/main.tf": "resource \"a_b\" \"c\" {}\n"})
		r.Workspaces[1].SourceDir = "with space"
		doc, log := sarifOf(t, r)
		require.NoError(t, validateSARIF(t, sch, doc))
		res := log.Runs[0].Results
		require.Equal(t, "envs/a,b:c/main.tf", res[0].Locations[0].PhysicalLocation.ArtifactLocation.URI)
		require.Equal(t, "with%20space/main.tf", res[len(res)-1].Locations[0].PhysicalLocation.ArtifactLocation.URI)
	})
	t.Run("through Write, relative to the working directory", func(t *testing.T) {
		require.Contains(t, Formats, "sarif")
		t.Chdir(base)
		r.SourceRoot = ""
		var b bytes.Buffer
		require.NoError(t, Write(&b, "sarif", r))
		require.NoError(t, validateSARIF(t, sch, b.Bytes()))
		require.JSONEq(t, string(doc), b.String(), "the working directory is the default SourceRoot")
	})
	t.Run("the validator rejects what the schema forbids", func(t *testing.T) {
		bad := bytes.Replace(doc, []byte(`"level": "warning"`), []byte(`"level": "fatal"`), 1)
		require.NotEqual(t, doc, bad)
		require.Error(t, validateSARIF(t, sch, bad))
	})
}

func TestSARIFResults(t *testing.T) {
	r, base, outside := located(t)
	_, log := sarifOf(t, r)
	require.Len(t, log.Runs, 1)
	run := log.Runs[0]
	require.Equal(t, "2.1.0", log.Version)
	require.Equal(t, "driftwatch", run.Tool.Driver.Name)
	require.NotEmpty(t, run.Tool.Driver.Version)

	levels := map[string]string{}
	for _, rule := range run.Tool.Driver.Rules {
		levels[rule.ID] = rule.DefaultConfiguration.Level
		require.NotEmpty(t, rule.ShortDescription.Text)
		require.NotEmpty(t, rule.Help.Text)
	}
	require.Equal(t, map[string]string{
		"driftwatch/drift": "error", "driftwatch/forbidden": "error", "driftwatch/errored": "error",
		"driftwatch/check": "error", "driftwatch/pending": "warning", "driftwatch/backend": "warning", "driftwatch/unmanaged": "error", "driftwatch/managed_twice": "error",
	}, levels)

	type got struct {
		Rule, Level, URI, Base string
		Line                   int
		Message                string
	}
	var results []got
	for _, res := range run.Results {
		require.Equal(t, res.RuleID, run.Tool.Driver.Rules[res.RuleIndex].ID)
		pl := res.Locations[0].PhysicalLocation
		results = append(results, got{res.RuleID, res.Level, pl.ArtifactLocation.URI, pl.ArtifactLocation.URIBaseID,
			pl.Region.StartLine, res.Message.Text})
	}
	extURI := fileURI(filepath.Join(outside, "main.tf"), false)
	require.Equal(t, []got{
		{"driftwatch/drift", "error", "envs/prod/main.tf", "%SRCROOT%", 5,
			`Workspace "prod": drift on aws_instance.web[0] (update): tags.Owner, instance_type`},
		{"driftwatch/drift", "error", "modules/net/vpc.tf", "%SRCROOT%", 3,
			`Workspace "prod": drift on module.net.aws_vpc.main (update): cidr_block`},
		{"driftwatch/pending", "warning", "envs/prod/extra.tf.json", "%SRCROOT%", 4,
			`Workspace "prod": pending on null_resource.j (create)`},
		{"driftwatch/backend", "warning", "envs/prod/main.tf", "%SRCROOT%", 2,
			`Workspace "prod": backend on backend.s3: state is not encrypted at rest (encrypt is not true)`},
		{"driftwatch/forbidden", "error", "envs/k8s/helm.tf", "%SRCROOT%", 2,
			`Workspace "k8s": forbidden on helm_release.x["a"]: in config, state`},
		{"driftwatch/errored", "error", "envs/broken/main.tf", "%SRCROOT%", 1,
			`Workspace "broken" errored: plan: main.tf:1,10: invalid block definition`},
		{"driftwatch/drift", "error", extURI, "", 2,
			`Workspace "ext": drift on aws_iam_role.r (update): assume_role_policy`},
		{"driftwatch/drift", "error", "main.tf", "%SRCROOT%", 1,
			`Workspace "nosrc": drift on aws_instance.web[0] (delete)`},
	}, results, "noise and ignored findings are no results")
	require.Equal(t, fileURI(base, true), run.OriginalURIBaseIDs["%SRCROOT%"].URI)
	require.True(t, strings.HasSuffix(run.OriginalURIBaseIDs["%SRCROOT%"].URI, "/"))
	require.Equal(t, "aws_instance.web[0]", run.Results[0].Locations[0].LogicalLocations[0].FullyQualifiedName)
}

// A failing check points at its check, output or variable block (in a
// local module too), not at the root module's main.tf, line 1; SARIF
// results and GitHub annotations alike.
func TestChecksAreLocated(t *testing.T) {
	base := t.TempDir()
	writeTree(t, base, map[string]string{
		"checks/main.tf": "module \"app\" {\n  source = \"./app\"\n}\n",
		"checks/checks.tf": `# health of the service

check "health" {
  assert {
    condition     = true
    error_message = "down"
  }
}

output "url" {
  value = "x"
  precondition {
    condition     = true
    error_message = "no url"
  }
}
`,
		"checks/variables.tf": "\nvariable \"size\" {\n  validation {\n    condition     = true\n    error_message = \"too big\"\n  }\n}\n",
		"checks/app/main.tf":  "\n\ncheck \"inner\" {\n  assert {\n    condition     = true\n    error_message = \"x\"\n  }\n}\n",
	})
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	r := New(t0, t0, []drift.Result{{Workspace: "checks", Status: drift.StatusValidation, Findings: []drift.Finding{
		{Kind: drift.KindCheck, Address: "check.health", Type: "check", Action: "fail", Detail: "down"},
		{Kind: drift.KindCheck, Address: "output.url", Type: "output", Action: "fail", Detail: "no url"},
		{Kind: drift.KindCheck, Address: "var.size", Type: "var", Action: "fail", Detail: "too big"},
		{Kind: drift.KindCheck, Address: "module.app.check.inner", Type: "check", Action: "unknown"},
	}}})
	r.Workspaces[0].SourceDir = "checks"
	r.SourceRoot = base

	_, log := sarifOf(t, r)
	run := log.Runs[0]
	var got []string
	for _, res := range run.Results {
		rule := run.Tool.Driver.Rules[res.RuleIndex]
		pl := res.Locations[0].PhysicalLocation
		got = append(got, fmt.Sprintf("%s %s %s:%d", res.RuleID, res.Level, pl.ArtifactLocation.URI, pl.Region.StartLine))
		require.Equal(t, "FailingCheck", rule.Name, "a rule of its own, not the made-up one of an unknown kind")
	}
	require.Equal(t, []string{
		"driftwatch/check error checks/checks.tf:3",
		"driftwatch/check error checks/checks.tf:10",
		"driftwatch/check error checks/variables.tf:2",
		"driftwatch/check error checks/app/main.tf:3",
	}, got)

	var out bytes.Buffer
	require.NoError(t, WriteGitHub(t.Context(), &out, "", r))
	require.Equal(t, strings.Join([]string{
		`::error file=checks/checks.tf,line=3,title=driftwatch check in checks::Workspace "checks": check on check.health (fail): down`,
		`::error file=checks/checks.tf,line=10,title=driftwatch check in checks::Workspace "checks": check on output.url (fail): no url`,
		`::error file=checks/variables.tf,line=2,title=driftwatch check in checks::Workspace "checks": check on var.size (fail): too big`,
		`::error file=checks/app/main.tf,line=3,title=driftwatch check in checks::Workspace "checks": check on module.app.check.inner (unknown)`,
		``,
	}, "\n"), out.String())
}

func TestSARIFFingerprints(t *testing.T) {
	r, base, _ := located(t)
	_, before := sarifOf(t, r)
	// The block moves down three lines and the attributes change: the
	// finding is the same one to code scanning.
	writeTree(t, base, map[string]string{"envs/prod/main.tf": "\n\n\n" + `terraform {
  backend "s3" {}
}

resource "aws_instance" "web" {}
`})
	r.Workspaces[0].Findings[0].Attributes = []string{"ami"}
	_, after := sarifOf(t, r)
	b, a := before.Runs[0].Results[0], after.Runs[0].Results[0]
	require.Equal(t, 5, b.Locations[0].PhysicalLocation.Region.StartLine)
	require.Equal(t, 8, a.Locations[0].PhysicalLocation.Region.StartLine)
	require.Equal(t, b.PartialFingerprints, a.PartialFingerprints)
	require.Len(t, b.PartialFingerprints, 1)

	seen := map[string]string{}
	for _, res := range before.Runs[0].Results {
		fp := res.PartialFingerprints[sarifFingerprint]
		require.Len(t, fp, 64)
		require.NotContains(t, seen, fp, "fingerprints are unique per workspace, kind and address: %s and %s", seen[fp], res.Message.Text)
		seen[fp] = res.Message.Text
	}
	// The same address in another workspace is another finding (prod and
	// nosrc both have aws_instance.web[0]).
	require.Len(t, seen, len(before.Runs[0].Results))
}

func TestSARIFFingerprintsOfOneAddress(t *testing.T) {
	base := t.TempDir()
	t0 := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	r := New(t0, t0, []drift.Result{{Workspace: "w", Status: drift.StatusDrift, Findings: []drift.Finding{
		{Kind: drift.KindBackend, Address: "backend.local", Action: "none", Detail: "no backend block"},
		{Kind: drift.KindBackend, Address: "backend.local", Action: "none", Detail: "a local state file is readable by others"},
		{Kind: drift.KindDrift, Address: "a_b.c", Action: "update"},
		{Kind: drift.KindDrift, Address: "a_b.c", Action: "update"},
	}}})
	r.SourceRoot = base
	_, log := sarifOf(t, r)
	fps := map[string]bool{}
	for _, res := range log.Runs[0].Results {
		fps[res.PartialFingerprints[sarifFingerprint]] = true
	}
	require.Len(t, fps, 4, "two backend findings of one backend, and even a repeated finding, stay apart")
	_, again := sarifOf(t, r)
	require.Equal(t, log.Runs[0].Results, again.Runs[0].Results, "and the same on every run")
}
