package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBackendPolicyCheckBucketPolicy: check_bucket_policy is on unless the
// configuration turns it off, in defaults or per workspace (the workspace
// winning), and an unknown backend_policy key lists it among the known.
func TestBackendPolicyCheckBucketPolicy(t *testing.T) {
	src := mustAbs(t, "testdata/net")
	cfg, err := Load("/tmp/x.yaml", []byte(`
defaults:
  backend_policy: { check_bucket_policy: false }
workspaces:
  - name: offline
    source: { path: `+src+` }
  - name: checked
    source: { path: `+src+` }
    backend_policy: { check_bucket_policy: true, require_locking: false }
`))
	require.NoError(t, err)
	off := cfg.EffectiveBackendPolicy(cfg.Workspaces[0])
	require.False(t, off.CheckBucketPolicy)
	require.True(t, off.Enabled && off.RequireEncryption && off.RequireLocking, "the other checks keep their defaults: %+v", off)
	on := cfg.EffectiveBackendPolicy(cfg.Workspaces[1])
	require.True(t, on.CheckBucketPolicy)
	require.False(t, on.RequireLocking)

	plain, err := Load("/tmp/x.yaml", []byte("workspaces:\n  - name: a\n    source: { path: "+src+" }\n"))
	require.NoError(t, err)
	require.True(t, plain.EffectiveBackendPolicy(plain.Workspaces[0]).CheckBucketPolicy, "on by default")

	_, err = Load("/tmp/x.yaml", []byte("defaults:\n  backend_policy: { check_bucket_polcy: false }\nworkspaces: []\n"))
	require.Error(t, err)
	require.Contains(t, err.Error(), `unknown key "check_bucket_polcy"`)
	require.Contains(t, err.Error(), "check_bucket_policy")
}
