package tfsession

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform"
)

func TestQuerySupported(t *testing.T) {
	require.NoError(t, QuerySupported("terraform 1.14.0"))
	require.NoError(t, QuerySupported("terraform 1.14.9"))
	require.NoError(t, QuerySupported("terraform 1.15.0-beta1"))
	require.EqualError(t, QuerySupported("terraform 1.11.4"), "terraform 1.11.4 has no query command: scans need Terraform 1.14 or later")
	require.EqualError(t, QuerySupported("tofu 1.12.6"), "tofu 1.12.6 has no query command: scans need Terraform 1.14 or later")
	require.Error(t, QuerySupported("terraform"))
}

func TestWriteLists(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteLists(dir, []terraform.List{
		{Type: "dwtest_file", Provider: "dwtest", Limit: 5000, Config: map[string]any{"directory": `/srv/${x} "q"`, "pattern": "*.txt", "n": 3, "on": true, "tags": []any{"a", 1.5}}},
		{Type: "aws_s3_bucket", Provider: "aws"},
	}))
	b, err := os.ReadFile(filepath.Join(dir, terraform.ListsFile))
	require.NoError(t, err)
	require.Equal(t, `# Written by driftwatch for a scan: one list block per scanned type.

list "dwtest_file" "all" {
  provider = dwtest
  limit    = 5000
  config {
    directory = "/srv/$${x} \"q\""
    n = 3
    on = true
    pattern = "*.txt"
    tags = ["a", 1.5]
  }
}

list "aws_s3_bucket" "all" {
  provider = aws
}
`, string(b))
	require.ErrorContains(t, WriteLists(dir, []terraform.List{{Type: "x y", Provider: "p"}}), "not a resource type")
	require.ErrorContains(t, WriteLists(dir, []terraform.List{{Type: "a_b", Provider: "a", Config: map[string]any{"m": map[string]any{}}}}), `config key "m": a map[string]interface {} is not`)
}
