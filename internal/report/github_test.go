package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// tricky is a report whose workspace name, directory, addresses and
// attribute paths hold every character the workflow-command rules escape.
func tricky(t *testing.T) *Report {
	t.Helper()
	base := t.TempDir()
	writeTree(t, base, map[string]string{
		"envs/a,b:c/main.tf": `
resource "aws_s3_bucket" "b" {
  for_each = var.buckets
}

module "m" {
  source = "./mod"
}
`,
		"envs/a,b:c/mod/x.tf": "resource \"null_resource\" \"n\" {\n  count = 1\n}\n",
	})
	t0 := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	r := New(t0, t0.Add(time.Minute), []drift.Result{
		{Workspace: "eu,west: prod\nb", Status: drift.StatusDrift, Findings: []drift.Finding{
			{Kind: drift.KindDrift, Address: `aws_s3_bucket.b["x,y: \"z\" 100%"]`, Type: "aws_s3_bucket", Action: "update",
				Attributes: []string{"tags[\"50%\r\noff\"]", "acl"}},
			{Kind: drift.KindPending, Address: `module.m.null_resource.n[0]`, Type: "null_resource", Action: "create"},
			{Kind: drift.KindNoise, Address: "data.aws_iam_policy_document.p", Type: "aws_iam_policy_document", Action: "read"},
			{Kind: drift.KindDrift, Address: "aws_s3_bucket.ignored", Type: "aws_s3_bucket", Action: "update", Ignored: true},
			{Kind: drift.KindBackend, Address: "backend.local", Action: "none", Detail: "state file terraform.tfstate is readable by others (mode 0644)"},
		}},
		{Workspace: "gone", Status: drift.StatusErrored, Error: "init: exit status 1"},
	})
	r.Workspaces[0].SourceDir = filepath.Join(base, "envs", "a,b:c")
	r.Workspaces[1].SourceDir = filepath.Join("envs", "gone")
	r.SourceRoot = base
	return r
}

func TestGitHubAnnotations(t *testing.T) {
	r := tricky(t)
	var out bytes.Buffer
	require.NoError(t, WriteGitHub(t.Context(), &out, "", r))
	require.Equal(t, strings.Join([]string{
		`::error file=envs/a%2Cb%3Ac/main.tf,line=2,title=driftwatch drift in eu%2Cwest%3A prod%0Ab::Workspace "eu,west: prod\nb": drift on aws_s3_bucket.b["x,y: \"z\" 100%25"] (update): tags["50%25%0D%0Aoff"], acl`,
		`::warning file=envs/a%2Cb%3Ac/mod/x.tf,line=1,title=driftwatch pending in eu%2Cwest%3A prod%0Ab::Workspace "eu,west: prod\nb": pending on module.m.null_resource.n[0] (create)`,
		`::warning file=envs/a%2Cb%3Ac/main.tf,line=1,title=driftwatch backend in eu%2Cwest%3A prod%0Ab::Workspace "eu,west: prod\nb": backend on backend.local: state file terraform.tfstate is readable by others (mode 0644)`,
		`::error file=envs/gone/main.tf,line=1,title=driftwatch errored in gone::Workspace "gone" errored: init: exit status 1`,
		``,
	}, "\n"), out.String(), "one line per counted finding and errored workspace; noise and ignored findings get none")
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		require.NotContains(t, line, "\r")
	}
}

func TestGitHubStepSummaryIsAppended(t *testing.T) {
	r := tricky(t)
	var md bytes.Buffer
	require.NoError(t, Write(&md, "markdown", r))

	t.Run("to an existing file", func(t *testing.T) {
		summary := filepath.Join(t.TempDir(), "step_summary")
		require.NoError(t, os.WriteFile(summary, []byte("## an earlier step\n"), 0o600))
		var out bytes.Buffer
		require.NoError(t, WriteGitHub(t.Context(), &out, summary, r))
		require.NoError(t, WriteGitHub(t.Context(), &out, summary, r))
		got, err := os.ReadFile(summary)
		require.NoError(t, err)
		require.Equal(t, "## an earlier step\n"+md.String()+md.String(), string(got))
		require.Equal(t, 8, strings.Count(out.String(), "\n"), "annotations still go to the step's output")
	})
	t.Run("creating the file", func(t *testing.T) {
		summary := filepath.Join(t.TempDir(), "step_summary")
		require.NoError(t, WriteGitHub(t.Context(), &bytes.Buffer{}, summary, r))
		got, err := os.ReadFile(summary)
		require.NoError(t, err)
		require.Equal(t, md.String(), string(got))
		fi, err := os.Stat(summary)
		require.NoError(t, err)
		require.Zero(t, fi.Mode().Perm()&^0o644, "created at most 0644")
	})
	t.Run("an unwritable summary is an error, after the annotations", func(t *testing.T) {
		var out bytes.Buffer
		err := WriteGitHub(t.Context(), &out, filepath.Join(t.TempDir(), "missing", "summary"), r)
		require.ErrorContains(t, err, "step summary")
		require.NotEmpty(t, out.String())
	})
}

func TestWorkflowCommandEscaping(t *testing.T) {
	for in, want := range map[string][2]string{
		"plain":             {"plain", "plain"},
		"100%":              {"100%25", "100%25"},
		"a\r\nb":            {"a%0D%0Ab", "a%0D%0Ab"},
		"k=v, x: y":         {"k=v, x: y", "k=v%2C x%3A y"},
		"%0A is not a line": {"%250A is not a line", "%250A is not a line"},
		"::error::":         {"::error::", "%3A%3Aerror%3A%3A"},
	} {
		require.Equal(t, want[0], escapeData(in), "data %q", in)
		require.Equal(t, want[1], escapeProperty(in), "property %q", in)
	}
}
