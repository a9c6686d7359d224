package notifytest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"net/textproto"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// smtpConv is a raw SMTP conversation with the server, to assert its
// exact replies.
type smtpConv struct {
	t    *testing.T
	raw  net.Conn
	text *textproto.Conn
}

func dialSMTP(t *testing.T, s *SMTPServer, implicit bool) *smtpConv {
	t.Helper()
	raw, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })
	require.NoError(t, raw.SetDeadline(time.Now().Add(10*time.Second)))
	c := &smtpConv{t: t, raw: raw}
	if implicit {
		c.upgrade(s)
	} else {
		c.text = textproto.NewConn(raw)
	}
	return c
}

func (c *smtpConv) upgrade(s *SMTPServer) {
	pem, err := os.ReadFile(s.CAFile)
	require.NoError(c.t, err)
	pool := x509.NewCertPool()
	require.True(c.t, pool.AppendCertsFromPEM(pem))
	tc := tls.Client(c.raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	require.NoError(c.t, tc.Handshake())
	c.text = textproto.NewConn(tc)
}

// reply reads one reply: its code and its text (lines joined by "\n").
func (c *smtpConv) reply() (int, string) {
	c.t.Helper()
	code, msg, err := c.text.ReadResponse(0)
	if err != nil {
		var te *textproto.Error
		require.ErrorAs(c.t, err, &te)
		return te.Code, te.Msg
	}
	return code, msg
}

func (c *smtpConv) cmd(format string, args ...any) (int, string) {
	c.t.Helper()
	require.NoError(c.t, c.text.PrintfLine(format, args...))
	return c.reply()
}

func (c *smtpConv) expect(code int, msg string, format string, args ...any) {
	c.t.Helper()
	gotCode, gotMsg := c.cmd(format, args...)
	require.Equal(c.t, code, gotCode, "%s: %s", format, gotMsg)
	if msg != "" {
		require.Equal(c.t, msg, gotMsg, format)
	}
}

func plainResponse(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pass))
}

// The server behaves as a submission server: STARTTLS before anything,
// AUTH only inside TLS, MAIL FROM only after both; it records the
// envelope and DATA exactly (dot-unstuffed, CRLF kept).
func TestSMTPServerProtocol(t *testing.T) {
	s := NewSMTPServer(t, SMTPOptions{})
	c := dialSMTP(t, s, false)
	code, greeting := c.reply()
	require.Equal(t, 220, code)
	require.Equal(t, "mx.test.example ESMTP Service Ready", greeting)

	_, ehlo := c.cmd("EHLO client.example")
	require.Contains(t, strings.Split(ehlo, "\n"), "STARTTLS")
	require.NotContains(t, ehlo, "AUTH", "no AUTH offered in plain text")
	c.expect(530, "5.7.0 Must issue a STARTTLS command first", "MAIL FROM:<dw@example.com>")
	c.expect(220, "", "STARTTLS")
	c.upgrade(s)

	_, ehlo = c.cmd("EHLO client.example")
	lines := strings.Split(ehlo, "\n")
	require.Contains(t, lines, "AUTH PLAIN LOGIN")
	require.NotContains(t, lines, "STARTTLS")
	c.expect(530, "5.7.0 Authentication required", "MAIL FROM:<dw@example.com>")
	c.expect(535, "5.7.8 Authentication failed", "AUTH PLAIN %s", plainResponse(s.Username, "wrong"))
	c.expect(235, "", "AUTH PLAIN %s", plainResponse(s.Username, s.Password))
	c.expect(250, "", "MAIL FROM:<dw@example.com>")
	c.expect(250, "", "RCPT TO:<a@example.com>")
	c.expect(250, "", "RCPT TO:<b@example.com>")
	c.expect(354, "", "DATA")
	data := "Subject: x\r\n\r\n..dot-stuffed\r\nlast line\r\n"
	_, err := c.text.W.WriteString(data + ".\r\n")
	require.NoError(t, err)
	require.NoError(t, c.text.W.Flush())
	code, _ = c.reply()
	require.Equal(t, 250, code)
	c.expect(221, "", "QUIT")

	envs := s.Envelopes()
	require.Len(t, envs, 1)
	require.Equal(t, SMTPEnvelope{From: "dw@example.com", To: []string{"a@example.com", "b@example.com"},
		Data: []byte("Subject: x\r\n\r\n.dot-stuffed\r\nlast line\r\n"), TLS: true, User: s.Username}, envs[0])
	require.Equal(t, "x", envs[0].Message(t).Header.Get("Subject"))
	require.Equal(t, []SMTPAuth{{Mechanism: "PLAIN", TLS: true}, {Mechanism: "PLAIN", OK: true, TLS: true}}, s.Auths())
	require.Equal(t, 2, s.RefusedMail())
}

