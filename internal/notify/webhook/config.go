package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// DefaultTimeout bounds one delivery attempt when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures one webhook notifier.
type Config struct {
	// Name is the instance name used in routes, logs and the outbox.
	Name string `yaml:"name"`
	// URLFile holds the endpoint URL (it may embed a token, so it is a
	// secret and never logged).
	URLFile string `yaml:"url_file"`
	// SecretFile holds the HMAC-SHA256 signing key (at least 16 bytes).
	SecretFile string `yaml:"secret_file"`
	// Headers are added to every request. Their values are treated as
	// secrets. They cannot replace Content-Type or the X-Driftwatch-*
	// headers.
	Headers map[string]string `yaml:"headers,omitempty"`
	// Timeout bounds one attempt (0: DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// reservedHeaders are set by the notifier or by net/http.
var reservedHeaders = []string{"Content-Type", "Content-Length", "Host", "Transfer-Encoding", "Connection"}

// Validate checks cfg without touching the file system.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if strings.TrimSpace(c.URLFile) == "" {
		errs = append(errs, errors.New("url_file is required"))
	}
	if strings.TrimSpace(c.SecretFile) == "" {
		errs = append(errs, errors.New("secret_file is required"))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must not be negative", c.Timeout))
	}
	for _, k := range sortedKeys(c.Headers) {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case !validHeaderName(k):
			errs = append(errs, fmt.Errorf("headers: %q is not a valid header name", k))
		case slices.Contains(reservedHeaders, ck) || strings.HasPrefix(ck, "X-Driftwatch-"):
			errs = append(errs, fmt.Errorf("headers: %q is set by driftwatch", k))
		}
		// The value is a secret: say what is wrong, not what it is.
		if strings.ContainsAny(c.Headers[k], "\r\n\x00") {
			errs = append(errs, fmt.Errorf("headers: the value of %q contains a line break or NUL", k))
		}
	}
	return errors.Join(errs...)
}

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

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

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
