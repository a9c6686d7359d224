// Package notifycfg is what every notifier's settings package
// (internal/notify/<vendor>/<vendor>cfg) shares: Block, the settings of
// one notifier type; Check, through which a block reports its mistakes;
// the URL rules several vendors apply and Each (a list's items at
// key[i]); and Spec, one configured notifier
// as notifiers.Build takes it. config runs a block's Check at load (each
// mistake at its key's file and line), a notifier's New runs the same
// Check through Validate: one declaration and one check per key.
//
// It is a leaf: it imports no other internal package, so config may
// import it and the settings packages that import it.
package notifycfg

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Block is a notifier type's settings block (notifiers[].<type>).
type Block interface {
	// Check reports the block's mistakes through v and makes its file
	// paths what v.File returns (config: absolute).
	Check(v Check)
	// SecretFiles are the block's files holding secrets.
	SecretFiles() []string
}

// Spec is one configured notifier: its name, its type's settings block
// (a pointer to a <vendor>cfg.Config), its timeout and the CA file its
// TLS connections trust besides the system's roots.
type Spec struct {
	Name     string
	Settings Block
	Timeout  time.Duration
	CAFile   string
}

// Check is what a Block reports through; keys are relative to the block
// ("token_file", "labels[2]").
type Check struct {
	// File checks a required file path and returns it as the block
	// keeps it (config: resolved against the config's directory, and it
	// must exist).
	File func(key, path string) string
	// Add reports a mistake at key.
	Add func(key, format string, args ...any)
}

// URL checks an optional http(s) URL without credentials in it and
// returns it parsed (nil: empty or reported).
func (v Check) URL(key, raw string) *url.URL {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.Add(key, "not an http(s) URL")
		return nil
	}
	if u.User != nil {
		v.Add(key, "credentials in the URL are not allowed")
	}
	return u
}

// Each checks every item of the list at key: check says what is wrong
// with it ("" for nothing), knowing whether an earlier item was the
// same; the mistake is reported at key[i].
func (v Check) Each(key string, items []string, check func(item string, dup bool) string) {
	seen := map[string]bool{}
	for i, item := range items {
		if msg := check(item, seen[item]); msg != "" {
			v.Add(fmt.Sprintf("%s[%d]", key, i), "%s", msg)
		}
		seen[item] = true
	}
}

// SecureURL is URL for an endpoint a credential travels to (what says
// how): https, or http to a loopback address only.
func (v Check) SecureURL(key, raw, what string) *url.URL {
	u := v.URL(key, raw)
	if u != nil && u.Scheme == "http" && !Loopback(u.Hostname()) {
		v.Add(key, "must be https: the %s (http only to a loopback address)", what)
	}
	return u
}

// Loopback reports whether host is localhost or a loopback address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Validate checks a notifier's settings as its New takes them: name
// required, the block's Check (a file key only required, the file not
// read), timeout not negative. Each error reads "key: message".
func Validate(name string, timeout time.Duration, check func(Check)) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if strings.TrimSpace(name) == "" {
		add("name", "required")
	}
	check(Check{
		File: func(key, path string) string {
			if strings.TrimSpace(path) == "" {
				add(key, "required")
			}
			return path
		},
		Add: add,
	})
	if timeout < 0 {
		add("timeout", "%s: must not be negative", timeout)
	}
	return errors.Join(errs...)
}
