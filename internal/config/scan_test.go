package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScans(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own")
	require.NoError(t, os.MkdirAll(own, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(own, "files.tfquery.hcl"), nil, 0o644))
	net := mustAbs(t, "testdata/net")
	head := "workspaces:\n  - name: a\n    source: { path: " + net + " }\n"
	load := func(scans string) (*Config, error) {
		return Load(filepath.Join(dir, "driftwatch.yaml"), []byte(head+scans))
	}

	cfg, err := load(`scans:
  - name: files
    source: { path: ` + net + ` }
    schedule: "@daily"
    labels: { team: platform }
    types: [dwtest_file]
    config: { directory: /srv, depth: 2 }
    ignore: [{ type: "dwtest_*", identity: "/srv/tmp-*" }]
  - name: own-lists
    source: { path: own }
    binary: terraform
`)
	require.NoError(t, err)
	require.Len(t, cfg.Workspaces, 3)
	w := cfg.Workspaces[1]
	require.Equal(t, "files", w.Name)
	require.Equal(t, "@daily", w.Schedule)
	require.Equal(t, map[string]string{"team": "platform"}, w.Labels)
	require.NotNil(t, w.Scan)
	require.Equal(t, "dwtest", w.Scan.ListProvider("dwtest_file"))
	require.Equal(t, RemediationOff, cfg.EffectiveRemediation(w).Mode, "a scan has nothing to remediate")
	require.Equal(t, filepath.Join(dir, "own"), cfg.Workspaces[2].Source.Path)
	require.Nil(t, cfg.Workspaces[0].Scan)

	for scans, want := range map[string]string{
		"scans:\n  - name: s\n    source: { path: " + net + " }\n    types: [x]\n":                                `driftwatch.yaml:7: scans[0].types[0]: "x" is not a resource type (provider_name)`,
		"scans:\n  - name: s\n    source: { path: " + net + " }\n":                                                "scans[0].types: required: " + net + " has no *.tfquery.hcl list blocks",
		"scans:\n  - name: s\n    source: { path: " + net + " }\n    types: [a_b]\n    config: { m: { k: v } }\n": "scans[0].config.m: a map[string]interface {}: want a string, number, boolean or a list of them",
		"scans:\n  - name: s\n    source: { path: " + net + " }\n    types: [a_b]\n    ignore: [{ type: '[' }]\n": `scans[0].ignore[0].type: invalid glob "["`,
		"scans:\n  - name: s\n    source: { path: " + net + " }\n    config: { a: b }\n":                          "scans[0].config: is the config of generated list blocks: set types too",
		"scans:\n  - name: a\n    source: { path: " + net + " }\n    types: [a_b]\n":                              `scans[0].name: duplicate workspace name "a" (first defined at `,
		"scans:\n  - name: S\n    source: { path: /nonexistent }\n    types: [a_b]\n":                             `scans[0].name: "S" is not a DNS label`,
		"scans:\n  - name: s\n    source: { path: " + net + " }\n    types: [a_b]\n    tipes: [a_b]\n":            "scans[0].tipes: unknown key",
	} {
		_, err := load(scans)
		require.Error(t, err, scans)
		require.Contains(t, err.Error(), want, scans)
	}
}
