package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/policy"
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
	rules, err := policy.CompileRules(net.EffectiveForbidden(cfg.Defaults), net.Ignore)
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
	rules, err = policy.CompileRules(legacy.EffectiveForbidden(cfg.Defaults), legacy.Ignore)
	require.NoError(t, err)
	require.Empty(t, rules.Forbidden, "forbidden: [] allows every type")

	dns := cfg.Workspaces[2]
	require.Equal(t, "dns", dns.Name, "included fragments are appended")
	require.Equal(t, filepath.Join(dir, "net"), dns.Source.Path, "fragment paths resolve against the fragment")
	rules, err = policy.CompileRules(dns.EffectiveForbidden(cfg.Defaults), dns.Ignore)
	require.NoError(t, err)
	require.True(t, rules.Forbidden[1].Match("kubectl_manifest"))
}

// Every invalid config maps to the exact error a user sees: file, line, key.
func TestLoadInvalid(t *testing.T) {
	cases := map[string]string{
		"unknown-key":         `invalid-unknown-key.yaml:4: workspaces[0].scheduel: unknown key "scheduel" (did you mean "schedule"?)`,
		"duplicate-name":      `invalid-duplicate-name.yaml:4: workspaces[1].name: duplicate workspace name "network" (first defined at invalid-duplicate-name.yaml:2: workspaces[0].name)`,
		"bad-duration":        `invalid-bad-duration.yaml:2: defaults.timeout: invalid duration "10 minutes" (use a positive Go duration such as 90s, 10m, 1h30m)`,
		"bad-glob":            `invalid-bad-glob.yaml:5: workspaces[0].ignore[0].address: invalid glob "aws_instance.[a": `,
		"missing-path":        `invalid-missing-path.yaml:3: workspaces[0].source.path: stat does-not-exist: no such file or directory`,
		"bad-name":            `invalid-bad-name.yaml:2: workspaces[0].name: "Network_1" is not a DNS label`,
		"token-in-url":        `invalid-token-in-url.yaml:3: workspaces[0].source.git.url: credentials in the URL are not allowed; use credentials_file`,
		"both-sources":        `invalid-both-sources.yaml:3: workspaces[0].source: set exactly one of path or git, not both`,
		"reserved-env":        `invalid-reserved-env.yaml:4: workspaces[0].env.TF_VAR_password: TF_VAR_password cannot be set: set Terraform variables with vars or var_files instead`,
		"duplicate-key":       `invalid-duplicate-key.yaml:4: workspaces[0].name: duplicate key (first set at line 2)`,
		"wrong-type":          `invalid-wrong-type.yaml:2: workspaces: expected a list, got a mapping`,
		"missing-var-file":    `invalid-missing-var-file.yaml:4: workspaces[0].var_files[0]: stat net/staging.tfvars: no such file or directory`,
		"syntax":              `invalid-syntax.yaml:1: did not find expected '-' indicator`,
		"unknown-notifier":    `invalid-unknown-notifier.yaml:8: alerts.routes[0].notifiers[0]: unknown notifier "slack-oncal"`,
		"bad-severity":        `invalid-bad-severity.yaml:2: alerts.severity.drift: unknown severity "urgent" (use critical, high, moderate, low or info)`,
		"slack-no-channel":    `invalid-slack-no-channel.yaml:4: notifiers[0].slack.channel: required in bot mode`,
		"bad-sandbox":         `invalid-bad-sandbox.yaml:2: terraform.sandbox: "chroot": want auto, namespaces or off`,
		"bad-sandbox-network": `invalid-bad-sandbox-network.yaml:2: terraform.sandbox_network: "slirp": want auto, isolated or host`,
		"host-port": `invalid-host-port.yaml:2: terraform.sandbox_host_ports[1]: "10.0.0.5:5432": only the host's loopback ports can be reached ` +
			`from the sandbox (127.0.0.1, [::1] or localhost): listen there, or use sandbox_network: host`,
		"proxy-no-secret": `invalid-proxy-no-secret.yaml:4: server.auth.proxy.secret_file: required in proxy mode: ` +
			`the file holding the shared secret the proxy adds in X-Driftwatch-Proxy-Secret`,
		"short-token": `invalid-short-token.yaml:2: server.metrics_token_file: short-token holds 11 characters, fewer than 32: ` +
			`use a long random token (e.g. openssl rand -hex 32)`,
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
	require.Len(t, files, 21)
}

func TestUnknownKeyListsKnownKeys(t *testing.T) {
	_, err := Load("/tmp/x.yaml", []byte("terraform:\n  nonsense: 1\n"))
	require.EqualError(t, err, `/tmp/x.yaml:2: terraform.nonsense: unknown key "nonsense" (known keys: binary, cli_config_file, plugin_cache_dir, work_dir, git_cache_dir, kill_grace, sandbox, sandbox_paths, sandbox_network, sandbox_host_ports, fast_paths)`)
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

// server.read_token_file resolves like token_file; open_reads and
// allowed_hosts are read as written.
func TestServerAccessKeys(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "read-token"), []byte("read-CANARY-0123456789abcdef012345\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "api-token"), []byte("api-CANARY-0123456789abcdef0123456"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scrape-token"), []byte("scrape-CANARY-0123456789abcdef0123"), 0o400))
	cfg, err := Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`server:
  token_file: api-token
  read_token_file: ./read-token
  metrics_token_file: scrape-token
  open_reads: true
  allowed_hosts: [drift.example.com, "*.corp.example", status.internal.]
`))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "api-token"), cfg.Server.TokenFile)
	require.Equal(t, filepath.Join(dir, "read-token"), cfg.Server.ReadTokenFile)
	require.Equal(t, filepath.Join(dir, "scrape-token"), cfg.Server.MetricsTokenFile)
	require.Contains(t, cfg.SecretFiles(), cfg.Server.MetricsTokenFile, "redacted like every credential")
	require.True(t, cfg.Server.OpenReads)
	require.Equal(t, []string{"drift.example.com", "*.corp.example", "status.internal."}, cfg.Server.AllowedHosts)

	cfg, err = Load(filepath.Join(dir, "driftwatch.yaml"), []byte("server: {listen: \"127.0.0.1:9\"}\n"))
	require.NoError(t, err)
	require.False(t, cfg.Server.OpenReads, "reads are closed by default")
	require.Empty(t, cfg.Server.ReadTokenFile)
	require.Empty(t, cfg.Server.AllowedHosts)
}

