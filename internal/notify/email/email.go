package email

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/email/emailcfg"
	"github.com/driftwatch/driftwatch/internal/tlsfiles/cafile"
)

// maxReply bounds the server's reply text on an error.
const maxReply = 300

// Notifier sends incidents as email through one SMTP submission server.
// It implements notify.Notifier.
type Notifier struct {
	name     string
	host     string
	addr     string // host:port
	implicit bool
	tls      *tls.Config
	username string
	password string
	// secrets are what clean removes: the credentials and their base64
	// forms (an AUTH line a server might echo).
	secrets []string
	opts    options
	timeout time.Duration
	logger  *slog.Logger
	// now dates a message without m.At (a test seam).
	now func() time.Time
}

var _ notify.Notifier = (*Notifier)(nil)

// New validates cfg and reads the credential and CA files. It does no
// network I/O.
func New(cfg Config, logger *slog.Logger) (*Notifier, error) {
	if _, err := notify.Open("email", cfg.Name, logger, cfg.Validate, notify.Secret{}); err != nil {
		return nil, err
	}
	from, _ := emailcfg.Address(cfg.From) // Validate checked it
	to := make([]*mail.Address, len(cfg.To))
	for i, s := range cfg.To {
		to[i], _ = emailcfg.Address(s)
	}
	n := &Notifier{
		name:     cfg.Name,
		host:     cfg.Host,
		addr:     net.JoinHostPort(cfg.Host, strconv.Itoa(port(cfg))),
		implicit: cfg.TLS == TLSImplicit,
		opts:     options{from: from, to: to, prefix: cmp.Or(cfg.SubjectPrefix, DefaultSubjectPrefix)},
		timeout:  cmp.Or(cfg.Timeout, DefaultTimeout),
		logger:   logger.With("notifier", cfg.Name),
		now:      time.Now,
	}
	if cfg.UsernameFile != "" {
		var err error
		if n.username, err = readSecret(cfg.Name, "username_file", cfg.UsernameFile); err != nil {
			return nil, err
		}
		if n.password, err = readSecret(cfg.Name, "password_file", cfg.PasswordFile); err != nil {
			return nil, err
		}
		b64 := base64.StdEncoding.EncodeToString
		n.secrets = []string{n.password, n.username, b64([]byte(n.password)), b64([]byte(n.username)),
			b64([]byte("\x00" + n.username + "\x00" + n.password))}
		// Longest first: no shorter secret's replacement can break up a
		// longer one before it is found.
		slices.SortFunc(n.secrets, func(a, b string) int { return len(b) - len(a) })
	}
	pool, err := cafile.Pool(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("email %q: ca_file: %w", cfg.Name, err)
	}
	n.tls = &tls.Config{ServerName: cfg.Host, RootCAs: pool, MinVersion: tls.VersionTLS12}
	return n, nil
}

// readSecret reads a one-line credential: surrounding line ends are
// dropped, the value is never quoted in an error.
func readSecret(name, key, path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		// The *PathError names the file, not its content.
		return "", fmt.Errorf("email %q: %s: %w", name, key, err)
	}
	s := strings.Trim(string(raw), "\r\n")
	switch {
	case strings.TrimSpace(s) == "":
		return "", fmt.Errorf("email %q: %s %q is empty", name, key, path)
	case strings.ContainsAny(s, "\r\n\x00"):
		return "", fmt.Errorf("email %q: %s %q: want the value on one line", name, key, path)
	}
	return s, nil
}

// Name implements notify.Notifier.
func (n *Notifier) Name() string { return n.name }

// Notify implements notify.Notifier: one SMTP transaction per message,
// to every recipient or none. The thread is derived from the incident,
// so state is returned unchanged, and nil after a resolve.
func (n *Notifier) Notify(ctx context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
	if m.At.IsZero() {
		m.At = n.now()
	}
	msg, err := buildMessage(m, n.opts)
	if err != nil {
		return state, fmt.Errorf("email %s: %w", n.name, err)
	}
	if err := n.send(ctx, msg); err != nil {
		return state, err
	}
	n.logger.Debug("email delivered", "event", string(m.Event), "message_id", msg.ID, "recipients", len(msg.To))
	return notify.KeptState(m, state), nil
}

