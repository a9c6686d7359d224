// Package gitlabcfg is the gitlab notifier's settings: Config, the
// notifiers[].gitlab block config embeds (keys and all), and its one
// Check, which config runs at load and gitlab.New through Validate. It
// imports only notifycfg (a leaf), so config may import it.
package gitlabcfg

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
)

// Config is the settings block of a notifier of type gitlab: one rolling
// issue per workspace and class in a GitLab project, rewritten in place
// on every change, commented on, closed on resolve and reopened if the
// same drift comes back.
type Config struct {
	// Name is the notifier's name (notifiers[].name; set by the builder).
	Name string `yaml:"-"`
	// TokenFile holds the access token, sent as the PRIVATE-TOKEN header:
	// a project access token with the api scope and at least the Reporter
	// role (a group or personal access token works too). It never appears
	// in errors or logs.
	TokenFile string `yaml:"token_file"`
	// Project is the project's full path ("group/sub/project") or its
	// numeric ID.
	Project string `yaml:"project"`
	// APIURL is the GitLab instance's base URL (default
	// https://gitlab.com; self-managed instances, proxies, tests): https,
	// or http to a loopback address; a path is a prefix (an instance under
	// a relative URL). "/api/v4" is added.
	APIURL string `yaml:"api_url"`
	// Labels are put on every issue (default [driftwatch]; [] for none),
	// besides the class label driftwatch::<class>, which every issue
	// carries.
	Labels []string `yaml:"labels"`
	// Timeout bounds one HTTP request (notifiers[].timeout; 0: the
	// notifier's default).
	Timeout time.Duration `yaml:"-"`
}

// MaxLabel is GitLab's limit on a label's title, in characters.
const MaxLabel = 255

// projectSegment is one segment of a GitLab project path: letters,
// digits, '_', '-' and '.', starting with a letter, digit or '_'.
var projectSegment = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// Check implements notifycfg.Block.
func (c *Config) Check(v notifycfg.Check) {
	c.TokenFile = v.File("token_file", c.TokenFile)
	switch p := c.Project; {
	case p == "":
		v.Add("project", "required: the project's full path (group/project) or numeric ID")
	case strings.Contains(p, "://"):
		v.Add("project", "%q: want the project's path (group/project) or numeric ID, not a URL", p)
	case numericID(p):
	case !strings.Contains(p, "/"):
		v.Add("project", "%q: want the project's full path with its namespace (group/project) or its numeric ID", p)
	default:
		for _, s := range strings.Split(p, "/") {
			if !projectSegment.MatchString(s) || strings.HasSuffix(s, ".git") || strings.HasSuffix(s, ".atom") {
				v.Add("project", "%q: not a project path (segments of letters, digits, '_', '-' and '.', separated by '/')", p)
				break
			}
		}
	}
	if u := v.SecureURL("api_url", c.APIURL, "token travels in a header"); u != nil && (u.RawQuery != "" || u.Fragment != "" || u.ForceQuery) {
		v.Add("api_url", "only scheme, host, port and a path prefix are allowed")
	}
	v.Each("labels", c.Labels, labelMistake)
}

// labelMistake is what GitLab would refuse, or driftwatch keeps for
// itself, in label l, dup when an earlier label was l ("" for nothing).
func labelMistake(l string, dup bool) string {
	switch {
	case strings.TrimSpace(l) == "":
		return "empty"
	case l != strings.TrimSpace(l):
		return fmt.Sprintf("%q: leading or trailing spaces", l)
	case strings.Contains(l, ","):
		return fmt.Sprintf("%q: a label cannot contain a comma", l)
	case utf8.RuneCountInString(l) > MaxLabel:
		return "longer than 255 characters"
	case strings.HasPrefix(l, "driftwatch::"):
		return fmt.Sprintf("%q: the driftwatch:: scope is the class label's (driftwatch::drift, ::forbidden, ::errored), added to every issue", l)
	case dup:
		return fmt.Sprintf("%q: duplicate", l)
	}
	return ""
}

// SecretFiles implements notifycfg.Block.
func (c *Config) SecretFiles() []string { return []string{c.TokenFile} }

// Validate checks c as gitlab.New takes it, without touching the file
// system.
func (c Config) Validate() error { return notifycfg.Validate(c.Name, c.Timeout, c.Check) }

// numericID reports whether p is a project's numeric ID.
func numericID(p string) bool {
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

// For is c as the notifier sp takes it: with sp's name and timeout.
func (c Config) For(sp notifycfg.Spec) Config {
	c.Name, c.Timeout = sp.Name, sp.Timeout
	return c
}
