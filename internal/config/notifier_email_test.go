package config_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify/email"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// An email block loads with its files resolved against the config's
// directory, the credential files are secret files, and the factory
// builds a notifier from it that delivers over STARTTLS with AUTH to a
// real SMTP server trusted through ca_file.
func TestEmailNotifier(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	dir := t.TempDir()
	for name, src := range map[string]string{"smtp-user": srv.UsernameFile, "smtp-pass": srv.PasswordFile, "ca.pem": srv.CAFile} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	cfg := loadConfig(t, dir, `
notifiers:
  - name: mail-oncall
    type: email
    ca_file: ca.pem
    timeout: 5s
    email:
      host: 127.0.0.1
      port: `+strconv.Itoa(srv.Port)+`
      from: "driftwatch <driftwatch@example.com>"
      to: [oncall@example.com, "Network <network@example.com>"]
      username_file: smtp-user
      password_file: smtp-pass
      tls: starttls
      subject_prefix: "[dw-prod]"
alerts:
  default_notifiers: [mail-oncall]
`)
	require.Equal(t, &config.EmailConfig{
		Host: "127.0.0.1", Port: srv.Port, From: "driftwatch <driftwatch@example.com>",
		To:           []string{"oncall@example.com", "Network <network@example.com>"},
		UsernameFile: filepath.Join(dir, "smtp-user"), PasswordFile: filepath.Join(dir, "smtp-pass"),
		TLS: "starttls", SubjectPrefix: "[dw-prod]",
	}, cfg.Notifiers[0].Email)
	secrets := cfg.SecretFiles()
	require.Contains(t, secrets, filepath.Join(dir, "smtp-user"), "the username is redacted from every run's log")
	require.Contains(t, secrets, filepath.Join(dir, "smtp-pass"), "the password is redacted from every run's log")

	notifyOpen(t, buildNotifier[*email.Notifier](t, cfg, "mail-oncall"))
	envs := srv.Envelopes()
	require.Len(t, envs, 1)
	require.Equal(t, "driftwatch@example.com", envs[0].From)
	require.Equal(t, []string{"oncall@example.com", "network@example.com"}, envs[0].To)
	require.Equal(t, srv.Username, envs[0].User)
	require.Equal(t, "[dw-prod] Terraform drift in prod/network", envs[0].Message(t).Header.Get("Subject"))
}

// Each mistake in an email block is an error naming file, line and key,
// never a credential.
func TestEmailConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "user"), []byte("CANARY-user"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pass"), []byte("CANARY-pass"), 0o600))
	head := "notifiers:\n  - name: mail\n    type: email\n    email:\n"
	ok := "      host: smtp.example.com\n      from: dw@example.com\n      to: [ops@example.com]\n"
	requireInvalid(t, dir, map[string]invalidConfig{
		"no block": {"notifiers:\n  - name: mail\n    type: email\n",
			"driftwatch.yaml:2: notifiers[0].email: required for type email"},
		"missing host": {head + "      from: dw@example.com\n      to: [ops@example.com]\n",
			"notifiers[0].email.host: required"},
		"host with port": {head + "      host: smtp.example.com:587\n      from: dw@example.com\n      to: [ops@example.com]\n",
			`driftwatch.yaml:5: notifiers[0].email.host: "smtp.example.com:587": want a host name or IP address, without scheme or port (set port)`},
		"bad port": {head + ok + "      port: 99999\n",
			"driftwatch.yaml:8: notifiers[0].email.port: 99999: want 1 to 65535"},
		"bad from": {head + "      host: smtp.example.com\n      from: driftwatch\n      to: [ops@example.com]\n",
			`driftwatch.yaml:6: notifiers[0].email.from: "driftwatch": not an email address (want addr@example.com or Name <addr@example.com>)`},
		"no recipients": {head + "      host: smtp.example.com\n      from: dw@example.com\n",
			"notifiers[0].email.to: at least one recipient is required"},
		"bad recipient": {head + "      host: smtp.example.com\n      from: dw@example.com\n      to:\n        - ops@example.com\n        - ops\n",
			`driftwatch.yaml:9: notifiers[0].email.to[1]: "ops": not an email address (want addr@example.com or Name <addr@example.com>)`},
		"duplicate recipient": {head + "      host: smtp.example.com\n      from: dw@example.com\n      to: [ops@example.com, OPS@example.com]\n",
			`notifiers[0].email.to[1]: "OPS@example.com" is listed twice`},
		"username without password": {head + ok + "      username_file: user\n",
			"driftwatch.yaml:8: notifiers[0].email.username_file: set password_file too (both for AUTH, or neither)"},
		"missing password file": {head + ok + "      username_file: user\n      password_file: nope\n",
			"driftwatch.yaml:9: notifiers[0].email.password_file: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		"inline password": {head + ok + "      password: hunter2\n",
			`driftwatch.yaml:8: notifiers[0].email.password: unknown key "password"`},
		"plain text": {head + ok + "      tls: none\n",
			`driftwatch.yaml:8: notifiers[0].email.tls: unknown mode "none" (use starttls or implicit; there is no plain-text mode)`},
		"long prefix": {head + ok + "      subject_prefix: \"" + strings.Repeat("x", 41) + "\"\n",
			"driftwatch.yaml:8: notifiers[0].email.subject_prefix: want one line of at most 40 characters"},
	})
}
