package notifytest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// SMTPServer is a real SMTP server (github.com/emersion/go-smtp) on
// 127.0.0.1 for the email notifier: ESMTP with STARTTLS (or TLS from the
// first byte, Implicit) on a test certificate for 127.0.0.1 and
// localhost, AUTH PLAIN (and LOGIN) once the connection is TLS, and the
// policy of a submission server: MAIL FROM needs TLS ("530 5.7.0 Must
// issue a STARTTLS command first") and, when credentials are set, AUTH
// ("530 5.7.0 Authentication required"); wrong credentials get "535 5.7.8
// Authentication failed". It records every accepted transaction: the
// envelope and the DATA exactly as received (dot-unstuffed, CRLF kept).
//
// FailNext injects what a real server does on a bad day: a reply code at
// a given command (421, 450, 451, 452, 454, 550, 552, 554, 535, ...), a
// dropped connection, or a reply held back until the client gives up.
// Down drops every connection as soon as it is accepted.
type SMTPServer struct {
	// Username and Password are the only credentials AUTH accepts:
	// random canaries that must never appear in errors or logs.
	Username string
	Password string
	// UsernameFile and PasswordFile hold them (for the notifier's
	// username_file and password_file).
	UsernameFile string
	PasswordFile string
	// CAFile holds the server's certificate in PEM (for ca_file).
	CAFile string
	// Host is 127.0.0.1; Port is the listening port.
	Host string
	Port int

	opts    SMTPOptions
	srv     *smtp.Server
	ln      net.Listener
	closed  chan struct{}
	closeMu sync.Once

	mu         sync.Mutex
	envelopes  []SMTPEnvelope
	queue      []SMTPFailure
	down       bool
	conns      int
	auths      []SMTPAuth
	mailBefore int // MAIL FROM refused for want of TLS or AUTH
	// holds are HoldNextData's channels, one per message to hold.
	holds []chan struct{}
}

// SMTPOptions configures an SMTPServer.
type SMTPOptions struct {
	// Implicit speaks TLS from the first byte (SMTPS) instead of
	// offering STARTTLS.
	Implicit bool
	// NoTLS offers no STARTTLS (a misconfigured or stripped server).
	NoTLS bool
	// NoAuth requires no AUTH and offers none.
	NoAuth bool
	// LoginOnly offers AUTH LOGIN and not PLAIN.
	LoginOnly bool
}

// SMTPEnvelope is one accepted transaction.
type SMTPEnvelope struct {
	// From is the MAIL FROM address, To the RCPT TO addresses in order.
	From string
	To   []string
	// Data is the message as received.
	Data []byte
	// TLS and User say how the session was secured and who
	// authenticated ("" without AUTH).
	TLS  bool
	User string
}

// Message parses e.Data with net/mail.
func (e SMTPEnvelope) Message(t testing.TB) *mail.Message {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(e.Data))
	if err != nil {
		t.Fatalf("DATA is not an RFC 5322 message: %v", err)
	}
	return m
}

// SMTPAuth is one AUTH attempt: the mechanism and whether the
// credentials were accepted (never the credentials).
type SMTPAuth struct {
	Mechanism string
	OK        bool
	TLS       bool
}

// SMTP commands a failure can be injected at.
const (
	// SMTPAtConnect is the greeting: a 4xx or 5xx greeting (or Drop)
	// instead of "220", then the connection is closed.
	SMTPAtConnect = "CONNECT"
	SMTPAtEHLO    = "EHLO"
	SMTPAtAuth    = "AUTH"
	SMTPAtMail    = "MAIL"
	SMTPAtRcpt    = "RCPT"
	// SMTPAtData is the reply after the message's final dot.
	SMTPAtData = "DATA"
)

// SMTPFailure is an injected failure at one command.
type SMTPFailure struct {
	// At is the command (SMTPAt*).
	At string
	// Code, Enhanced and Message are the reply ("451", {4,3,0}, "Try
	// again later"); Code 0 with neither Drop nor Hang is a 451.
	Code     int
	Enhanced [3]int
	Message  string
	// Drop closes the connection instead of replying.
	Drop bool
	// Hang holds the reply back until the server closes (the client's
	// timeout or context must end the attempt).
	Hang bool
}

