package github

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultTimeout bounds one HTTP request when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DefaultLabels are the labels every issue gets when Config.Labels is nil,
// besides its class label (ClassLabel).
func DefaultLabels() []string { return []string{"driftwatch"} }

// maxLabel is GitHub's limit on a label's name, in characters.
const maxLabel = 50

// repoPart is what GitHub allows in an owner or repository name.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,99})$`)

// Config configures one GitHub notifier: a repository whose issues
// mirror driftwatch's incidents.
type Config struct {
	// Name is the instance name used in routes, logs and the outbox.
	Name string `yaml:"name"`
	// TokenFile holds the token (a fine-grained personal access token or
	// a GitHub App installation token with Issues read and write on the
	// repository). It never appears in errors or logs.
	TokenFile string `yaml:"token_file"`
	// Repository is "owner/name".
	Repository string `yaml:"repository"`
	// APIURL is GitHub Enterprise Server's API, https://HOST/api/v3/
	// (empty: github.com; "api/v3/" is appended to a URL without it unless
	// its host starts with "api."). https, or http to a loopback address
	// only.
	APIURL string `yaml:"api_url,omitempty"`
	// Labels every issue gets besides its class label (nil:
	// DefaultLabels; empty: the class label only).
	Labels []string `yaml:"labels,omitempty"`
	// Timeout bounds one HTTP request (0: DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// Validate checks cfg without touching the file system.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if strings.TrimSpace(c.TokenFile) == "" {
		errs = append(errs, errors.New("token_file is required"))
	}
	if _, _, err := ParseRepository(c.Repository); err != nil {
		errs = append(errs, err)
	}
	if c.APIURL != "" {
		if _, err := apiURL(c.APIURL); err != nil {
			errs = append(errs, err)
		}
	}
	for i, l := range c.Labels {
		if err := CheckLabel(l); err != nil {
			errs = append(errs, fmt.Errorf("labels[%d]: %w", i, err))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must not be negative", c.Timeout))
	}
	return errors.Join(errs...)
}

// ParseRepository splits "owner/name".
func ParseRepository(s string) (owner, repo string, err error) {
	o, r, ok := strings.Cut(s, "/")
	if s == "" {
		return "", "", errors.New("repository is required (owner/name)")
	}
	if !ok || !repoPart.MatchString(o) || !repoPart.MatchString(r) || strings.HasSuffix(r, ".git") {
		return "", "", fmt.Errorf("repository %q: want owner/name, e.g. acme/infrastructure", s)
	}
	return o, r, nil
}

// CheckLabel checks a label name: 1 to 50 characters, no comma (the
// issue list's labels filter separates names with commas) and no line
// break.
func CheckLabel(l string) error {
	switch {
	case strings.TrimSpace(l) == "":
		return errors.New("empty label")
	case utf8.RuneCountInString(l) > maxLabel:
		return fmt.Errorf("label %q: longer than %d characters", l, maxLabel)
	case strings.ContainsAny(l, ",\r\n"):
		return fmt.Errorf("label %q: no commas or line breaks", l)
	}
	return nil
}

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// labels is the configured labels (DefaultLabels if nil), trimmed and
// without duplicates.
func (c Config) labels() []string {
	ls := c.Labels
	if ls == nil {
		ls = DefaultLabels()
	}
	out := []string{}
	seen := map[string]bool{}
	for _, l := range ls {
		l = strings.TrimSpace(l)
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// apiURL checks an Enterprise Server API URL and returns it with a
// trailing slash: https (or http to a loopback address: the token travels
// in a header), no credentials, query or fragment.
func apiURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		// url.Parse quotes the URL: say what is wrong without it.
		return "", errors.New("api_url: not a URL; want https://HOST/api/v3/")
	}
	switch {
	case u.User != nil:
		return "", errors.New("api_url: credentials in the URL are not allowed")
	case u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "", fmt.Errorf("api_url %q: want https://HOST/api/v3/", s)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return "", fmt.Errorf("api_url %q: scheme must be https (the token travels in a header); plain http is allowed to loopback addresses only", s)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("api_url %q: only scheme, host, port and path are allowed", s)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawPath = ""
	return u.String(), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
