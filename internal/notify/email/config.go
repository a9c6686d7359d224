package email

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strings"
	"time"
	"unicode"
)

// TLS modes (Config.TLS).
const (
	// TLSStartTLS connects in plain text and upgrades with STARTTLS
	// before anything else is sent (submission, port 587).
	TLSStartTLS = "starttls"
	// TLSImplicit speaks TLS from the first byte (SMTPS, port 465).
	TLSImplicit = "implicit"
)

// Default ports per TLS mode when Config.Port is zero.
const (
	DefaultStartTLSPort = 587
	DefaultImplicitPort = 465
)

// DefaultSubjectPrefix starts every subject when Config.SubjectPrefix is
// empty.
const DefaultSubjectPrefix = "[driftwatch]"

// DefaultTimeout bounds one delivery (connect, TLS, AUTH, the whole
// transaction) when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// maxPrefix bounds SubjectPrefix, so the subject stays one short line.
const maxPrefix = 40

// Config configures one email notifier: an SMTP submission server and
// the addresses a message goes from and to.
type Config struct {
	// Name is the instance name used in routes, logs and the outbox.
	Name string `yaml:"name"`
	// Host is the SMTP server's host name (also the name its certificate
	// must carry).
	Host string `yaml:"host"`
	// Port is the server's port (0: 587 for starttls, 465 for implicit).
	Port int `yaml:"port,omitempty"`
	// From is the sender, "addr@example.com" or "Name <addr@example.com>":
	// the header From, the envelope's MAIL FROM and the domain of every
	// Message-ID.
	From string `yaml:"from"`
	// To are the recipients (one or more), each an address as in From.
	To []string `yaml:"to"`
	// UsernameFile and PasswordFile hold the AUTH credentials (both or
	// neither; neither: no AUTH). Neither value ever appears in errors or
	// logs.
	UsernameFile string `yaml:"username_file,omitempty"`
	PasswordFile string `yaml:"password_file,omitempty"`
	// TLS is starttls (default) or implicit. There is no plain-text
	// mode: nothing, credentials least of all, is sent without TLS.
	TLS string `yaml:"tls,omitempty"`
	// SubjectPrefix starts every subject (empty: DefaultSubjectPrefix).
	SubjectPrefix string `yaml:"subject_prefix,omitempty"`
	// CAFile adds PEM certificates to the system's roots for verifying
	// the server (a private CA).
	CAFile string `yaml:"ca_file,omitempty"`
	// Timeout bounds one delivery (0: DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// Validate checks cfg without touching the file system or the network.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, errors.New("name is required"))
	}
	switch {
	case strings.TrimSpace(c.Host) == "":
		errs = append(errs, errors.New("host is required"))
	case net.ParseIP(c.Host) == nil && strings.IndexFunc(c.Host, notHostRune) >= 0:
		errs = append(errs, fmt.Errorf("host %q: want a host name or IP address, without port or scheme", c.Host))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d: want 1 to 65535", c.Port))
	}
	if _, err := parseAddress("from", c.From); err != nil {
		errs = append(errs, err)
	}
	if len(c.To) == 0 {
		errs = append(errs, errors.New("to: at least one recipient is required"))
	}
	seen := map[string]bool{}
	for i, to := range c.To {
		a, err := parseAddress(fmt.Sprintf("to[%d]", i), to)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if k := strings.ToLower(a.Address); seen[k] {
			errs = append(errs, fmt.Errorf("to[%d]: %s is listed twice", i, a.Address))
		} else {
			seen[k] = true
		}
	}
	if (c.UsernameFile == "") != (c.PasswordFile == "") {
		errs = append(errs, errors.New("username_file and password_file: set both (AUTH) or neither"))
	}
	switch c.TLS {
	case "", TLSStartTLS, TLSImplicit:
	default:
		errs = append(errs, fmt.Errorf("tls: unknown mode %q (use starttls or implicit)", c.TLS))
	}
	if len(c.SubjectPrefix) > maxPrefix || strings.IndexFunc(c.SubjectPrefix, unicode.IsControl) >= 0 {
		errs = append(errs, fmt.Errorf("subject_prefix: want one line of at most %d characters", maxPrefix))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must not be negative", c.Timeout))
	}
	return errors.Join(errs...)
}

func (c Config) port() int {
	switch {
	case c.Port != 0:
		return c.Port
	case c.TLS == TLSImplicit:
		return DefaultImplicitPort
	}
	return DefaultStartTLSPort
}

func (c Config) tlsMode() string {
	if c.TLS == "" {
		return TLSStartTLS
	}
	return c.TLS
}

func (c Config) subjectPrefix() string {
	if c.SubjectPrefix == "" {
		return DefaultSubjectPrefix
	}
	return c.SubjectPrefix
}

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// parseAddress parses one address (CheckAddress); errors start with key.
func parseAddress(key, s string) (*mail.Address, error) {
	a, err := address(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return a, nil
}

// CheckAddress reports why s cannot be a from or to address: it must be
// an ASCII addr-spec with a domain (7-bit envelopes, no SMTPUTF8), with
// an optional display name (which may be UTF-8), on one line.
func CheckAddress(s string) error {
	_, err := address(s)
	return err
}

func address(s string) (*mail.Address, error) {
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
	for _, r := range a.Address {
		if r > unicode.MaxASCII {
			return nil, fmt.Errorf("%q: the address must be ASCII (the display name may not be)", s)
		}
	}
	return a, nil
}

// domainOf is the domain of an addr-spec.
func domainOf(addr string) string {
	return addr[strings.LastIndexByte(addr, '@')+1:]
}

func notHostRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
		return false
	}
	return true
}
