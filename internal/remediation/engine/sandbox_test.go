package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStateInSandbox(t *testing.T) {
	backend := func(typ, config string) string {
		return `{"version":3,"backend":{"type":"` + typ + `","config":` + config + `,"hash":1}}`
	}
	cases := []struct {
		name      string
		file      string // .terraform/terraform.tfstate; "" = absent
		dataDir   string // TF_DATA_DIR
		workspace string
		inSandbox bool
	}{
		{name: "no backend block", inSandbox: true},
		{name: "local, relative path", file: backend("local", `{"path":"state/terraform.tfstate","workspace_dir":null}`), inSandbox: true},
		{name: "local, default path", file: backend("local", `{"path":null,"workspace_dir":null}`), inSandbox: true},
		{name: "local, absolute path", file: backend("local", `{"path":"/srv/state/ws.tfstate","workspace_dir":null}`)},
		{name: "local, absolute path, other workspace, relative dir", file: backend("local", `{"path":"/srv/state/ws.tfstate","workspace_dir":null}`), workspace: "staging", inSandbox: true},
		{name: "local, absolute workspace_dir", file: backend("local", `{"path":null,"workspace_dir":"/srv/state/ws.d"}`), workspace: "staging"},
		{name: "remote backend", file: backend("s3", `{"bucket":"b","key":"k"}`)},
		{name: "TF_DATA_DIR elsewhere", file: backend("local", `{"path":"/srv/x.tfstate"}`), dataDir: "data"},
		{name: "TF_DATA_DIR without backend", dataDir: "data", inSandbox: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{}
			dataDir := filepath.Join(dir, ".terraform")
			if tc.dataDir != "" {
				env["TF_DATA_DIR"] = tc.dataDir
				dataDir = filepath.Join(dir, tc.dataDir)
			}
			if tc.file != "" {
				require.NoError(t, os.MkdirAll(dataDir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dataDir, "terraform.tfstate"), []byte(tc.file), 0o644))
			}
			why, err := stateInSandbox(t.Context(), dir, env, tc.workspace)
			require.NoError(t, err)
			require.Equal(t, tc.inSandbox, why != "", why)
		})
	}

	t.Run("unreadable backend config", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, ".terraform"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".terraform", "terraform.tfstate"), []byte("{"), 0o644))
		_, err := stateInSandbox(t.Context(), dir, nil, "")
		require.Error(t, err)
	})
}

func TestIsLockError(t *testing.T) {
	require.True(t, isLockError("\nError: Error acquiring the state lock\n\nError message: resource temporarily unavailable"))
	require.False(t, isLockError("Error: Cannot write file"))
	// The backend could not be asked: not a lock held by someone else.
	require.False(t, isLockError(`
Error: Error acquiring the state lock

Error message: operation error S3: PutObject, exceeded maximum number of
attempts, 5, https response error StatusCode: 0, RequestID: , HostID: ,
request send failed, Put "http://127.0.0.1:9/b/k.tflock": dial tcp
127.0.0.1:9: connect: connection refused
`))
	// A held lock's answer (412) is one.
	require.True(t, isLockError(`
Error: Error acquiring the state lock

Error message: operation error S3: PutObject, https response error StatusCode: 412, RequestID: 1, HostID: 2, api error PreconditionFailed: At least one of the pre-conditions you specified did not hold
`))
}

// The state_locked reason names the holder from Terraform's "Lock Info:"
// block, so an operator can find it or force-unlock that ID.
func TestLockedReason(t *testing.T) {
	stderr := `
Error: Error acquiring the state lock

Error message: operation error S3: PutObject, https response error StatusCode: 412
Lock Info:
  ID:        7d3c6a0e-1f2b-4c5d-8e9f-0a1b2c3d4e5f
  Path:      tfstate/rem/refuse.tfstate
  Operation: OperationTypeApply
  Who:       ci@runner-7
  Version:   1.11.4
  Created:   2026-11-25 16:40:01.123 +0000 UTC
  Info:      

Terraform acquires a state lock to protect the state from being written
by multiple users at the same time.
`
	require.Equal(t, "another operation holds the state lock (lock ID 7d3c6a0e-1f2b-4c5d-8e9f-0a1b2c3d4e5f, OperationTypeApply by ci@runner-7 since 2026-11-25 16:40:01.123 +0000 UTC): nothing applied; re-detect later",
		lockedReason("another operation holds the state lock", stderr))
	require.Equal(t, "another operation holds the state lock: nothing applied; re-detect later",
		lockedReason("another operation holds the state lock", "\nError: Error acquiring the state lock\n\nError message: resource temporarily unavailable"),
		"no Lock Info block: no holder")
}
