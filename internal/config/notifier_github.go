package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// GitHubConfig is the settings block of a notifier of type github: one
// rolling issue per workspace and class in a GitHub (or GitHub Enterprise
// Server) repository.
type GitHubConfig struct {
	// TokenFile holds the token (fine-grained personal access token or
	// GitHub App installation token with Issues read and write).
	TokenFile string `yaml:"token_file"`
	// Repository is "owner/name".
	Repository string `yaml:"repository"`
	// APIURL is GitHub Enterprise Server's API, https://HOST/api/v3/
	// (empty: github.com).
	APIURL string `yaml:"api_url"`
	// Labels every issue gets besides its class label
	// (driftwatch:<class>); unset: [driftwatch], [] for none.
	Labels []string `yaml:"labels"`
}

// githubRepoPart is what GitHub allows in an owner or repository name.
var githubRepoPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

func (c *GitHubConfig) validate(v blockCheck) {
	c.TokenFile = v.file("token_file", c.TokenFile)
	owner, repo, ok := strings.Cut(c.Repository, "/")
	switch {
	case c.Repository == "":
		v.add("repository", "required (owner/name)")
	case !ok || !githubRepoPart.MatchString(owner) || !githubRepoPart.MatchString(repo) || strings.HasSuffix(repo, ".git"):
		v.add("repository", "%q: want owner/name, e.g. acme/infrastructure", c.Repository)
	}
	v.url("api_url", c.APIURL)
	if u, err := url.Parse(c.APIURL); c.APIURL != "" && err == nil {
		switch {
		case u.Scheme == "http" && !loopbackHost(u.Hostname()):
			v.add("api_url", "must be https: the token travels in a header (http only to a loopback address)")
		case u.RawQuery != "" || u.Fragment != "":
			v.add("api_url", "want https://HOST/api/v3/ without a query or fragment")
		}
	}
	for i, l := range c.Labels {
		sub := fmt.Sprintf("labels[%d]", i)
		switch {
		case strings.TrimSpace(l) == "":
			v.add(sub, "empty label")
		case utf8.RuneCountInString(l) > 50:
			v.add(sub, "%q is longer than GitHub's 50 characters", l)
		case strings.ContainsAny(l, ",\r\n"):
			v.add(sub, "%q: no commas or line breaks", l)
		}
	}
}

func (c *GitHubConfig) secretFiles() []string { return []string{c.TokenFile} }
