package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoadValid(t *testing.T) {
	cfg, err := LoadFile("testdata/valid.yaml")
	require.NoError(t, err)
	dir, _ := filepath.Abs("testdata")

	require.Len(t, cfg.Workspaces, 3)
	net := cfg.Workspaces[0]
	require.Equal(t, "network", net.Name)
	require.Equal(t, filepath.Join(dir, "net"), net.Source.Path, "relative paths resolve against the config file")
	require.Equal(t, filepath.Join(dir, "aws-key"), net.SecretEnvFiles["AWS_SECRET_ACCESS_KEY"])
	require.Equal(t, map[string]string{"env": "prod", "team": "net"}, net.Labels, "defaults.labels are merged")
	require.Equal(t, 5*time.Minute, net.EffectiveTimeout(cfg.Defaults))
	rules, err := net.Rules(cfg.Defaults)
	require.NoError(t, err)
	require.Len(t, rules.Forbidden, 2, "default forbidden list applies")
	require.True(t, rules.Forbidden[0].Match("kubernetes_namespace"))
	require.True(t, rules.Forbidden[1].Match("helm_release"))
	require.Len(t, rules.Ignore, 1)

	pol := cfg.EffectiveAlertPolicy(net)
	require.True(t, *pol.IncludePending)
	require.Equal(t, 2, pol.ConfirmAfter, "workspace override")
	require.Equal(t, 2, pol.ErroredAfter, "daemon-wide setting")
	require.Equal(t, "critical", pol.Severity["forbidden"])
	require.Equal(t, filepath.Join(dir, "slack-token"), cfg.Notifiers[0].Slack.TokenFile)
	require.Equal(t, "bot", cfg.Notifiers[0].Slack.Mode)

	legacy := cfg.Workspaces[1]
	require.Equal(t, "envs/prod", legacy.Source.Git.Path)
	require.Equal(t, 30*time.Second, legacy.EffectiveTimeout(cfg.Defaults))
	rules, err = legacy.Rules(cfg.Defaults)
	require.NoError(t, err)
	require.Empty(t, rules.Forbidden, "forbidden: [] allows every type")

	dns := cfg.Workspaces[2]
	require.Equal(t, "dns", dns.Name, "included fragments are appended")
	require.Equal(t, filepath.Join(dir, "net"), dns.Source.Path, "fragment paths resolve against the fragment")
	rules, err = dns.Rules(cfg.Defaults)
	require.NoError(t, err)
	require.True(t, rules.Forbidden[1].Match("kubectl_manifest"))
}

// Every invalid config maps to the exact error a user sees: file, line, key.
func TestLoadInvalid(t *testing.T) {
	cases := map[string]string{
		"unknown-key":      `invalid-unknown-key.yaml:4: workspaces[0].scheduel: unknown key "scheduel" (did you mean "schedule"?)`,
		"duplicate-name":   `invalid-duplicate-name.yaml:4: workspaces[1].name: duplicate workspace name "network" (first defined at invalid-duplicate-name.yaml:2: workspaces[0].name)`,
		"bad-duration":     `invalid-bad-duration.yaml:2: defaults.timeout: invalid duration "10 minutes" (use a positive Go duration such as 90s, 10m, 1h30m)`,
		"bad-glob":         `invalid-bad-glob.yaml:5: workspaces[0].ignore[0].address: invalid glob "aws_instance.[a": `,
		"missing-path":     `invalid-missing-path.yaml:3: workspaces[0].source.path: stat does-not-exist: no such file or directory`,
		"bad-name":         `invalid-bad-name.yaml:2: workspaces[0].name: "Network_1" is not a DNS label`,
		"token-in-url":     `invalid-token-in-url.yaml:3: workspaces[0].source.git.url: credentials in the URL are not allowed; use credentials_file`,
		"both-sources":     `invalid-both-sources.yaml:3: workspaces[0].source: set exactly one of path or git, not both`,
		"reserved-env":     `invalid-reserved-env.yaml:4: workspaces[0].env.TF_VAR_password: TF_VAR_password cannot be set: set Terraform variables with vars or var_files instead`,
		"duplicate-key":    `invalid-duplicate-key.yaml:4: workspaces[0].name: duplicate key (first set at line 2)`,
		"wrong-type":       `invalid-wrong-type.yaml:2: workspaces: expected a list, got a mapping`,
		"missing-var-file": `invalid-missing-var-file.yaml:4: workspaces[0].var_files[0]: stat net/staging.tfvars: no such file or directory`,
		"syntax":           `invalid-syntax.yaml:1: did not find expected '-' indicator`,
		"unknown-notifier": `invalid-unknown-notifier.yaml:8: alerts.routes[0].notifiers[0]: unknown notifier "slack-oncal"`,
		"bad-severity":     `invalid-bad-severity.yaml:2: alerts.severity.drift: unknown severity "urgent" (use critical, high, moderate, low or info)`,
		"slack-no-channel": `invalid-slack-no-channel.yaml:4: notifiers[0].slack.channel: required in bot mode`,
	}
	dir, _ := filepath.Abs("testdata")
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadFile(filepath.Join("testdata", "invalid-"+name+".yaml"))
			require.Error(t, err)
			got := strings.ReplaceAll(err.Error(), dir+"/", "")
			require.Contains(t, got, want)
			require.NotContains(t, got, "ghp_CANARY_in_url", "a token in a URL must never be echoed")
		})
	}
}

// Every invalid case has a testdata file and vice versa.
func TestInvalidCasesCovered(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	require.Len(t, files, 16)
}

func TestUnknownKeyListsKnownKeys(t *testing.T) {
	_, err := Load("/tmp/x.yaml", []byte("terraform:\n  nonsense: 1\n"))
	require.EqualError(t, err, `/tmp/x.yaml:2: terraform.nonsense: unknown key "nonsense" (known keys: binary, cli_config_file, plugin_cache_dir, work_dir, git_cache_dir, kill_grace)`)
}

func TestLoadCollectsAllErrors(t *testing.T) {
	data := []byte("workspaces:\n  - name: a\n    source: {path: /nonexistent-x}\n  - name: B\n    source: {path: /nonexistent-y}\n")
	_, err := Load("/tmp/x.yaml", data)
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{"/tmp/x.yaml:3: workspaces[0].source.path", "/tmp/x.yaml:4: workspaces[1].name", "/tmp/x.yaml:5: workspaces[1].source.path"} {
		require.Contains(t, msg, want)
	}
}

func TestExampleConfigLoads(t *testing.T) {
	// The shipped example must always load, so it cannot drift from the code.
	files, _ := filepath.Glob("../../configs/examples/*.yaml")
	files = append(files, "../../configs/driftwatch.example.yaml")
	for _, f := range files {
		_, err := LoadFile(f)
		require.NoError(t, err, f)
	}
}

func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Load(filepath.Join(t.TempDir(), "fuzz.yaml"), data)
	})
}
