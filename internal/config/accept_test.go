package config

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAcceptBlock(t *testing.T) {
	dir := t.TempDir()
	ws := "workspaces:\n  - name: a\n    source: { path: " + mustAbs(t, "testdata/net") + " }\n"
	notifiers := `notifiers:
  - name: gh
    type: github
    github: { token_file: /dev/null, repository: acme/infra }
  - name: hook
    type: webhook
    webhook: { url_file: /dev/null, secret_file: /dev/null }
`
	load := func(accept string) error {
		_, err := Load(filepath.Join(dir, "driftwatch.yaml"), []byte(notifiers+accept+ws))
		return err
	}

	cfg, err := Load(filepath.Join(dir, "driftwatch.yaml"), []byte(notifiers+ws))
	require.NoError(t, err)
	require.Equal(t, AcceptProposal{BranchPrefix: "driftwatch/accept", AuthorName: "driftwatch", AuthorEmail: "driftwatch@localhost"},
		cfg.EffectiveAccept(), "no block: no proposals, the defaults")

	cfg, err = Load(filepath.Join(dir, "driftwatch.yaml"), []byte(notifiers+`accept:
  notifier: gh
  branch_prefix: infra/accepted
  labels: [drift]
  author_name: Drift Bot
  author_email: bot@acme.example
`+ws))
	require.NoError(t, err)
	require.Equal(t, AcceptProposal{Notifier: "gh", BranchPrefix: "infra/accepted", AuthorName: "Drift Bot", AuthorEmail: "bot@acme.example", Labels: []string{"drift"}},
		cfg.EffectiveAccept())

	for accept, want := range map[string]string{
		"accept: { notifier: nobody }\n":             `driftwatch.yaml:8: accept.notifier: unknown notifier "nobody"`,
		"accept: { notifier: hook }\n":               `accept.notifier: "hook" is a webhook notifier: pull and merge requests are opened through a github or gitlab one`,
		"accept: { branch_prefix: 'a..b' }\n":        `accept.branch_prefix: "a..b" is not a valid git branch name prefix`,
		"accept: { branch_prefix: 'a/.hidden' }\n":   `accept.branch_prefix: "a/.hidden" is not a valid git branch name prefix`,
		"accept: { branch_prefix: 'x.lock/y' }\n":    `accept.branch_prefix: "x.lock/y" is not a valid git branch name prefix`,
		"accept: { labels: ['a,b'] }\n":              `accept.labels[0]: "a,b": want a non-empty label without commas or line breaks`,
		"accept: { author_name: 'Bot <x>' }\n":       `accept.author_name: must not contain <, > or line breaks`,
		"accept: { author_email: 'Bot <b@x.io>' }\n": `accept.author_email: "Bot <b@x.io>" is not an email address`,
		"accept: { author_email: 'not an email' }\n": `accept.author_email: "not an email" is not an email address`,
		"accept: { notifer: gh }\n":                  `accept.notifer: unknown key`,
	} {
		err := load(accept)
		require.Error(t, err, accept)
		require.Contains(t, err.Error(), want, accept)
	}
}
