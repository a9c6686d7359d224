// Package webhookcfg is the webhook notifier's settings: Config, the
// notifiers[].webhook block config embeds (keys and all), and its one
// Check, which config runs at load and webhook.New through Validate. It
// imports only notifycfg (a leaf), so config may import it.
package webhookcfg

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
)

// Config is the settings block of a notifier of type webhook: a generic
// signed JSON webhook.
type Config struct {
	// Name is the notifier's name (notifiers[].name; set by the builder).
	Name string `yaml:"-"`
	// URLFile holds the endpoint URL (it may embed a token, so it is a
	// secret and never logged).
	URLFile string `yaml:"url_file"`
	// SecretFile holds the HMAC-SHA256 signing key (at least 16 bytes).
	SecretFile string `yaml:"secret_file"`
	// Headers are added to every request. Their values are treated as
	// secrets. They cannot replace Content-Type or the X-Driftwatch-*
	// headers.
	Headers map[string]string `yaml:"headers"`
	// Timeout bounds one attempt (notifiers[].timeout; 0: the notifier's
	// default).
	Timeout time.Duration `yaml:"-"`
}

// reservedHeaders are set by the notifier or by net/http.
var reservedHeaders = []string{"Content-Type", "Content-Length", "Host", "Transfer-Encoding", "Connection"}

// Check implements notifycfg.Block.
func (c *Config) Check(v notifycfg.Check) {
	c.URLFile = v.File("url_file", c.URLFile)
	c.SecretFile = v.File("secret_file", c.SecretFile)
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case !validHeaderName(k):
			v.Add("headers", "%q is not a valid header name", k)
		case slices.Contains(reservedHeaders, ck) || strings.HasPrefix(ck, "X-Driftwatch-"):
			v.Add("headers", "%q is set by driftwatch", k)
		}
		// The value is a secret: say what is wrong, not what it is.
		if strings.ContainsAny(c.Headers[k], "\r\n\x00") {
			v.Add("headers", "the value of %q contains a line break or NUL", k)
		}
	}
}

// SecretFiles implements notifycfg.Block.
func (c *Config) SecretFiles() []string { return []string{c.URLFile, c.SecretFile} }

// Validate checks c as webhook.New takes it, without touching the file
// system.
func (c Config) Validate() error { return notifycfg.Validate(c.Name, c.Timeout, c.Check) }

// validHeaderName reports whether k is an RFC 9110 token.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// For is c as the notifier sp takes it: with sp's name and timeout.
func (c Config) For(sp notifycfg.Spec) Config {
	c.Name, c.Timeout = sp.Name, sp.Timeout
	return c
}
