package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify/gitlab"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// A gitlab block loads with its token file resolved against the config's
// directory, the token file is a secret, and the factory builds a
// notifier from it that keeps an issue on a server speaking GitLab's
// REST API v4.
func TestGitLabNotifier(t *testing.T) {
	srv := notifytest.NewGitLabServer(t)
	dir := notifierConfigDir(t, srv.TokenFile, "gitlab-token", srv.Certificate())
	cfg := loadConfig(t, dir, `
notifiers:
  - name: issues
    type: gitlab
    ca_file: ca.pem
    timeout: 5s
    gitlab:
      token_file: gitlab-token
      project: platform/infra/drift-alerts
      api_url: `+srv.URL()+`
      labels: [infra, "priority::2"]
alerts:
  default_notifiers: [issues]
`)
	require.Equal(t, &config.GitLabConfig{
		TokenFile: filepath.Join(dir, "gitlab-token"), Project: "platform/infra/drift-alerts", APIURL: srv.URL(),
		Labels: []string{"infra", "priority::2"},
	}, cfg.Notifiers[0].GitLab)
	require.Contains(t, cfg.SecretFiles(), filepath.Join(dir, "gitlab-token"), "the token is redacted from every run's log")

	notifyOpen(t, buildNotifier[*gitlab.Notifier](t, cfg, "issues"))
	issues := srv.Issues()
	require.Len(t, issues, 1)
	require.Equal(t, []string{"driftwatch::drift", "infra", "priority::2"}, issues[0].Labels)
}

// Each mistake in a gitlab block is an error naming file, line and key,
// never the token.
func TestGitLabConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("glpat-CANARY"), 0o600))
	head := "notifiers:\n  - name: issues\n    type: gitlab\n"
	block := head + "    gitlab:\n      token_file: token\n"
	requireInvalid(t, dir, map[string]invalidConfig{
		"missing token_file": {head + "    gitlab:\n      project: g/p\n",
			"driftwatch.yaml:4: notifiers[0].gitlab.token_file: required"},
		"missing file": {head + "    gitlab:\n      token_file: nope\n      project: g/p\n",
			"driftwatch.yaml:5: notifiers[0].gitlab.token_file: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		"inline token": {head + "    gitlab:\n      token: glpat-CANARY\n",
			`driftwatch.yaml:5: notifiers[0].gitlab.token: unknown key "token"`},
		"missing project": {block,
			"driftwatch.yaml:4: notifiers[0].gitlab.project: required: the project's full path (group/project) or numeric ID"},
		"project without namespace": {block + "      project: drift-alerts\n",
			`driftwatch.yaml:6: notifiers[0].gitlab.project: "drift-alerts": want the project's full path with its namespace (group/project) or its numeric ID`},
		"project URL": {block + "      project: https://gitlab.com/g/p\n",
			`driftwatch.yaml:6: notifiers[0].gitlab.project: "https://gitlab.com/g/p": want the project's path (group/project) or numeric ID, not a URL`},
		"project path": {block + "      project: g//p\n",
			`driftwatch.yaml:6: notifiers[0].gitlab.project: "g//p": not a project path (segments of letters, digits, '_', '-' and '.', separated by '/')`},
		"plain http": {block + "      project: g/p\n      api_url: http://gitlab.corp.example\n",
			"driftwatch.yaml:7: notifiers[0].gitlab.api_url: must be https: the token travels in a header (http only to a loopback address)"},
		"token in url": {block + "      project: g/p\n      api_url: https://gitlab.corp.example/?private_token=CANARY\n",
			"driftwatch.yaml:7: notifiers[0].gitlab.api_url: only scheme, host, port and a path prefix are allowed"},
		"credentials in url": {block + "      project: g/p\n      api_url: https://u:CANARY@gitlab.corp.example\n",
			"driftwatch.yaml:7: notifiers[0].gitlab.api_url: credentials in the URL are not allowed"},
		"label with comma": {block + "      project: g/p\n      labels: [ok, \"a,b\"]\n",
			`notifiers[0].gitlab.labels[1]: "a,b": a label cannot contain a comma`},
		"class scope": {block + "      project: g/p\n      labels:\n        - driftwatch::drift\n",
			`driftwatch.yaml:8: notifiers[0].gitlab.labels[0]: "driftwatch::drift": the driftwatch:: scope is the class label's`},
		"no block": {head,
			"driftwatch.yaml:2: notifiers[0].gitlab: required for type gitlab"},
	})

	// Numeric IDs, self-managed URLs and no extra labels are fine.
	cfg := loadConfig(t, dir, block+"      project: 4242\n      api_url: https://corp.example/gitlab\n      labels: []\n")
	g := cfg.Notifiers[0].GitLab
	require.Equal(t, "4242", g.Project)
	require.NotNil(t, g.Labels, "labels: [] is no extra label, not the default")
	require.Empty(t, g.Labels)
}
