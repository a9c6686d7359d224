package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/testutil/s3test"
)

// TestScanBesideS3State: a workspace whose only state is in a real S3
// store (SeaweedFS, use_lockfile) manages a file; a local-state workspace
// manages another; a third is made by hand (and a fourth is the S3
// workspace's file of another provider's type, ignored). The scan needs no credential
// of its own: it compares with what each workspace's check read through
// its own backend, so only the hand-made file is unmanaged, the S3
// workspace's file is held by it, and no credential appears anywhere.
func TestScanBesideS3State(t *testing.T) {
	parallel(t)
	query, _, cli := toolsByQuery(t)
	root, err := os.MkdirTemp("", "dwscan")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	e := &tfEnv{bin: query[0], cliConfig: cli, root: root}
	srv := s3test.Start(t, s3test.Options{AccessKey: s3CanaryKeyID, SecretKey: s3CanarySecret})
	e.allowHost(t, srv.Endpoint)
	out := filepath.Join(root, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))

	const key = "teams/app/remote.tfstate"
	remote := e.workspace(t, "remote", map[string]string{"main.tf": s3Workspace(srv, "remote", key, "    use_lockfile                = true\n")})
	e.applyS3(t, srv, remote)
	require.NoFileExists(t, filepath.Join(remote, "terraform.tfstate"), "the state is only in the bucket")
	local := e.workspace(t, "local", map[string]string{"main.tf": `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
resource "dwtest_file" "l" {
  filename = "@ROOT@/out/local.txt"
  content  = "v1"
}
`})
	e.apply(t, local)
	require.NoError(t, os.WriteFile(filepath.Join(out, "hand.txt"), []byte("by hand"), 0o644))
	e.workspace(t, "scan", map[string]string{"main.tf": `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
`})
	cfg := e.config(t, fmt.Sprintf(`scans:
  - name: files
    source: { path: ./scan }
    binary: %s
    types: [dwtest_file]
    config: { directory: %s }
    ignore: [{ type: dwtest_file, identity: "*/out/remote-b.txt" }]
workspaces:
  - name: remote
    source: { path: ./remote }
    secret_env_files: %s
  - name: local
    source: { path: ./local }
`, e.bin, out, s3Secrets(t, e, "remote", s3CanaryKeyID, s3CanarySecret)))

	r := driftwatch(t, nil, "audit", "--config", cfg, "--workspace", "files", "--format", "json", "--log-level", "debug")
	require.Equal(t, 2, r.code, r.stderr)
	rep := parseReport(t, r.stdout)
	for _, n := range []string{"remote", "local"} {
		st, msg, _ := rep.ws(t, n)
		require.Equal(t, drift.StatusClean, st, "%s: %s\n%s", n, msg, r.stderr)
	}
	st, msg, fs := rep.ws(t, "files")
	require.Equal(t, drift.StatusDrift, st, msg)
	// remote-b.txt is the S3 workspace's local_file: no dwtest_file holds
	// it, which the ignore rule says is known.
	hand, other := filepath.Join(out, "hand.txt"), filepath.Join(out, "remote-b.txt")
	require.Equal(t, []drift.Finding{
		{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="` + hand + `"]`, Type: "dwtest_file", Action: "none", Attributes: []string{}, Detail: hand},
		{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="` + other + `"]`, Type: "dwtest_file", Action: "none", Attributes: []string{}, Detail: other, Ignored: true},
	}, fs, "remote-a.txt is held by the workspace whose state is in the bucket, local.txt by the other")
	assertNoS3Canary(t, "the scan's report and debug logs", r.stdout+r.stderr)
}
