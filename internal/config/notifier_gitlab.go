package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// GitLabConfig is the settings block of a notifier of type gitlab: one
// rolling issue per workspace and class in a GitLab project, rewritten in
// place on every change, commented on, closed on resolve and reopened if
// the same drift comes back.
type GitLabConfig struct {
	// TokenFile holds the access token, sent as the PRIVATE-TOKEN header:
	// a project access token with the api scope and at least the Reporter
	// role (a group or personal access token works too).
	TokenFile string `yaml:"token_file"`
	// Project is the project's full path ("group/sub/project") or its
	// numeric ID.
	Project string `yaml:"project"`
	// APIURL is the GitLab instance's base URL (default
	// https://gitlab.com; self-managed instances, proxies, tests): https,
	// or http to a loopback address; a path is a prefix.
	APIURL string `yaml:"api_url"`
	// Labels are put on every issue (default [driftwatch]; [] for none),
	// besides the class label driftwatch::<class>, which every issue
	// carries.
	Labels []string `yaml:"labels"`
}

// gitlabProjectSegment is one segment of a GitLab project path.
var gitlabProjectSegment = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

func (c *GitLabConfig) validate(v blockCheck) {
	c.TokenFile = v.file("token_file", c.TokenFile)
	switch p := c.Project; {
	case p == "":
		v.add("project", "required: the project's full path (group/project) or numeric ID")
	case strings.Contains(p, "://"):
		v.add("project", "%q: want the project's path (group/project) or numeric ID, not a URL", p)
	case gitlabNumericID(p):
	case !strings.Contains(p, "/"):
		v.add("project", "%q: want the project's full path with its namespace (group/project) or its numeric ID", p)
	default:
		for _, s := range strings.Split(p, "/") {
			if !gitlabProjectSegment.MatchString(s) || strings.HasSuffix(s, ".git") || strings.HasSuffix(s, ".atom") {
				v.add("project", "%q: not a project path (segments of letters, digits, '_', '-' and '.', separated by '/')", p)
				break
			}
		}
	}
	if c.APIURL != "" {
		c.validateURL(v)
	}
	seen := map[string]bool{}
	for i, l := range c.Labels {
		key := fmt.Sprintf("labels[%d]", i)
		switch {
		case strings.TrimSpace(l) == "":
			v.add(key, "empty")
		case l != strings.TrimSpace(l):
			v.add(key, "%q: leading or trailing spaces", l)
		case strings.Contains(l, ","):
			v.add(key, "%q: a label cannot contain a comma", l)
		case utf8.RuneCountInString(l) > 255:
			v.add(key, "longer than 255 characters")
		case strings.HasPrefix(l, "driftwatch::"):
			v.add(key, "%q: the driftwatch:: scope is the class label's (driftwatch::drift, ::forbidden, ::errored), added to every issue", l)
		case seen[l]:
			v.add(key, "%q: duplicate", l)
		}
		seen[l] = true
	}
}

func (c *GitLabConfig) validateURL(v blockCheck) {
	u, err := url.Parse(c.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add("api_url", "not an http(s) URL")
		return
	}
	switch {
	case u.User != nil:
		v.add("api_url", "credentials in the URL are not allowed")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		v.add("api_url", "only scheme, host, port and a path prefix are allowed")
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		v.add("api_url", "must be https: the token travels in a header (http only to a loopback address)")
	}
}

func gitlabNumericID(p string) bool {
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

func (c *GitLabConfig) secretFiles() []string { return []string{c.TokenFile} }