// Token files must be readable and hold a token; allowed_hosts entries
// must be host names. Each error names file, line and key, never a token.
func TestServerAccessKeysInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty"), []byte(" \n\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "huge"), []byte(strings.Repeat("CANARY", 1000)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "short"), []byte("CANARY-123"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shared"), []byte(strings.Repeat("CANARY", 6)), 0o600))
	require.NoError(t, os.Chmod(filepath.Join(dir, "shared"), 0o644))
	file := filepath.Join(dir, "driftwatch.yaml")
	for name, c := range map[string]struct{ yaml, want string }{
		"short api token": {"server:\n  token_file: short\n",
			"driftwatch.yaml:2: server.token_file: " + filepath.Join(dir, "short") + " holds 10 characters, fewer than 32"},
		"api token readable by others": {"server:\n  token_file: shared\n",
			"driftwatch.yaml:2: server.token_file: " + filepath.Join(dir, "shared") + " is readable by every user (mode 0644): chmod o-r it"},
		"short read token": {"server:\n  read_token_file: short\n",
			"driftwatch.yaml:2: server.read_token_file: " + filepath.Join(dir, "short") + " holds 10 characters"},
		"metrics token readable by others": {"server:\n  metrics_token_file: shared\n",
			"driftwatch.yaml:2: server.metrics_token_file: " + filepath.Join(dir, "shared") + " is readable by every user"},
		"empty read token": {"server:\n  read_token_file: empty\n",
			"driftwatch.yaml:2: server.read_token_file: " + filepath.Join(dir, "empty") + " is empty"},
		"missing read token": {"server:\n  read_token_file: nope\n",
			"driftwatch.yaml:2: server.read_token_file: open " + filepath.Join(dir, "nope") + ": no such file or directory"},
		"huge read token": {"server:\n  read_token_file: huge\n",
			"driftwatch.yaml:2: server.read_token_file: " + filepath.Join(dir, "huge") + " is larger than 4096 bytes"},
		"empty api token": {"server:\n  token_file: empty\n",
			"driftwatch.yaml:2: server.token_file: " + filepath.Join(dir, "empty") + " is empty"},
		"bare wildcard": {"server:\n  allowed_hosts:\n    - ok.example\n    - \"*\"\n",
			`driftwatch.yaml:4: server.allowed_hosts[1]: "*" would let any host name in`},
		"url": {"server:\n  allowed_hosts: [\"https://drift.example.com\"]\n",
			`driftwatch.yaml:2: server.allowed_hosts[0]: "https://drift.example.com" is not a host name (write the name alone, without scheme, port or path)`},
		"port": {"server:\n  allowed_hosts: [\"drift.example.com:8080\"]\n",
			`server.allowed_hosts[0]: "drift.example.com:8080" is not a host name`},
		"inner wildcard": {"server:\n  allowed_hosts: [\"a.*.example\"]\n",
			`server.allowed_hosts[0]: "a.*.example": a wildcard is only allowed as a leading "*."`},
		"ip": {"server:\n  allowed_hosts: [\"10.0.0.1\"]\n",
			`server.allowed_hosts[0]: "10.0.0.1" is an IP address: IP addresses are always allowed`},
		"open_reads type": {"server:\n  open_reads: yes please\n",
			"driftwatch.yaml:2: server.open_reads"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(file, []byte(c.yaml))
			require.Error(t, err)
			got := strings.ReplaceAll(err.Error(), dir+"/", "")
			require.Contains(t, got, strings.ReplaceAll(c.want, dir+"/", ""))
			require.NotContains(t, got, "CANARY")
		})
	}
}