// Injected failures apply once each, at their command, in order.
func TestSMTPServerFailures(t *testing.T) {
	s := NewSMTPServer(t, SMTPOptions{NoAuth: true})
	s.FailNext(SMTPFailure{At: SMTPAtConnect, Code: 421, Enhanced: [3]int{4, 7, 0}, Message: "Too busy"})
	c := dialSMTP(t, s, false)
	code, msg := c.reply()
	require.Equal(t, 421, code)
	require.Equal(t, "4.7.0 Too busy", msg)

	s.FailNext(SMTPFailure{At: SMTPAtMail, Code: 451, Enhanced: [3]int{4, 3, 0}, Message: "Try again later"})
	s.FailNext(SMTPFailure{At: SMTPAtRcpt, Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "No such user"})
	s.FailNext(SMTPFailure{At: SMTPAtData, Code: 554, Message: "Rejected"})
	c = dialSMTP(t, s, false)
	c.reply()
	c.cmd("EHLO client.example")
	c.expect(220, "", "STARTTLS")
	c.upgrade(s)
	c.cmd("EHLO client.example")
	c.expect(451, "4.3.0 Try again later", "MAIL FROM:<dw@example.com>")
	c.expect(250, "", "MAIL FROM:<dw@example.com>")
	c.expect(550, "5.1.1 No such user", "RCPT TO:<a@example.com>")
	c.expect(250, "", "RCPT TO:<b@example.com>")
	c.expect(354, "", "DATA")
	_, err := c.text.W.WriteString("Subject: x\r\n\r\nbody\r\n.\r\n")
	require.NoError(t, err)
	require.NoError(t, c.text.W.Flush())
	code, msg = c.reply()
	require.Equal(t, 554, code)
	require.Equal(t, "5.0.0 Rejected", msg)
	require.Empty(t, s.Envelopes(), "a refused DATA is not recorded")

	s.FailNext(SMTPFailure{At: SMTPAtMail, Drop: true})
	c.expect(250, "", "RSET")
	require.NoError(t, c.text.PrintfLine("MAIL FROM:<dw@example.com>"))
	_, _, err = c.text.ReadResponse(0)
	require.Error(t, err, "the connection is dropped without a reply")

	s.Down()
	c = dialSMTP(t, s, false)
	_, err = c.text.ReadLine()
	require.Error(t, err, "down: no greeting")
	s.Up()
	c = dialSMTP(t, s, false)
	code, _ = c.reply()
	require.Equal(t, 220, code)
	require.Equal(t, 4, s.Connections())
}

// Implicit TLS: TLS from the first byte, then AUTH is offered at once;
// LoginOnly offers LOGIN, which takes the username and the password.
func TestSMTPServerImplicitLogin(t *testing.T) {
	s := NewSMTPServer(t, SMTPOptions{Implicit: true, LoginOnly: true})
	c := dialSMTP(t, s, true)
	code, _ := c.reply()
	require.Equal(t, 220, code)
	_, ehlo := c.cmd("EHLO client.example")
	require.Contains(t, strings.Split(ehlo, "\n"), "AUTH LOGIN")
	c.expect(504, "", "AUTH PLAIN %s", plainResponse(s.Username, s.Password))
	b64 := base64.StdEncoding.EncodeToString
	c.expect(334, b64([]byte("Username:")), "AUTH LOGIN")
	c.expect(334, b64([]byte("Password:")), "%s", b64([]byte(s.Username)))
	c.expect(235, "", "%s", b64([]byte(s.Password)))
	require.Equal(t, []SMTPAuth{{Mechanism: "LOGIN", OK: true, TLS: true}}, s.Auths())
}

// NoTLS: no STARTTLS offered, and MAIL FROM is still refused in plain
// text.
func TestSMTPServerNoTLS(t *testing.T) {
	s := NewSMTPServer(t, SMTPOptions{NoTLS: true})
	c := dialSMTP(t, s, false)
	c.reply()
	_, ehlo := c.cmd("EHLO client.example")
	require.NotContains(t, ehlo, "STARTTLS")
	c.expect(502, "", "STARTTLS")
	c.expect(530, "", "MAIL FROM:<dw@example.com>")
}

// HoldNextData: the message is recorded, its 250 never comes, and the
// next message is answered as usual.
func TestSMTPServerHoldNextData(t *testing.T) {
	s := NewSMTPServer(t, SMTPOptions{})
	held := s.HoldNextData()
	send := func(c *smtpConv) {
		t.Helper()
		code, _ := c.reply()
		require.Equal(t, 220, code)
		c.cmd("EHLO client.example")
		c.expect(220, "", "STARTTLS")
		c.upgrade(s)
		c.cmd("EHLO client.example")
		c.expect(235, "", "AUTH PLAIN %s", plainResponse(s.Username, s.Password))
		c.expect(250, "", "MAIL FROM:<dw@example.com>")
		c.expect(250, "", "RCPT TO:<a@example.com>")
		c.expect(354, "", "DATA")
		_, err := c.text.W.WriteString("Subject: x\r\n\r\nbody\r\n.\r\n")
		require.NoError(t, err)
		require.NoError(t, c.text.W.Flush())
	}
	first := dialSMTP(t, s, false)
	send(first)
	<-held
	require.Len(t, s.Envelopes(), 1, "the held message is recorded")
	require.NoError(t, first.raw.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, _, err := first.text.ReadResponse(250)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "no reply while held")
	require.True(t, ne.Timeout())
	require.NoError(t, first.raw.Close())

	second := dialSMTP(t, s, false)
	send(second)
	code, _ := second.reply()
	require.Equal(t, 250, code, "the next message is answered")
	require.Len(t, s.Envelopes(), 2)
}
