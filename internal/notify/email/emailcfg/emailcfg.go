// Package emailcfg is the email notifier's settings: Config, the
// notifiers[].email block config embeds (keys and all), its one Check,
// which config runs at load and email.New through Validate, and Address,
// the one parse of a from or to address. It imports only notifycfg (a
// leaf), so config may import it.
package emailcfg

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strings"
	"time"
	"unicode"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
)

// TLS modes (Config.TLS).
const (
	// TLSStartTLS connects in plain text and upgrades with STARTTLS
	// before anything else is sent (submission, port 587).
	TLSStartTLS = "starttls"
	// TLSImplicit speaks TLS from the first byte (SMTPS, port 465).
	TLSImplicit = "implicit"
)

// MaxPrefix bounds SubjectPrefix, so the subject stays one short line.
const MaxPrefix = 40

// Config is the settings block of a notifier of type email: an SMTP
// submission server and the addresses incidents go from and to, one
// thread per incident.
type Config struct {
	// Name is the notifier's name (notifiers[].name; set by the builder).
	Name string `yaml:"-"`
	// Host is the SMTP server's host name, which its certificate must
	// name.
	Host string `yaml:"host"`
	// Port is the server's port (default: 587 for starttls, 465 for
	// implicit).
	Port int `yaml:"port"`
	// From is the sender: "addr@example.com" or "Name
	// <addr@example.com>": the header From, the envelope's MAIL FROM and
	// the domain of every Message-ID.
	From string `yaml:"from"`
	// To are the recipients, each an address as in From.
	To []string `yaml:"to"`
	// UsernameFile and PasswordFile hold the AUTH credentials (both or
	// neither; neither: the server must not require AUTH). Neither value
	// ever appears in errors or logs.
	UsernameFile string `yaml:"username_file"`
	PasswordFile string `yaml:"password_file"`
	// TLS is starttls (default: STARTTLS required before anything is
	// sent) or implicit (TLS from the first byte, SMTPS). There is no
	// plain-text mode.
	TLS string `yaml:"tls"`
	// SubjectPrefix starts every subject (default "[driftwatch]").
	SubjectPrefix string `yaml:"subject_prefix"`
	// CAFile adds PEM certificates to the system's roots for verifying
	// the server (notifiers[].ca_file; set by the builder).
	CAFile string `yaml:"-"`
	// Timeout bounds one delivery: connect, TLS, AUTH, the whole
	// transaction (notifiers[].timeout; 0: the notifier's default).
	Timeout time.Duration `yaml:"-"`
}

// Check implements notifycfg.Block.
func (c *Config) Check(v notifycfg.Check) {
	switch {
	case strings.TrimSpace(c.Host) == "":
		v.Add("host", "required")
	case net.ParseIP(c.Host) == nil && strings.IndexFunc(c.Host, notHostRune) >= 0:
		v.Add("host", "%q: want a host name or IP address, without scheme or port (set port)", c.Host)
	}
	if c.Port < 0 || c.Port > 65535 {
		v.Add("port", "%d: want 1 to 65535", c.Port)
	}
	if _, err := Address(c.From); err != nil {
		v.Add("from", "%v", err)
	}
	if len(c.To) == 0 {
		v.Add("to", "at least one recipient is required")
	}
	seen := map[string]bool{}
	for i, to := range c.To {
		sub := fmt.Sprintf("to[%d]", i)
		a, err := Address(to)
		if err != nil {
			v.Add(sub, "%v", err)
			continue
		}
		k := strings.ToLower(a.Address)
		if seen[k] {
			v.Add(sub, "%q is listed twice", to)
		}
		seen[k] = true
	}
	switch {
	case c.UsernameFile == "" && c.PasswordFile == "":
	case c.UsernameFile == "":
		// Reported at the key that is set, whose line the error names.
		v.Add("password_file", "set username_file too (both for AUTH, or neither)")
	case c.PasswordFile == "":
		v.Add("username_file", "set password_file too (both for AUTH, or neither)")
	default:
		c.UsernameFile = v.File("username_file", c.UsernameFile)
		c.PasswordFile = v.File("password_file", c.PasswordFile)
	}
	switch c.TLS {
	case "", TLSStartTLS, TLSImplicit:
	default:
		v.Add("tls", "unknown mode %q (use starttls or implicit; there is no plain-text mode)", c.TLS)
	}
	if len(c.SubjectPrefix) > MaxPrefix || strings.IndexFunc(c.SubjectPrefix, unicode.IsControl) >= 0 {
		v.Add("subject_prefix", "want one line of at most 40 characters")
	}
}

// SecretFiles implements notifycfg.Block.
func (c *Config) SecretFiles() []string { return []string{c.UsernameFile, c.PasswordFile} }

// Validate checks c as email.New takes it, without touching the file
// system or the network.
func (c Config) Validate() error { return notifycfg.Validate(c.Name, c.Timeout, c.Check) }

// Address parses a from or to address: an ASCII addr-spec with a domain
// (7-bit envelopes, no SMTPUTF8), with an optional display name (which
// may be UTF-8), on one line.
func Address(s string) (*mail.Address, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("required")
	}
	if strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("an address must be on one line")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return nil, fmt.Errorf("%q: not an email address (want addr@example.com or Name <addr@example.com>)", s)
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at <= 0 || at == len(a.Address)-1 {
		return nil, fmt.Errorf("%q: the address needs a domain", s)
	}
	if strings.IndexFunc(a.Address, func(r rune) bool { return r > unicode.MaxASCII }) >= 0 {
		return nil, fmt.Errorf("%q: the address must be ASCII (the display name may not be)", s)
	}
	return a, nil
}

func notHostRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
		return false
	}
	return true
}

// For is c as the notifier sp takes it: with sp's name, timeout and CA
// file.
func (c Config) For(sp notifycfg.Spec) Config {
	c.Name, c.Timeout, c.CAFile = sp.Name, sp.Timeout, sp.CAFile
	return c
}
