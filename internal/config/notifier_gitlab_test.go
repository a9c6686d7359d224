package config_test

import (
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/gitlab"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// A gitlab block loads with its token file resolved against the config's
// directory, the token file is a secret, and the factory builds a
// notifier from it that keeps an issue on a server speaking GitLab's
// REST API v4.
func TestGitLabNotifier(t *testing.T) {
	srv := notifytest.NewGitLabServer(t)
	dir := t.TempDir()
	token, err := os.ReadFile(srv.TokenFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gitlab-token"), token, 0o600))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600))

	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
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
`))
	require.NoError(t, err)
	require.Equal(t, &config.GitLabConfig{
		TokenFile: filepath.Join(dir, "gitlab-token"), Project: "platform/infra/drift-alerts", APIURL: srv.URL(),
		Labels: []string{"infra", "priority::2"},
	}, cfg.Notifiers[0].GitLab)
	require.Contains(t, cfg.SecretFiles(), filepath.Join(dir, "gitlab-token"), "the token is redacted from every run's log")

	built, err := notifiers.Build(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	n, ok := built["issues"].(*gitlab.Notifier)
	require.True(t, ok, "%T", built["issues"])
	require.Equal(t, "issues", n.Name())

	_, err = n.Notify(t.Context(), notifytest.SampleMessage(notify.EventOpen), nil, nil)
	require.NoError(t, err)
	issues := srv.Issues()
	require.Len(t, issues, 1)
	require.Equal(t, []string{"driftwatch::drift", "infra", "priority::2"}, issues[0].Labels)
}

// Each mistake in a gitlab block is an error naming file, line and key,
// never the token.
func TestGitLabConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("glpat-CANARY"), 0o600))
	file := filepath.Join(dir, "driftwatch.yaml")
	head := "notifiers:\n  - name: issues\n    type: gitlab\n"
	block := head + "    gitlab:\n      token_file: token\n"
	for name, c := range map[string]struct{ yaml, want string }{
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
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Load(file, []byte(c.yaml))
			require.Error(t, err)
			got := strings.ReplaceAll(err.Error(), dir+"/", "")
			require.Contains(t, got, strings.ReplaceAll(c.want, dir+"/", ""))
			require.NotContains(t, got, "CANARY")
		})
	}

	// Numeric IDs, self-managed URLs and no extra labels are fine.
	cfg, err := config.Load(file, []byte(block+"      project: 4242\n      api_url: https://corp.example/gitlab\n      labels: []\n"))
	require.NoError(t, err)
	g := cfg.Notifiers[0].GitLab
	require.Equal(t, "4242", g.Project)
	require.NotNil(t, g.Labels, "labels: [] is no extra label, not the default")
	require.Empty(t, g.Labels)
}
