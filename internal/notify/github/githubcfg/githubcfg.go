// Package githubcfg is the github notifier's settings: Config, the
// notifiers[].github block config embeds (keys and all), and its one
// Check, which config runs at load and github.New through Validate. It
// imports only notifycfg (a leaf), so config may import it.
package githubcfg

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
)

// Config is the settings block of a notifier of type github: one rolling
// issue per workspace and class in a GitHub (or GitHub Enterprise Server)
// repository.
type Config struct {
	// Name is the notifier's name (notifiers[].name; set by the builder).
	Name string `yaml:"-"`
	// TokenFile holds the token (fine-grained personal access token or
	// GitHub App installation token with Issues read and write). It never
	// appears in errors or logs.
	TokenFile string `yaml:"token_file"`
	// Repository is "owner/name".
	Repository string `yaml:"repository"`
	// APIURL is GitHub Enterprise Server's API, https://HOST/api/v3/
	// (empty: github.com; "api/v3/" is appended to a URL without it unless
	// its host starts with "api."). https, or http to a loopback address.
	APIURL string `yaml:"api_url"`
	// Labels every issue gets besides its class label
	// (driftwatch:<class>); unset: [driftwatch], [] for none.
	Labels []string `yaml:"labels"`
	// Timeout bounds one HTTP request (notifiers[].timeout; 0: the
	// notifier's default).
	Timeout time.Duration `yaml:"-"`
}

// MaxLabel is GitHub's limit on a label's name, in characters.
const MaxLabel = 50

// repoPart is what GitHub allows in an owner or repository name.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Check implements notifycfg.Block.
func (c *Config) Check(v notifycfg.Check) {
	c.TokenFile = v.File("token_file", c.TokenFile)
	switch _, _, ok := ParseRepository(c.Repository); {
	case c.Repository == "":
		v.Add("repository", "required (owner/name)")
	case !ok:
		v.Add("repository", "%q: want owner/name, e.g. acme/infrastructure", c.Repository)
	}
	if u := v.SecureURL("api_url", c.APIURL, "token travels in a header"); u != nil && (u.RawQuery != "" || u.Fragment != "") {
		v.Add("api_url", "want https://HOST/api/v3/ without a query or fragment")
	}
	v.Each("labels", c.Labels, labelMistake)
}

// labelMistake is what GitHub would refuse in label l ("" for nothing).
func labelMistake(l string, _ bool) string {
	switch {
	case strings.TrimSpace(l) == "":
		return "empty label"
	case utf8.RuneCountInString(l) > MaxLabel:
		return fmt.Sprintf("%q is longer than GitHub's 50 characters", l)
	case strings.ContainsAny(l, ",\r\n"):
		return fmt.Sprintf("%q: no commas or line breaks", l)
	}
	return ""
}

// SecretFiles implements notifycfg.Block.
func (c *Config) SecretFiles() []string { return []string{c.TokenFile} }

// Validate checks c as github.New takes it, without touching the file
// system.
func (c Config) Validate() error { return notifycfg.Validate(c.Name, c.Timeout, c.Check) }

// ParseRepository splits "owner/name"; ok is false unless both are
// names GitHub allows.
func ParseRepository(s string) (owner, repo string, ok bool) {
	owner, repo, ok = strings.Cut(s, "/")
	return owner, repo, ok && repoPart.MatchString(owner) && repoPart.MatchString(repo) && !strings.HasSuffix(repo, ".git")
}

// For is c as the notifier sp takes it: with sp's name and timeout.
func (c Config) For(sp notifycfg.Spec) Config {
	c.Name, c.Timeout = sp.Name, sp.Timeout
	return c
}
