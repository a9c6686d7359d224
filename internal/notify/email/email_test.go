package email

import (
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

const (
	sampleRoot = "<dw-drift-prod-network-3f9a2c.20261103T090000Z@example.com>"
	fromAddr   = "driftwatch@example.com"
)

var testTo = []string{"oncall@example.com", "Équipe Réseau <network@example.com>"}

// testConfig is a notifier's config for srv: STARTTLS (or implicit for
// an implicit server), its CA, its credentials.
func testConfig(srv *notifytest.SMTPServer) Config {
	return Config{
		Name: "mail-oncall", Host: srv.Host, Port: srv.Port,
		From: "driftwatch <" + fromAddr + ">", To: testTo,
		UsernameFile: srv.UsernameFile, PasswordFile: srv.PasswordFile,
		CAFile: srv.CAFile, Timeout: 5 * time.Second,
	}
}

func newTestNotifier(t *testing.T, cfg Config, logger *slog.Logger) *Notifier {
	t.Helper()
	logger = notifytest.OrDiscard(logger)
	n, err := New(cfg, logger)
	require.NoError(t, err)
	return n
}

// wantData is what the builder makes of m for the test notifier: the
// bytes the server must receive.
func wantData(t *testing.T, n *Notifier, m notify.Message) []byte {
	t.Helper()
	msg, err := buildMessage(m, n.opts)
	require.NoError(t, err)
	return msg.Data
}

// One incident is one thread: the open message is its root, every later
// message replies to it; each went over STARTTLS, authenticated with
// AUTH PLAIN, in one transaction to both recipients, with exactly the
// builder's bytes.
func TestLifecycle(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	n := newTestNotifier(t, testConfig(srv), nil)
	events := notifytest.LifecycleEvents
	notifytest.NotifyLifecycle(t, n, true)

	envs := srv.Envelopes()
	require.Len(t, envs, len(events))
	for i, e := range envs {
		ev := events[i]
		require.Equal(t, fromAddr, e.From, ev)
		require.Equal(t, []string{"oncall@example.com", "network@example.com"}, e.To, ev)
		require.True(t, e.TLS, ev)
		require.Equal(t, srv.Username, e.User, ev)
		require.Equal(t, string(wantData(t, n, notifytest.SampleMessage(ev))), string(e.Data), ev)

		m := e.Message(t)
		subject := decodeHeader(t, m.Header.Get("Subject"))
		if ev == notify.EventOpen {
			require.Equal(t, "[driftwatch] Terraform drift in prod/network", subject)
			require.Equal(t, sampleRoot, m.Header.Get("Message-ID"))
			require.Empty(t, m.Header.Get("In-Reply-To"))
			continue
		}
		require.Equal(t, "Re: [driftwatch] Terraform drift in prod/network", subject, ev)
		require.Equal(t, "<dw-msg-"+string(ev)+"-0001@example.com>", m.Header.Get("Message-ID"))
		require.Equal(t, sampleRoot, m.Header.Get("In-Reply-To"))
		require.Equal(t, sampleRoot, m.Header.Get("References"))
	}
	auths := srv.Auths()
	require.Len(t, auths, len(events))
	for _, a := range auths {
		require.Equal(t, notifytest.SMTPAuth{Mechanism: "PLAIN", OK: true, TLS: true}, a)
	}
	require.Zero(t, srv.RefusedMail())
}

// A crash between the server accepting a message and the outbox
// recording it resends the message with the previous state: the same
// bytes, the same Message-ID, which mail clients de-duplicate.
func TestCrashReplay(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	n := newTestNotifier(t, testConfig(srv), nil)
	var prev []byte
	for _, ev := range []notify.Event{notify.EventOpen, notify.EventUpdate} {
		m := notifytest.SampleMessage(ev)
		st, err := notifytest.NotifyStateless(t, n, m, prev)
		require.NoError(t, err)
		_, err = notifytest.NotifyStateless(t, n, m, prev) // the replay: what the first call returned is lost
		require.NoError(t, err)
		prev = st
	}
	envs := srv.Envelopes()
	require.Len(t, envs, 4)
	for i := 0; i < 4; i += 2 {
		require.Equal(t, envs[i].Data, envs[i+1].Data)
		require.Equal(t, envs[i].Message(t).Header.Get("Message-ID"), envs[i+1].Message(t).Header.Get("Message-ID"))
	}
	require.Equal(t, sampleRoot, envs[0].Message(t).Header.Get("Message-ID"))
	require.Equal(t, sampleRoot, envs[3].Message(t).Header.Get("In-Reply-To"))
}

// 4xx replies, at any command, are retried; nothing was accepted; the
// next attempt delivers.
func TestTransientReplies(t *testing.T) {
	for _, tc := range []struct {
		f    notifytest.SMTPFailure
		want string
	}{
		{notifytest.SMTPFailure{At: notifytest.SMTPAtConnect, Code: 421, Enhanced: [3]int{4, 7, 0}, Message: "Too many connections, try again later"},
			"greeting: 421 4.7.0 Too many connections, try again later"},
		{notifytest.SMTPFailure{At: notifytest.SMTPAtAuth, Code: 454, Enhanced: [3]int{4, 7, 0}, Message: "Temporary authentication failure"},
			"AUTH PLAIN: 454 4.7.0 Temporary authentication failure"},
		{notifytest.SMTPFailure{At: notifytest.SMTPAtMail, Code: 451, Enhanced: [3]int{4, 3, 0}, Message: "Try again later"},
			"MAIL FROM: 451 4.3.0 Try again later"},
		{notifytest.SMTPFailure{At: notifytest.SMTPAtMail, Code: 421, Enhanced: [3]int{4, 7, 0}, Message: "Too many connections"},
			"MAIL FROM: 421 4.7.0 Too many connections"},
		{notifytest.SMTPFailure{At: notifytest.SMTPAtRcpt, Code: 450, Enhanced: [3]int{4, 2, 1}, Message: "Mailbox temporarily unavailable"},
			"RCPT TO <oncall@example.com>: 450 4.2.1 Mailbox temporarily unavailable"},
		{notifytest.SMTPFailure{At: notifytest.SMTPAtRcpt, Code: 452, Enhanced: [3]int{4, 5, 3}, Message: "Too many recipients"},
			"RCPT TO <oncall@example.com>: 452 4.5.3 Too many recipients"},
		{notifytest.SMTPFailure{At: notifytest.SMTPAtData, Code: 451, Enhanced: [3]int{4, 3, 0}, Message: "Queue full"},
			"end of DATA: 451 4.3.0 Queue full"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
			n := newTestNotifier(t, testConfig(srv), nil)
			srv.FailNext(tc.f)
			_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
			require.EqualError(t, err, "email mail-oncall: send "+sampleRoot+": "+tc.want)
			retry, after := notify.IsRetryable(err)
			require.True(t, retry)
			require.Zero(t, after, "the outbox's backoff")
			var re *ReplyError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.f.Code, re.Code)
			require.Empty(t, srv.Envelopes())

			_, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
			require.NoError(t, err)
			require.Len(t, srv.Envelopes(), 1)
		})
	}
}

