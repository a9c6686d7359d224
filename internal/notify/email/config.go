package email

import (
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/email/emailcfg"
)

// TLS modes (Config.TLS).
const (
	// TLSStartTLS connects in plain text and upgrades with STARTTLS
	// before anything else is sent (submission, port 587).
	TLSStartTLS = emailcfg.TLSStartTLS
	// TLSImplicit speaks TLS from the first byte (SMTPS, port 465).
	TLSImplicit = emailcfg.TLSImplicit
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

// Config configures one email notifier: an SMTP submission server and
// the addresses a message goes from and to (emailcfg.Config: the
// notifiers[].email block, its keys and its check).
type Config = emailcfg.Config

// port is c's port, or its TLS mode's default.
func port(c Config) int {
	switch {
	case c.Port != 0:
		return c.Port
	case c.TLS == TLSImplicit:
		return DefaultImplicitPort
	}
	return DefaultStartTLSPort
}

// domainOf is the domain of an addr-spec.
func domainOf(addr string) string {
	return addr[strings.LastIndexByte(addr, '@')+1:]
}
