package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRemediationInvalid(t *testing.T) {
	cases := map[string]string{
		"mode":    `remediation-invalid-mode.yaml:5: workspaces[0].remediation.mode: unknown mode "yolo" (use off, approve or auto)`,
		"action":  `remediation-invalid-action.yaml:3: defaults.remediation.allow_actions: unknown action "destroy" (allowed: update, create, delete, replace)`,
		"ttl":     `remediation-invalid-ttl.yaml:4: workspaces[0].remediation.approval_ttl: invalid duration "1 day"`,
		"enabled": `remediation-invalid-enabled.yaml:2: remediation.enabled:`,
	}
	dir, _ := filepath.Abs("testdata")
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadFile(filepath.Join("testdata", "remediation-invalid-"+name+".yaml"))
			require.Error(t, err)
			require.Contains(t, strings.ReplaceAll(err.Error(), dir+"/", ""), want)
		})
	}
}

func TestRemediationEffective(t *testing.T) {
	data := []byte(`
remediation: { enabled: false }
defaults:
  remediation: { mode: approve, max_resources: 3, approval_ttl: 1h }
workspaces:
  - name: a
    source: { path: ` + mustAbs(t, "testdata/net") + ` }
  - name: b
    source: { path: ` + mustAbs(t, "testdata/net") + ` }
    remediation: { mode: auto, allow_actions: [update, create], lock_timeout: 30s }
  - name: c
    source: { path: ` + mustAbs(t, "testdata/net") + ` }
    remediation: { mode: "off" }
`)
	cfg, err := Load("/tmp/x.yaml", data)
	require.NoError(t, err)
	require.False(t, cfg.Remediation.On())
	a := cfg.EffectiveRemediation(cfg.Workspaces[0])
	require.Equal(t, RemediationApprove, a.Mode)
	require.Equal(t, []string{"update"}, a.Envelope.AllowActions)
	require.Equal(t, 3, a.Envelope.MaxResources)
	require.Equal(t, time.Hour, a.ApprovalTTL)
	require.Zero(t, a.LockTimeout)
	b := cfg.EffectiveRemediation(cfg.Workspaces[1])
	require.Equal(t, RemediationAuto, b.Mode)
	require.Equal(t, []string{"update", "create"}, b.Envelope.AllowActions)
	require.Equal(t, 30*time.Second, b.LockTimeout)
	require.Equal(t, RemediationOff, cfg.EffectiveRemediation(cfg.Workspaces[2]).Mode)

	plain, err := Load("/tmp/x.yaml", []byte("workspaces:\n  - name: a\n    source: { path: "+mustAbs(t, "testdata/net")+" }\n"))
	require.NoError(t, err)
	require.True(t, plain.Remediation.On(), "enabled by default")
	p := plain.EffectiveRemediation(plain.Workspaces[0])
	require.Equal(t, RemediationOff, p.Mode, "off by default")
	require.Equal(t, DefaultApprovalTTL, p.ApprovalTTL)
	require.Equal(t, 10, p.Envelope.MaxResources)

	// lock_timeout: 0s is "refuse at once", and overrides a longer default;
	// a negative one is an error naming file, line and key.
	zero, err := Load("/tmp/x.yaml", []byte("defaults:\n  remediation: { lock_timeout: 1m }\nworkspaces:\n  - name: a\n    source: { path: "+mustAbs(t, "testdata/net")+" }\n    remediation: { lock_timeout: 0s }\n  - name: b\n    source: { path: "+mustAbs(t, "testdata/net")+" }\n"))
	require.NoError(t, err)
	require.Zero(t, zero.EffectiveRemediation(zero.Workspaces[0]).LockTimeout)
	require.Equal(t, time.Minute, zero.EffectiveRemediation(zero.Workspaces[1]).LockTimeout)
	_, err = Load("/tmp/x.yaml", []byte("defaults:\n  remediation: { lock_timeout: -1s }\nworkspaces: []\n"))
	require.EqualError(t, err, `/tmp/x.yaml:2: defaults.remediation.lock_timeout: invalid duration "-1s" (use 0s or a positive Go duration such as 30s, 5m)`)
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}