// NewSMTPServer starts a server that lives until the test ends.
func NewSMTPServer(t testing.TB, opts SMTPOptions) *SMTPServer {
	t.Helper()
	dir := t.TempDir()
	s := &SMTPServer{
		Username: Canary("smtp-user"),
		Password: Canary("smtp-pass"),
		Host:     "127.0.0.1",
		opts:     opts,
		closed:   make(chan struct{}),
	}
	s.UsernameFile = filepath.Join(dir, "smtp-username")
	s.PasswordFile = filepath.Join(dir, "smtp-password")
	s.CAFile = filepath.Join(dir, "smtp-ca.pem")
	cert, certPEM := testCertificate(t)
	for p, b := range map[string][]byte{s.UsernameFile: []byte(s.Username + "\n"), s.PasswordFile: []byte(s.Password + "\n"), s.CAFile: certPEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}

	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = "mx.test.example"
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	srv.MaxMessageBytes = 1 << 20
	srv.MaxRecipients = 50
	if !opts.NoTLS && !opts.Implicit {
		srv.TLSConfig = tlsConfig
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Port = ln.Addr().(*net.TCPAddr).Port
	s.ln = &dropListener{Listener: ln, s: s}
	if opts.Implicit {
		s.ln = tls.NewListener(s.ln, tlsConfig)
	}
	s.srv = srv
	go func() { _ = srv.Serve(s.ln) }()
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, releasing held replies.
func (s *SMTPServer) Close() {
	s.closeMu.Do(func() {
		close(s.closed)
		_ = s.srv.Close()
	})
}

// Addr is host:port.
func (s *SMTPServer) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Secrets are the credentials, which must never appear in errors or
// logs.
func (s *SMTPServer) Secrets() []string { return []string{s.Username, s.Password} }

// FailNext queues f: the next time a session reaches f.At it fails so.
func (s *SMTPServer) FailNext(f SMTPFailure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, f)
}

// Down drops every new connection until Up.
func (s *SMTPServer) Down() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = true
}

// Up ends Down.
func (s *SMTPServer) Up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
}

// HoldNextData makes the server accept the next message's DATA as usual
// (it is recorded in Envelopes, as by a server that queued it for
// delivery) and then hold its 250 reply back until the client goes away
// or the server closes, without ever sending it: a message the server
// took although the client never heard so, as when the client crashes
// or gives up after the final dot. The returned channel is closed once
// that DATA is recorded. Calls queue up, one per message; a failure
// FailNext queued at SMTPAtData comes first.
func (s *SMTPServer) HoldNextData() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.holds = append(s.holds, ch)
	return ch
}

// holdReply holds the reply to the DATA just recorded, if HoldNextData
// asked for it: it signals the hold, waits until the client closes the
// connection or the server closes, and reports whether it held.
func (s *SMTPServer) holdReply(c *smtp.Conn) bool {
	s.mu.Lock()
	if len(s.holds) == 0 {
		s.mu.Unlock()
		return false
	}
	ch := s.holds[0]
	s.holds = s.holds[1:]
	s.mu.Unlock()
	close(ch)
	gone := make(chan struct{})
	go func() {
		// The client sends nothing while it waits for the reply: a
		// read ends when it closes the connection (or the server does).
		_, _ = c.Conn().Read(make([]byte, 1))
		close(gone)
	}()
	select {
	case <-gone:
	case <-s.closed:
	}
	_ = c.Conn().Close()
	<-gone
	return true
}

// Envelopes returns every accepted transaction, in order.
func (s *SMTPServer) Envelopes() []SMTPEnvelope {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.envelopes)
}

// Auths returns every AUTH attempt, in order.
func (s *SMTPServer) Auths() []SMTPAuth {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.auths)
}

// Connections counts the connections accepted (dropped ones included).
func (s *SMTPServer) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// RefusedMail counts MAIL FROM commands refused for want of TLS or AUTH.
func (s *SMTPServer) RefusedMail() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mailBefore
}

// fail takes the queued failure for command at, if the next one is for
// it, and acts on it: nil means no failure.
func (s *SMTPServer) fail(c *smtp.Conn, at string) error {
	s.mu.Lock()
	if len(s.queue) == 0 || s.queue[0].At != at {
		s.mu.Unlock()
		return nil
	}
	f := s.queue[0]
	s.queue = s.queue[1:]
	s.mu.Unlock()
	switch {
	case f.Drop:
		_ = c.Conn().Close()
		return errors.New("connection dropped")
	case f.Hang:
		<-s.closed
		_ = c.Conn().Close()
		return errors.New("connection dropped")
	}
	code := f.Code
	if code == 0 {
		code = 451
	}
	enh := smtp.EnhancedCode(f.Enhanced)
	if f.Enhanced == [3]int{} {
		enh = smtp.EnhancedCodeNotSet
	}
	msg := f.Message
	if msg == "" {
		msg = "Injected failure"
	}
	if code == 421 {
		// 421 closes the channel (RFC 5321 3.8): the reply, then the
		// connection, as a server shutting down does.
		reply := fmt.Sprintf("421 %s\r\n", msg)
		if f.Enhanced != [3]int{} {
			reply = fmt.Sprintf("421 %d.%d.%d %s\r\n", f.Enhanced[0], f.Enhanced[1], f.Enhanced[2], msg)
		}
		_, _ = c.Conn().Write([]byte(reply))
		_ = c.Conn().Close()
		return errors.New("closing channel")
	}
	return &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}
}

// dropListener counts connections and closes them at once while Down.
type dropListener struct {
	net.Listener
	s *SMTPServer
}