// 5xx replies are permanent; the error carries the server's reply, which
// is what the notifier's status shows.
func TestPermanentReplies(t *testing.T) {
	for _, tc := range []struct {
		f    notifytest.SMTPFailure
		want string
	}{
		{notifytest.SMTPFailure{At: notifytest.SMTPAtMail, Code: 550, Enhanced: [3]int{5, 7, 1}, Message: "Sender address rejected: not owned by user"},
			"MAIL FROM: 550 5.7.1 Sender address rejected: not owned by user"},
		{notifytest.SMTPFailure{At: notifytest.SMTPAtRcpt, Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "No such user"},
			"RCPT TO <oncall@example.com>: 550 5.1.1 No such user"},
		{notifytest.SMTPFailure{At: notifytest.SMTPAtData, Code: 554, Enhanced: [3]int{5, 6, 0}, Message: "Message rejected as spam"},
			"end of DATA: 554 5.6.0 Message rejected as spam"},
		{notifytest.SMTPFailure{At: notifytest.SMTPAtData, Code: 552, Enhanced: [3]int{5, 3, 4}, Message: "Message size exceeds fixed limit"},
			"end of DATA: 552 5.3.4 Message size exceeds fixed limit"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
			n := newTestNotifier(t, testConfig(srv), nil)
			srv.FailNext(tc.f)
			_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
			require.EqualError(t, err, "email mail-oncall: send "+sampleRoot+": "+tc.want)
			retry, _ := notify.IsRetryable(err)
			require.False(t, retry)
			require.Empty(t, srv.Envelopes())
		})
	}

	// One recipient refused: nobody gets the message (all or none, so a
	// retry after the fix doubles nothing).
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	n := newTestNotifier(t, testConfig(srv), nil)
	srv.FailNext(notifytest.SMTPFailure{At: notifytest.SMTPAtRcpt}) // oncall: 451
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.Error(t, err)
	require.Empty(t, srv.Envelopes())
}

