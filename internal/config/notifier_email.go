package config

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strings"
	"unicode"
)

// The email notifier's TLS modes (its package's TLSStartTLS and
// TLSImplicit; config imports leaf packages only).
const (
	emailStartTLS = "starttls"
	emailImplicit = "implicit"
)

// EmailConfig is the settings block of a notifier of type email: an SMTP
// submission server and the addresses incidents go from and to, one
// thread per incident. The notifier's ca_file adds roots for the
// server's certificate; its timeout bounds one delivery.
type EmailConfig struct {
	// Host is the SMTP server's host name, which its certificate must
	// name.
	Host string `yaml:"host"`
	// Port is the server's port (default: 587 for starttls, 465 for
	// implicit).
	Port int `yaml:"port"`
	// From is the sender: "addr@example.com" or "Name
	// <addr@example.com>"; its domain is every Message-ID's.
	From string `yaml:"from"`
	// To are the recipients, each an address as in From.
	To []string `yaml:"to"`
	// UsernameFile and PasswordFile hold the AUTH credentials (both or
	// neither; neither: the server must not require AUTH).
	UsernameFile string `yaml:"username_file"`
	PasswordFile string `yaml:"password_file"`
	// TLS is starttls (default: STARTTLS required before anything is
	// sent) or implicit (TLS from the first byte, SMTPS). There is no
	// plain-text mode.
	TLS string `yaml:"tls"`
	// SubjectPrefix starts every subject (default "[driftwatch]").
	SubjectPrefix string `yaml:"subject_prefix"`
}

func (c *EmailConfig) validate(v blockCheck) {
	switch {
	case strings.TrimSpace(c.Host) == "":
		v.add("host", "required")
	case net.ParseIP(c.Host) == nil && strings.IndexFunc(c.Host, notHostRune) >= 0:
		v.add("host", "%q: want a host name or IP address, without scheme or port (set port)", c.Host)
	}
	if c.Port < 0 || c.Port > 65535 {
		v.add("port", "%d: want 1 to 65535", c.Port)
	}
	if _, err := emailAddress(c.From); err != nil {
		v.add("from", "%v", err)
	}
	if len(c.To) == 0 {
		v.add("to", "at least one recipient is required")
	}
	seen := map[string]bool{}
	for i, to := range c.To {
		sub := fmt.Sprintf("to[%d]", i)
		a, err := emailAddress(to)
		if err != nil {
			v.add(sub, "%v", err)
			continue
		}
		k := strings.ToLower(a.Address)
		if seen[k] {
			v.add(sub, "%q is listed twice", to)
		}
		seen[k] = true
	}
	switch {
	case c.UsernameFile == "" && c.PasswordFile == "":
	case c.UsernameFile == "":
		// Reported at the key that is set, whose line the error names.
		v.add("password_file", "set username_file too (both for AUTH, or neither)")
	case c.PasswordFile == "":
		v.add("username_file", "set password_file too (both for AUTH, or neither)")
	default:
		c.UsernameFile = v.file("username_file", c.UsernameFile)
		c.PasswordFile = v.file("password_file", c.PasswordFile)
	}
	switch c.TLS {
	case "", emailStartTLS, emailImplicit:
	default:
		v.add("tls", "unknown mode %q (use starttls or implicit; there is no plain-text mode)", c.TLS)
	}
	if len(c.SubjectPrefix) > 40 || strings.IndexFunc(c.SubjectPrefix, unicode.IsControl) >= 0 {
		v.add("subject_prefix", "want one line of at most 40 characters")
	}
}

func (c *EmailConfig) secretFiles() []string { return []string{c.UsernameFile, c.PasswordFile} }

// emailAddress parses an address as the email notifier does
// (email.CheckAddress): an ASCII addr-spec with a domain, an optional
// display name, one line.
func emailAddress(s string) (*mail.Address, error) {
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
