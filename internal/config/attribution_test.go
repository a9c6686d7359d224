package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAttributionEffective(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret-token"), 0o600))
	src := mustAbs(t, "testdata/net")
	data := []byte(`
defaults:
  attribution:
    command: [who-changed, --trail]
    env: { A: "1", B: "2" }
    timeout: 5s
workspaces:
  - name: a
    source: { path: ` + src + ` }
  - name: b
    source: { path: ` + src + ` }
    attribution:
      command: [./bin/other]
      env: { B: "3" }
      secret_env_files: { A: token }
  - name: c
    source: { path: ` + src + ` }
    attribution: { command: [] }
`)
	cfgFile := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "other"), []byte("#!/bin/sh\n"), 0o700))
	cfg, err := Load(cfgFile, data)
	require.NoError(t, err)

	a, ok := cfg.EffectiveAttribution(cfg.Workspaces[0])
	require.True(t, ok)
	require.Equal(t, AttributionCommand{Argv: []string{"who-changed", "--trail"}, Env: map[string]string{"A": "1", "B": "2"},
		Timeout: 5 * time.Second}, a)
	b, ok := cfg.EffectiveAttribution(cfg.Workspaces[1])
	require.True(t, ok)
	require.Equal(t, []string{filepath.Join(dir, "bin", "other")}, b.Argv)
	require.Equal(t, map[string]string{"B": "3"}, b.Env, "a secret overrides defaults' plain value")
	require.Equal(t, map[string]string{"A": secret}, b.SecretEnvFiles)
	require.Equal(t, 5*time.Second, b.Timeout)
	_, ok = cfg.EffectiveAttribution(cfg.Workspaces[2])
	require.False(t, ok, "an empty command turns defaults' off")
	require.Contains(t, cfg.SecretFiles(), secret)

	plain, err := Load(cfgFile, []byte("workspaces:\n  - name: a\n    source: { path: "+src+" }\n    attribution: { command: [x] }\n"))
	require.NoError(t, err)
	p, ok := plain.EffectiveAttribution(plain.Workspaces[0])
	require.True(t, ok)
	require.Equal(t, DefaultAttributionTimeout, p.Timeout)
}

func TestAttributionInvalid(t *testing.T) {
	dir := t.TempDir()
	src := mustAbs(t, "testdata/net")
	cases := map[string]struct{ yaml, want string }{
		"empty program":   {"attribution: { command: [''] }", `workspaces[0].attribution.command[0]: the program is empty`},
		"missing program": {"attribution: { command: [./nope] }", `workspaces[0].attribution.command[0]: stat ` + filepath.Join(dir, "nope")},
		"env name":        {"attribution: { command: [x], env: { 'A-B': v } }", `workspaces[0].attribution.env.A-B: "A-B" is not a valid environment variable name`},
		"secret file":     {"attribution: { command: [x], secret_env_files: { T: missing } }", `workspaces[0].attribution.secret_env_files.T: stat ` + filepath.Join(dir, "missing")},
		"secret dup":      {"attribution: { command: [x], env: { T: v }, secret_env_files: { T: missing } }", `workspaces[0].attribution.secret_env_files.T: also set in env`},
		"timeout":         {"attribution: { command: [x], timeout: 11m }", `workspaces[0].attribution.timeout: must be at most 10m0s`},
		"bad timeout":     {"attribution: { command: [x], timeout: soon }", `workspaces[0].attribution.timeout: invalid duration "soon"`},
		"unknown key":     {"attribution: { cmd: [x] }", `cmd`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data := "workspaces:\n  - name: a\n    source: { path: " + src + " }\n    " + tc.yaml + "\n"
			_, err := Load(filepath.Join(dir, "driftwatch.yaml"), []byte(data))
			require.Error(t, err)
			require.Contains(t, err.Error(), "driftwatch.yaml:4: ")
			require.Contains(t, strings.ReplaceAll(err.Error(), "\n", " "), tc.want)
		})
	}
	_, err := Load(filepath.Join(dir, "driftwatch.yaml"), []byte("defaults:\n  attribution: { command: [x], timeout: -1s }\n"))
	require.ErrorContains(t, err, "defaults.attribution.timeout:")
}

// attribution_by_label sits between defaults' and a workspace's own.
func TestAttributionByLabel(t *testing.T) {
	dir := t.TempDir()
	src := mustAbs(t, "testdata/net")
	cfg, err := Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
defaults:
  attribution: { command: [cloudtrail-who], timeout: 5s }
attribution_by_label:
  - labels: { platform: k8s }
    command: [k8s-audit-who]
    env: { AUDIT_LOG: /var/log/audit.log }
  - labels: { platform: k8s, env: prod }
    timeout: 20s
workspaces:
  - { name: aws, source: { path: `+src+` } }
  - { name: k8s-dev, labels: { platform: k8s }, source: { path: `+src+` } }
  - { name: k8s-prod, labels: { platform: k8s, env: prod }, source: { path: `+src+` } }
  - { name: k8s-own, labels: { platform: k8s }, source: { path: `+src+` }, attribution: { command: [own] } }
`))
	require.NoError(t, err)
	want := map[string]AttributionCommand{
		"aws":      {Argv: []string{"cloudtrail-who"}, Timeout: 5 * time.Second},
		"k8s-dev":  {Argv: []string{"k8s-audit-who"}, Env: map[string]string{"AUDIT_LOG": "/var/log/audit.log"}, Timeout: 5 * time.Second},
		"k8s-prod": {Argv: []string{"k8s-audit-who"}, Env: map[string]string{"AUDIT_LOG": "/var/log/audit.log"}, Timeout: 20 * time.Second},
		"k8s-own":  {Argv: []string{"own"}, Env: map[string]string{"AUDIT_LOG": "/var/log/audit.log"}, Timeout: 5 * time.Second},
	}
	for _, w := range cfg.Workspaces {
		got, ok := cfg.EffectiveAttribution(w)
		require.True(t, ok, w.Name)
		require.Equal(t, want[w.Name], got, w.Name)
	}

	_, err = Load(filepath.Join(dir, "driftwatch.yaml"), []byte("attribution_by_label:\n  - command: [x]\n"))
	require.ErrorContains(t, err, "driftwatch.yaml:2: attribution_by_label[0].labels: at least one label is required")
	_, err = Load(filepath.Join(dir, "driftwatch.yaml"), []byte("attribution_by_label:\n  - labels: { a: b }\n    timeout: 11m\n"))
	require.ErrorContains(t, err, "attribution_by_label[0].timeout: must be at most 10m0s")
}
