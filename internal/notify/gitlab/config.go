package gitlab

import (
	"cmp"
	"net/url"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/gitlab/gitlabcfg"
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

// Config configures one GitLab notifier: a rolling issue per incident key
// in one project (gitlabcfg.Config: the notifiers[].gitlab block, its
// keys and its check).
type Config = gitlabcfg.Config

func labels(c Config) []string {
	if c.Labels == nil {
		return DefaultLabels()
	}
	return c.Labels
}

// baseURL is c's checked instance URL (DefaultURL if empty) without a
// trailing "/" or "/api/v4": the client library adds it.
func baseURL(c Config) string {
	u, err := url.Parse(strings.TrimSpace(cmp.Or(c.APIURL, DefaultURL)))
	if err != nil {
		return DefaultURL // Validate checked it
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v4")
	u.RawPath = ""
	return u.String()
}