// Wrong credentials: the server's 535, permanent, and no credential in
// the error.
func TestAuthFailed(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	cfg := testConfig(srv)
	wrong := notifytest.Canary("wrong-pass")
	cfg.PasswordFile = notifytest.NewFiles(t).Write("password", wrong+"\n")
	n := newTestNotifier(t, cfg, nil)
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, "email mail-oncall: send "+sampleRoot+": AUTH PLAIN: 535 5.7.8 Authentication failed")
	retry, _ := notify.IsRetryable(err)
	require.False(t, retry)
	notifytest.RequireNoSecrets(t, err, append(srv.Secrets(), wrong))
	require.Equal(t, []notifytest.SMTPAuth{{Mechanism: "PLAIN", OK: false, TLS: true}}, srv.Auths())
	require.Empty(t, srv.Envelopes())
}

// Dropped connections and a server that stops answering are retried;
// the attempt's timeout ends a hang.
func TestDropsAndHangs(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	n := newTestNotifier(t, testConfig(srv), nil)
	open := notifytest.SampleMessage(notify.EventOpen)
	prefix := "email mail-oncall: send " + sampleRoot + ": "

	srv.Down()
	_, err := notifytest.NotifyStateless(t, n, open, nil)
	require.EqualError(t, err, prefix+"greeting: EOF")
	requireRetryable(t, err)
	srv.Up()

	for _, at := range []string{notifytest.SMTPAtEHLO, notifytest.SMTPAtAuth, notifytest.SMTPAtMail, notifytest.SMTPAtRcpt, notifytest.SMTPAtData} {
		srv.FailNext(notifytest.SMTPFailure{At: at, Drop: true})
		_, err = notifytest.NotifyStateless(t, n, open, nil)
		require.Error(t, err, at)
		require.True(t, strings.HasPrefix(err.Error(), prefix), err)
		requireRetryable(t, err)
	}
	require.Empty(t, srv.Envelopes())

	n.timeout = 300 * time.Millisecond
	for _, at := range []string{notifytest.SMTPAtEHLO, notifytest.SMTPAtData} {
		srv.FailNext(notifytest.SMTPFailure{At: at, Hang: true})
		start := time.Now()
		_, err = notifytest.NotifyStateless(t, n, open, nil)
		require.Less(t, time.Since(start), 3*time.Second)
		step := map[string]string{notifytest.SMTPAtEHLO: "EHLO", notifytest.SMTPAtData: "end of DATA"}[at]
		require.EqualError(t, err, prefix+step+": timeout after 300ms")
		requireRetryable(t, err)
	}

	n.timeout = 5 * time.Second
	_, err = notifytest.NotifyStateless(t, n, open, nil)
	require.NoError(t, err)
	require.Len(t, srv.Envelopes(), 1)
}

