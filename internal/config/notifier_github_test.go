package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify/github"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// A github block loads with its token file resolved against the config's
// directory, and the factory builds a notifier from it that opens an
// issue on a server speaking GitHub's REST API.
func TestGitHubNotifier(t *testing.T) {
	srv := notifytest.NewGitHubServer(t)
	dir := notifierConfigDir(t, srv.TokenFile, "gh-token", srv.Certificate())
	cfg := loadConfig(t, dir, `
notifiers:
  - name: issues
    type: github
    ca_file: ca.pem
    timeout: 5s
    github:
      token_file: gh-token
      repository: `+srv.Repository()+`
      api_url: `+srv.URL()+`
      labels: [driftwatch, infra]
alerts:
  default_notifiers: [issues]
`)
	require.Equal(t, &config.GitHubConfig{
		TokenFile: filepath.Join(dir, "gh-token"), Repository: "driftwatch-test/infra", APIURL: srv.URL(),
		Labels: []string{"driftwatch", "infra"},
	}, cfg.Notifiers[0].GitHub)
	require.Contains(t, cfg.SecretFiles(), filepath.Join(dir, "gh-token"), "the token is redacted from every run's log")

	notifyOpen(t, buildNotifier[*github.Notifier](t, cfg, "issues"))
	is, ok := srv.Issue(1)
	require.True(t, ok)
	require.Equal(t, []string{"driftwatch", "infra", "driftwatch:drift"}, is.Labels)
	require.Equal(t, "Terraform drift in prod/network: 1 drifted, 1 pending", is.Title)
}

// labels unset is the default; labels: [] is the class label alone.
func TestGitHubLabels(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tok"), []byte("ghp_x"), 0o600))
	for yaml, want := range map[string][]string{"": nil, "      labels: []\n": {}} {
		cfg := loadConfig(t, dir, "notifiers:\n  - name: gh\n    type: github\n    github:\n      token_file: tok\n      repository: acme/infra\n"+yaml)
		require.Equal(t, want, cfg.Notifiers[0].GitHub.Labels)
	}
}

// Each mistake in a github block is an error naming file, line and key,
// never the token.
func TestGitHubConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tok"), []byte("CANARY-token"), 0o600))
	head := "notifiers:\n  - name: issues\n    type: github\n"
	ok := "    github:\n      token_file: tok\n      repository: acme/infra\n"
	requireInvalid(t, dir, map[string]invalidConfig{
		"missing token_file": {head + "    github:\n      repository: acme/infra\n",
			"driftwatch.yaml:4: notifiers[0].github.token_file: required"},
		"missing file": {head + "    github:\n      token_file: nope\n      repository: acme/infra\n",
			"driftwatch.yaml:5: notifiers[0].github.token_file: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		"missing repository": {head + "    github:\n      token_file: tok\n",
			"driftwatch.yaml:4: notifiers[0].github.repository: required (owner/name)"},
		"bad repository": {head + "    github:\n      token_file: tok\n      repository: https://github.com/acme/infra\n",
			`driftwatch.yaml:6: notifiers[0].github.repository: "https://github.com/acme/infra": want owner/name, e.g. acme/infrastructure`},
		"inline token": {head + ok + "      token: abc\n",
			`driftwatch.yaml:7: notifiers[0].github.token: unknown key "token" (known keys: token_file, repository, api_url, labels)`},
		"plain http": {head + ok + "      api_url: http://ghe.corp.example/api/v3/\n",
			"driftwatch.yaml:7: notifiers[0].github.api_url: must be https: the token travels in a header (http only to a loopback address)"},
		"credentials in url": {head + ok + "      api_url: https://u:CANARY@ghe.corp.example/api/v3/\n",
			"driftwatch.yaml:7: notifiers[0].github.api_url: credentials in the URL are not allowed"},
		"label with a comma": {head + ok + "      labels: [ok, \"a,b\"]\n",
			`driftwatch.yaml:7: notifiers[0].github.labels[1]: "a,b": no commas or line breaks`},
		"long label": {head + ok + "      labels: [" + strings.Repeat("l", 51) + "]\n",
			`notifiers[0].github.labels[0]: "` + strings.Repeat("l", 51) + `" is longer than GitHub's 50 characters`},
		"no block": {head,
			"driftwatch.yaml:2: notifiers[0].github: required for type github"},
	})
}
