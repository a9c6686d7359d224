package github

import (
	"net/url"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/github/githubcfg"
)

// DefaultTimeout bounds one HTTP request when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DefaultLabels are the labels every issue gets when Config.Labels is nil,
// besides its class label (ClassLabel).
func DefaultLabels() []string { return []string{"driftwatch"} }

// Config configures one GitHub notifier: a repository whose issues
// mirror driftwatch's incidents (githubcfg.Config: the notifiers[].github
// block, its keys and its check).
type Config = githubcfg.Config

// labels is c's labels (DefaultLabels if nil), trimmed and without
// duplicates.
func labels(c Config) []string {
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

// apiURL is a checked Enterprise Server API URL with a trailing slash.
func apiURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return s // Validate checked it
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawPath = ""
	return u.String()
}