func requireRetryable(t *testing.T, err error) {
	t.Helper()
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry, "%v", err)
}

// The caller's context ends a hanging attempt promptly, with a
// retryable context error; a context already done sends nothing.
func TestContext(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	n := newTestNotifier(t, testConfig(srv), nil)
	srv.FailNext(notifytest.SMTPFailure{At: notifytest.SMTPAtRcpt, Hang: true})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := n.Notify(ctx, notifytest.SampleMessage(notify.EventOpen), nil, nil)
	require.Less(t, time.Since(start), 3*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.EqualError(t, err, "email mail-oncall: send "+sampleRoot+": RCPT TO <oncall@example.com>: context deadline exceeded")
	requireRetryable(t, err)

	conns := srv.Connections()
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	_, err = n.Notify(ctx, notifytest.SampleMessage(notify.EventOpen), nil, nil)
	require.ErrorIs(t, err, context.Canceled)
	requireRetryable(t, err)
	require.Equal(t, conns, srv.Connections(), "no connection once the context is done")
	require.Empty(t, srv.Envelopes())
}

// Without STARTTLS on offer nothing is sent: no AUTH, no MAIL FROM.
func TestRefusesWithoutTLS(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{NoTLS: true})
	n := newTestNotifier(t, testConfig(srv), nil)
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, "email mail-oncall: send "+sampleRoot+": the server does not offer STARTTLS; refusing to send without TLS (set tls: implicit for SMTPS)")
	retry, _ := notify.IsRetryable(err)
	require.False(t, retry)
	require.Empty(t, srv.Auths())
	require.Zero(t, srv.RefusedMail())
	require.Empty(t, srv.Envelopes())
}

// tls: implicit speaks TLS from the first byte (SMTPS); against a port
// that speaks plain SMTP first it fails permanently, saying why.
func TestImplicitTLS(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{Implicit: true})
	cfg := testConfig(srv)
	cfg.TLS = TLSImplicit
	n := newTestNotifier(t, cfg, nil)
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	envs := srv.Envelopes()
	require.Len(t, envs, 1)
	require.True(t, envs[0].TLS)
	require.Equal(t, srv.Username, envs[0].User)

	plain := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	cfg = testConfig(plain)
	cfg.TLS = TLSImplicit
	n = newTestNotifier(t, cfg, nil)
	_, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, "email mail-oncall: send "+sampleRoot+": TLS handshake: the server does not speak TLS here (tls: implicit is for SMTPS, port 465; use starttls for 587)")
	retry, _ := notify.IsRetryable(err)
	require.False(t, retry)
}

// A certificate the notifier does not trust is a permanent error, and
// no credential is sent.
func TestUntrustedCertificate(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	cfg := testConfig(srv)
	cfg.CAFile = ""
	n := newTestNotifier(t, cfg, nil)
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.ErrorContains(t, err, "email mail-oncall: send "+sampleRoot+": STARTTLS: the server's certificate is not trusted (set ca_file for a private CA): ")
	retry, _ := notify.IsRetryable(err)
	require.False(t, retry)
	require.Empty(t, srv.Auths())
	require.Empty(t, srv.Envelopes())
}