// ReplyError is an SMTP server's refusal: the command it answered, its
// reply code and its text (redacted, bounded). 4xx is retried, 5xx is
// permanent.
type ReplyError struct {
	// Command is what was refused: "MAIL FROM", "RCPT TO <addr>", "AUTH
	// PLAIN", "DATA", "end of DATA", ...
	Command string
	Code    int
	// Message is the server's text, enhanced status code first when the
	// server sends one (e.g. "5.7.8 Authentication failed").
	Message string
}

// Error implements error.
func (e *ReplyError) Error() string {
	s := fmt.Sprintf("%s: %d", e.Command, e.Code)
	if e.Message != "" {
		s += " " + e.Message
	}
	return s
}

// Temporary reports a 4xx reply.
func (e *ReplyError) Temporary() bool { return e.Code/100 == 4 }

// send runs one SMTP session: connect (TLS first when implicit), EHLO,
// STARTTLS (required, unless implicit), AUTH when credentials are set,
// MAIL FROM, RCPT TO for every recipient, DATA, QUIT. The attempt is
// bounded by the timeout and ctx: when either is done the connection is
// closed, which ends any read or write in progress.
func (n *Notifier) send(ctx context.Context, msg message) error {
	op := "send " + msg.ID
	if err := notify.Interrupted(ctx, fmt.Sprintf("email %s: %s", n.name, op)); err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	fail := func(step string, err error) error { return n.classify(ctx, actx, op, step, err) }

	var d net.Dialer
	raw, err := d.DialContext(actx, "tcp", n.addr)
	if err != nil {
		return fail("connect", err)
	}
	defer raw.Close()
	// The deadline bounds every read and write (net/smtp never moves
	// it); closing on ctx ends them early when the caller gives up.
	if dl, ok := actx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	stop := context.AfterFunc(actx, func() { _ = raw.Close() })
	defer stop()

	conn := raw
	if n.implicit {
		tc := tls.Client(raw, n.tls)
		if err := tc.HandshakeContext(actx); err != nil {
			return fail("TLS handshake", err)
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, n.host)
	if err != nil {
		return fail("greeting", err)
	}
	if err := c.Hello("localhost"); err != nil {
		return fail("EHLO", err)
	}
	if !n.implicit {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("email %s: %s: the server does not offer STARTTLS; refusing to send without TLS (set tls: implicit for SMTPS)", n.name, op)
		}
		if err := c.StartTLS(n.tls); err != nil {
			return fail("STARTTLS", err)
		}
	}
	if n.username != "" {
		if err := n.auth(c, fail); err != nil {
			return err
		}
	}
	if err := c.Mail(msg.From); err != nil {
		return fail("MAIL FROM", err)
	}
	for _, to := range msg.To {
		if err := c.Rcpt(to); err != nil {
			return fail("RCPT TO <"+to+">", err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fail("DATA", err)
	}
	if _, err := w.Write(msg.Data); err != nil {
		return fail("DATA", err)
	}
	if err := w.Close(); err != nil {
		return fail("end of DATA", err)
	}
	// Accepted: a failing QUIT changes nothing (resending would deliver
	// the message twice).
	_ = c.Quit()
	return nil
}

// auth authenticates with PLAIN, or LOGIN when the server offers only
// that. The connection is TLS by now: send refuses any other.
func (n *Notifier) auth(c *smtp.Client, fail func(string, error) error) error {
	ok, mechs := c.Extension("AUTH")
	offered := strings.Fields(strings.ToUpper(mechs))
	var a smtp.Auth
	var mech string
	switch {
	case ok && slices.Contains(offered, "PLAIN"):
		a, mech = plainAuth{user: n.username, pass: n.password}, "AUTH PLAIN"
	case ok && slices.Contains(offered, "LOGIN"):
		a, mech = &loginAuth{user: n.username, pass: n.password}, "AUTH LOGIN"
	default:
		return fmt.Errorf("email %s: the server offers no AUTH PLAIN or LOGIN (offered: %q); credentials are set, so nothing is sent unauthenticated",
			n.name, n.clean(mechs, 100))
	}
	if err := c.Auth(a); err != nil {
		return fail(mech, err)
	}
	return nil
}

// plainAuth is AUTH PLAIN (RFC 4616) without net/smtp's own TLS check,
// which send already makes (and which would refuse a loopback test
// server's TLS for no reason).
type plainAuth struct{ user, pass string }

func (a plainAuth) Start(info *smtp.ServerInfo) (string, []byte, error) {
	if !info.TLS {
		return "", nil, errors.New("refusing AUTH without TLS")
	}
	return "PLAIN", []byte("\x00" + a.user + "\x00" + a.pass), nil
}

func (a plainAuth) Next(_ []byte, more bool) ([]byte, error) {
	if more {
		return nil, errors.New("unexpected server challenge after AUTH PLAIN")
	}
	return nil, nil
}

// loginAuth is AUTH LOGIN: the username, then the password, each asked
// for by a challenge.
type loginAuth struct {
	user, pass string
	step       int
}

func (a *loginAuth) Start(info *smtp.ServerInfo) (string, []byte, error) {
	if !info.TLS {
		return "", nil, errors.New("refusing AUTH without TLS")
	}
	a.step = 0
	return "LOGIN", nil, nil
}

func (a *loginAuth) Next(_ []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	a.step++
	switch a.step {
	case 1:
		return []byte(a.user), nil
	case 2:
		return []byte(a.pass), nil
	}
	return nil, errors.New("unexpected server challenge after AUTH LOGIN")
}

// classify turns a failed step into the notifier's error: a done ctx and
// the attempt's timeout, 4xx replies and network failures are
// retryable; 5xx replies, certificate failures and a peer that does not
// speak TLS are permanent. No error carries a credential.
func (n *Notifier) classify(ctx, actx context.Context, op, step string, err error) error {
	prefix := fmt.Sprintf("email %s: %s: %s", n.name, op, step)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The connection's deadline is actx's: it is done, or about to
		// be; wait for it, so the error says whose deadline it was.
		<-actx.Done()
	}
	if done := notify.Interrupted(ctx, prefix); done != nil {
		return done
	}
	if actx.Err() != nil {
		return notify.Retryable(fmt.Errorf("%s: timeout after %s", prefix, n.timeout), 0)
	}
	var te *textproto.Error
	if errors.As(err, &te) {
		re := &ReplyError{Command: step, Code: te.Code, Message: n.clean(te.Msg, maxReply)}
		err := fmt.Errorf("email %s: %s: %w", n.name, op, re)
		if re.Temporary() {
			return notify.Retryable(err, 0)
		}
		return err
	}
	var (
		verr *tls.CertificateVerificationError
		herr x509.HostnameError
		uerr x509.UnknownAuthorityError
		rerr tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &verr), errors.As(err, &herr), errors.As(err, &uerr):
		return fmt.Errorf("%s: the server's certificate is not trusted (set ca_file for a private CA): %s", prefix, n.clean(err.Error(), maxReply))
	case errors.As(err, &rerr):
		return fmt.Errorf("%s: the server does not speak TLS here (tls: implicit is for SMTPS, port 465; use starttls for 587)", prefix)
	}
	return notify.Retryable(fmt.Errorf("%s: %s", prefix, n.clean(err.Error(), maxReply)), 0)
}

// clean is s redacted, on one line and bounded (redacted before cutting,
// so no partial credential survives the cut).
func (n *Notifier) clean(s string, limit int) string {
	for _, sec := range n.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return clean(s, limit)
}
