package gitlab

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// DefaultURL is the GitLab instance when Config.APIURL is empty.
const DefaultURL = "https://gitlab.com"

// DefaultTimeout bounds one HTTP request when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DefaultLabels are the labels of every issue when Config.Labels is nil.
func DefaultLabels() []string { return []string{"driftwatch"} }

// ClassLabel is the label every issue of class c carries, whatever
// Config.Labels says: "driftwatch::drift", "driftwatch::forbidden" or
// "driftwatch::errored" (a scoped label: one class per issue). The
// notifier finds its issues again by it.
func ClassLabel(c notify.Class) string { return "driftwatch::" + string(c) }

// maxLabel is GitLab's limit on a label's title.
const maxLabel = 255

// Config configures one GitLab notifier: a rolling issue per incident key
// in one project.
type Config struct {
	// Name is the instance name used in routes, logs and the outbox.
	Name string `yaml:"name"`
	// TokenFile holds the access token (a project access token with the
	// api scope and at least the Reporter role), sent as the PRIVATE-TOKEN
	// header. It never appears in errors or logs.
	TokenFile string `yaml:"token_file"`
	// Project is the project's full path ("group/sub/project") or its
	// numeric ID.
	Project string `yaml:"project"`
	// APIURL is the GitLab instance's base URL (empty: DefaultURL), https,
	// or http to a loopback address; a path is kept as a prefix (an
	// instance under a relative URL). "/api/v4" is added.
	APIURL string `yaml:"api_url,omitempty"`
	// Labels are put on every issue (nil: DefaultLabels; empty: none),
	// besides ClassLabel.
	Labels []string `yaml:"labels,omitempty"`
	// Timeout bounds one HTTP request (0: DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// projectSegment is one segment of a project path: GitLab allows
// letters, digits, '_', '-' and '.', starting with a letter, digit or '_'.
var projectSegment = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// Validate checks c without touching the file system.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if strings.TrimSpace(c.TokenFile) == "" {
		errs = append(errs, errors.New("token_file is required"))
	}
	if err := validateProject(c.Project); err != nil {
		errs = append(errs, err)
	}
	if c.APIURL != "" {
		if _, err := baseURL(c.APIURL); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, validateLabels(c.Labels)...)
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must not be negative", c.Timeout))
	}
	return errors.Join(errs...)
}

func validateProject(p string) error {
	switch {
	case p == "":
		return errors.New("project is required")
	case isNumericID(p):
		return nil
	case strings.Contains(p, "://"):
		return fmt.Errorf("project %q: want the project's path (group/project) or numeric ID, not a URL", p)
	}
	segs := strings.Split(p, "/")
	if len(segs) < 2 {
		return fmt.Errorf("project %q: want the project's full path with its namespace (group/project) or its numeric ID", p)
	}
	for _, s := range segs {
		if !projectSegment.MatchString(s) || strings.HasSuffix(s, ".git") || strings.HasSuffix(s, ".atom") {
			return fmt.Errorf("project %q: not a project path (segments of letters, digits, '_', '-' and '.', separated by '/')", p)
		}
	}
	return nil
}

func isNumericID(p string) bool {
	if p == "" || p[0] == '0' {
		return false
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func validateLabels(labels []string) []error {
	var errs []error
	seen := map[string]bool{}
	for i, l := range labels {
		switch {
		case strings.TrimSpace(l) == "":
			errs = append(errs, fmt.Errorf("labels[%d]: empty", i))
		case l != strings.TrimSpace(l):
			errs = append(errs, fmt.Errorf("labels[%d] %q: leading or trailing spaces", i, l))
		case strings.Contains(l, ","):
			errs = append(errs, fmt.Errorf("labels[%d] %q: a label cannot contain a comma", i, l))
		case len([]rune(l)) > maxLabel:
			errs = append(errs, fmt.Errorf("labels[%d]: longer than %d characters", i, maxLabel))
		case strings.HasPrefix(l, "driftwatch::"):
			errs = append(errs, fmt.Errorf("labels[%d] %q: the driftwatch:: scope is the class label's, added to every issue", i, l))
		case seen[l]:
			errs = append(errs, fmt.Errorf("labels[%d] %q: duplicate", i, l))
		}
		seen[l] = true
	}
	return errs
}

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

func (c Config) labels() []string {
	if c.Labels == nil {
		return DefaultLabels()
	}
	return c.Labels
}

// baseURL is the instance's base URL: https (or http to a loopback
// address, for test servers), no credentials, query or fragment; a path is
// a prefix.
func baseURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		// url.Parse quotes the URL: say what is wrong without it.
		return "", fmt.Errorf("api_url: not a URL; want an absolute https URL such as %s", DefaultURL)
	}
	if u.User != nil {
		return "", errors.New("api_url: credentials in the URL are not allowed")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		// Not quoted: a query may hold a token (private_token=...).
		return "", errors.New("api_url: only scheme, host, port and a path prefix are allowed")
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("api_url %q: want an absolute https URL such as %s", base, DefaultURL)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return "", fmt.Errorf("api_url %q: scheme must be https (the token travels in a header); plain http is allowed to loopback addresses only", base)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v4")
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