// A relay that needs no AUTH: no credentials, no AUTH. Credentials set
// for a server that offers no AUTH: refused, not sent unauthenticated.
// A server offering only LOGIN gets LOGIN.
func TestAuthModes(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{NoAuth: true})
	cfg := testConfig(srv)
	cfg.UsernameFile, cfg.PasswordFile = "", ""
	_, err := notifytest.NotifyStateless(t, newTestNotifier(t, cfg, nil), notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	envs := srv.Envelopes()
	require.Len(t, envs, 1)
	require.True(t, envs[0].TLS)
	require.Empty(t, envs[0].User)

	_, err = notifytest.NotifyStateless(t, newTestNotifier(t, testConfig(srv), nil), notifytest.SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, `email mail-oncall: the server offers no AUTH PLAIN or LOGIN (offered: ""); credentials are set, so nothing is sent unauthenticated`)
	require.Len(t, srv.Envelopes(), 1)

	// Without credentials against a server that wants them: its 530.
	authSrv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	cfg = testConfig(authSrv)
	cfg.UsernameFile, cfg.PasswordFile = "", ""
	_, err = notifytest.NotifyStateless(t, newTestNotifier(t, cfg, nil), notifytest.SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, "email mail-oncall: send "+sampleRoot+": MAIL FROM: 530 5.7.0 Authentication required")

	login := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{LoginOnly: true})
	_, err = notifytest.NotifyStateless(t, newTestNotifier(t, testConfig(login), nil), notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	require.Equal(t, []notifytest.SMTPAuth{{Mechanism: "LOGIN", OK: true, TLS: true}}, login.Auths())
	require.Equal(t, login.Username, login.Envelopes()[0].User)
}

// The username and password (and their base64 forms, as AUTH sends
// them) never reach an error, a state or a log line, whatever the server
// echoes.
func TestCanaryAbsentEverywhere(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	logger, logs := notifytest.CaptureLogger()
	n := newTestNotifier(t, testConfig(srv), logger)
	b64 := base64.StdEncoding.EncodeToString
	secrets := append(srv.Secrets(), b64([]byte(srv.Password)), b64([]byte("\x00"+srv.Username+"\x00"+srv.Password)))
	echo := "bad " + srv.Username + " " + srv.Password + " " + b64([]byte("\x00"+srv.Username+"\x00"+srv.Password)) + " " + b64([]byte(srv.Password))
	var errs []error
	var states [][]byte
	run := func(ev notify.Event) {
		st, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(ev), nil)
		errs = append(errs, err)
		states = append(states, st)
	}
	run(notify.EventOpen)
	for _, f := range []notifytest.SMTPFailure{
		{At: notifytest.SMTPAtAuth, Code: 535, Enhanced: [3]int{5, 7, 8}, Message: echo},
		{At: notifytest.SMTPAtAuth, Code: 454, Enhanced: [3]int{4, 7, 0}, Message: echo},
		{At: notifytest.SMTPAtMail, Code: 550, Message: echo},
		{At: notifytest.SMTPAtRcpt, Code: 451, Message: echo},
		{At: notifytest.SMTPAtData, Code: 554, Message: echo},
		{At: notifytest.SMTPAtConnect, Code: 421, Message: echo},
	} {
		srv.FailNext(f)
		run(notify.EventUpdate)
	}
	srv.Down()
	run(notify.EventRenotify)
	srv.Up()
	run(notify.EventResolve)

	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
		}
		if i >= 1 && i <= 6 {
			require.ErrorContains(t, err, "bad [REDACTED] [REDACTED] [REDACTED] [REDACTED]", "the server's echo, redacted")
		}
		notifytest.RequireNoSecrets(t, err, secrets)
	}
	require.Equal(t, 7, failed)
	for _, s := range states {
		notifytest.RequireNoSecretsIn(t, string(s), secrets)
	}
	notifytest.RequireNoSecretsIn(t, logs(), secrets)
	require.NotEmpty(t, logs())
	for _, e := range srv.Envelopes() {
		notifytest.RequireNoSecretsIn(t, string(e.Data), secrets)
	}
}

func TestPermanentErrors(t *testing.T) {
	srv := notifytest.NewSMTPServer(t, notifytest.SMTPOptions{})
	n := newTestNotifier(t, testConfig(srv), nil)
	notifytest.RequireUnknownEvent(t, n, []byte("{}"), srv.Connections, `email mail-oncall: unknown event "snooze"`)
}