func (l *dropListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.s.mu.Lock()
		l.s.conns++
		down := l.s.down
		var f *SMTPFailure
		if !down && len(l.s.queue) > 0 && l.s.queue[0].At == SMTPAtConnect {
			f = &l.s.queue[0]
			l.s.queue = l.s.queue[1:]
		}
		l.s.mu.Unlock()
		switch {
		case f != nil && !f.Drop:
			// In plain text, before any TLS: against an implicit
			// server the client sees a failed handshake instead.
			code := f.Code
			if code == 0 {
				code = 421
			}
			reply := fmt.Sprintf("%d %s\r\n", code, f.Message)
			if f.Enhanced != [3]int{} {
				reply = fmt.Sprintf("%d %d.%d.%d %s\r\n", code, f.Enhanced[0], f.Enhanced[1], f.Enhanced[2], f.Message)
			}
			_, _ = c.Write([]byte(reply))
		case !down && f == nil:
			return c, nil
		}
		_ = c.Close()
	}
}

func (s *SMTPServer) newSession(c *smtp.Conn) (smtp.Session, error) {
	if err := s.fail(c, SMTPAtEHLO); err != nil {
		return nil, err
	}
	return &smtpSession{s: s, c: c}, nil
}

// smtpSession is one SMTP session (go-smtp starts a new one after
// STARTTLS).
type smtpSession struct {
	s    *SMTPServer
	c    *smtp.Conn
	user string
	from string
	to   []string
}

var _ smtp.AuthSession = (*smtpSession)(nil)

func (x *smtpSession) tls() bool {
	_, ok := x.c.TLSConnectionState()
	return ok
}

func (x *smtpSession) AuthMechanisms() []string {
	switch {
	case x.s.opts.NoAuth:
		return nil
	case x.s.opts.LoginOnly:
		return []string{sasl.Login}
	}
	return []string{sasl.Plain, sasl.Login}
}

func (x *smtpSession) Auth(mech string) (sasl.Server, error) {
	if err := x.s.fail(x.c, SMTPAtAuth); err != nil {
		return nil, err
	}
	check := func(username, password string) error {
		ok := username == x.s.Username && password == x.s.Password
		x.s.mu.Lock()
		x.s.auths = append(x.s.auths, SMTPAuth{Mechanism: mech, OK: ok, TLS: x.tls()})
		x.s.mu.Unlock()
		if !ok {
			return smtp.ErrAuthFailed
		}
		x.user = username
		return nil
	}
	switch {
	case mech == sasl.Plain && !x.s.opts.LoginOnly && !x.s.opts.NoAuth:
		return sasl.NewPlainServer(func(identity, username, password string) error {
			if identity != "" && identity != username {
				return smtp.ErrAuthFailed
			}
			return check(username, password)
		}), nil
	case mech == sasl.Login && !x.s.opts.NoAuth:
		return &loginServer{check: check}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

func (x *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	switch {
	case !x.tls():
		x.s.mu.Lock()
		x.s.mailBefore++
		x.s.mu.Unlock()
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Must issue a STARTTLS command first"}
	case !x.s.opts.NoAuth && x.user == "":
		x.s.mu.Lock()
		x.s.mailBefore++
		x.s.mu.Unlock()
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	}
	if err := x.s.fail(x.c, SMTPAtMail); err != nil {
		return err
	}
	x.from, x.to = from, nil
	return nil
}

func (x *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if err := x.s.fail(x.c, SMTPAtRcpt); err != nil {
		return err
	}
	x.to = append(x.to, to)
	return nil
}

func (x *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := x.s.fail(x.c, SMTPAtData); err != nil {
		return err
	}
	x.s.mu.Lock()
	x.s.envelopes = append(x.s.envelopes, SMTPEnvelope{From: x.from, To: slices.Clone(x.to), Data: b, TLS: x.tls(), User: x.user})
	x.s.mu.Unlock()
	if x.s.holdReply(x.c) {
		return errors.New("connection dropped")
	}
	return nil
}

func (x *smtpSession) Reset() { x.from, x.to = "", nil }

func (x *smtpSession) Logout() error { return nil }

// loginServer is the server side of AUTH LOGIN (go-sasl has only the
// client): "Username:", then "Password:".
type loginServer struct {
	check    func(username, password string) error
	step     int
	username string
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	l.step++
	switch l.step {
	case 1:
		if response != nil {
			// An initial response is the username.
			l.username = string(response)
			l.step++
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 2:
		l.username = string(response)
		return []byte("Password:"), false, nil
	case 3:
		return nil, true, l.check(l.username, string(response))
	}
	return nil, false, sasl.ErrUnexpectedClientResponse
}

// testCertificate is a self-signed certificate for 127.0.0.1, ::1 and
// localhost, valid for a day, and its PEM.
func testCertificate(t testing.TB) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "driftwatch test SMTP server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