func TestNew(t *testing.T) {
	files := notifytest.NewFiles(t)
	write := files.Write
	logger := slog.New(slog.DiscardHandler)
	base := Config{Name: "mail", Host: "smtp.example.com", From: "dw@example.com", To: []string{"ops@example.com"}}

	_, err := New(base, nil)
	require.EqualError(t, err, "email: logger is required")

	n, err := New(base, logger)
	require.NoError(t, err)
	require.Equal(t, "mail", n.Name())
	require.Equal(t, "smtp.example.com:587", n.addr)
	require.False(t, n.implicit)
	require.Equal(t, DefaultTimeout, n.timeout)
	require.Equal(t, "[driftwatch]", n.opts.prefix)
	require.Empty(t, n.username)

	c := base
	c.TLS, c.SubjectPrefix = TLSImplicit, "[tf]"
	n, err = New(c, logger)
	require.NoError(t, err)
	require.Equal(t, "smtp.example.com:465", n.addr)
	require.True(t, n.implicit)
	require.Equal(t, "[tf]", n.opts.prefix)

	user, pass := notifytest.Canary("user"), notifytest.Canary("pass")+" with spaces "
	c = base
	c.UsernameFile, c.PasswordFile = write("user", user+"\n"), write("pass", pass+"\r\n")
	n, err = New(c, logger)
	require.NoError(t, err)
	require.Equal(t, user, n.username)
	require.Equal(t, pass, n.password, "a password keeps its spaces; only the line end goes")

	for name, content := range map[string]string{"empty": " \n", "two-lines": pass + "\n" + pass} {
		c.PasswordFile = write(name, content)
		_, err = New(c, logger)
		require.Error(t, err)
		require.Contains(t, err.Error(), `email "mail": password_file "`+c.PasswordFile+`"`)
		notifytest.RequireNoSecrets(t, err, []string{user, strings.TrimSpace(pass)})
	}
	c.PasswordFile = files.Path("missing")
	_, err = New(c, logger)
	require.ErrorIs(t, err, os.ErrNotExist)

	c = base
	c.CAFile = write("ca.pem", "not a certificate")
	_, err = New(c, logger)
	require.EqualError(t, err, `email "mail": ca_file: `+c.CAFile+`: no PEM certificate found`)
}

func TestValidate(t *testing.T) {
	base := Config{Name: "mail", Host: "smtp.example.com", From: "dw@example.com", To: []string{"ops@example.com"}}
	require.NoError(t, base.Validate())
	for want, mut := range map[string]func(*Config){
		"name: required": func(c *Config) { c.Name = "" },
		"host: required": func(c *Config) { c.Host = "" },
		`host: "smtp.example.com:587": want a host name or IP address, without scheme or port (set port)`: func(c *Config) { c.Host = "smtp.example.com:587" },
		"port: 70000: want 1 to 65535": func(c *Config) { c.Port = 70000 },
		"from: required":               func(c *Config) { c.From = "" },
		`from: "driftwatch": not an email address (want addr@example.com or Name <addr@example.com>)`: func(c *Config) { c.From = "driftwatch" },
		"from: an address must be on one line":                                                        func(c *Config) { c.From = "dw@example.com\r\nBcc: x@example.net" },
		`to[0]: "ops@exämple.com": the address must be ASCII (the display name may not be)`:           func(c *Config) { c.To = []string{"ops@exämple.com"} },
		"to: at least one recipient is required":                                                      func(c *Config) { c.To = nil },
		"to[1]: \"Ops <OPS@example.com>\" is listed twice":                                            func(c *Config) { c.To = []string{"ops@example.com", "Ops <OPS@example.com>"} },
		"username_file: set password_file too (both for AUTH, or neither)":                            func(c *Config) { c.UsernameFile = "/u" },
		`tls: unknown mode "none" (use starttls or implicit; there is no plain-text mode)`:            func(c *Config) { c.TLS = "none" },
		"subject_prefix: want one line of at most 40 characters":                                      func(c *Config) { c.SubjectPrefix = "[a]\n" },
		"timeout: -1s: must not be negative":                                                          func(c *Config) { c.Timeout = -time.Second },
	} {
		c := base
		c.To = append([]string(nil), base.To...)
		mut(&c)
		require.EqualError(t, c.Validate(), want)
	}
}
