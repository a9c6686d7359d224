package config

import (
	"fmt"
	"net/mail"
	"strings"
)

// Accept defaults.
const (
	DefaultAcceptBranchPrefix = "driftwatch/accept"
	DefaultAcceptAuthorName   = "driftwatch"
	DefaultAcceptAuthorEmail  = "driftwatch@localhost"
)

// Accept is the daemon-wide `accept:` block: how drift accepted as code
// (`driftwatch accept`, the workspace page's Accept button) is proposed
// for a workspace with a git source. Without a notifier, a change is
// shown as a diff and not proposed.
type Accept struct {
	// Notifier names a notifier of type github or gitlab: its API URL,
	// token and client open the pull (merge) request in the workspace's
	// repository. The branch is pushed with the workspace's git
	// credentials_file, which needs write access.
	Notifier string `yaml:"notifier"`
	// BranchPrefix starts every proposal branch's name (default
	// driftwatch/accept).
	BranchPrefix string `yaml:"branch_prefix"`
	// Labels every pull (merge) request gets (default none).
	Labels []string `yaml:"labels"`
	// AuthorName and AuthorEmail are the commit's author and committer
	// (default driftwatch <driftwatch@localhost>).
	AuthorName  string `yaml:"author_name"`
	AuthorEmail string `yaml:"author_email"`
}

// AcceptProposal is the accept block with its defaults.
type AcceptProposal struct {
	Notifier, BranchPrefix, AuthorName, AuthorEmail string
	Labels                                          []string
}

// EffectiveAccept is c's accept block with the defaults filled in.
func (c *Config) EffectiveAccept() AcceptProposal {
	a := c.Accept
	p := AcceptProposal{Notifier: a.Notifier, BranchPrefix: a.BranchPrefix, AuthorName: a.AuthorName, AuthorEmail: a.AuthorEmail, Labels: a.Labels}
	if p.BranchPrefix == "" {
		p.BranchPrefix = DefaultAcceptBranchPrefix
	}
	if p.AuthorName == "" {
		p.AuthorName = DefaultAcceptAuthorName
	}
	if p.AuthorEmail == "" {
		p.AuthorEmail = DefaultAcceptAuthorEmail
	}
	return p
}

func (c *Config) validateAccept(pos *positions) []error {
	a := c.Accept
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, pos.errorf("accept."+key, format, args...))
	}
	if a.Notifier != "" {
		var typ string
		found := false
		for _, n := range c.Notifiers {
			if n.Name == a.Notifier {
				typ, found = n.Type, true
			}
		}
		switch {
		case !found:
			add("notifier", "unknown notifier %q", a.Notifier)
		case typ != "github" && typ != "gitlab":
			add("notifier", "%q is a %s notifier: pull and merge requests are opened through a github or gitlab one", a.Notifier, typ)
		}
	}
	if p := a.BranchPrefix; p != "" && !validBranchPrefix(p) {
		add("branch_prefix", "%q is not a valid git branch name prefix (letters, digits, '-', '_', '.', '/' between names)", p)
	}
	for i, l := range a.Labels {
		if strings.TrimSpace(l) == "" || strings.ContainsAny(l, ",\r\n") {
			add(fmt.Sprintf("labels[%d]", i), "%q: want a non-empty label without commas or line breaks", l)
		}
	}
	if strings.ContainsAny(a.AuthorName, "<>\r\n") {
		add("author_name", "must not contain <, > or line breaks")
	}
	if e := a.AuthorEmail; e != "" {
		if m, err := mail.ParseAddress(e); err != nil || m.Address != e || m.Name != "" {
			add("author_email", "%q is not an email address", e)
		}
	}
	return errs
}

// validBranchPrefix is git check-ref-format's rules for a prefix of a
// branch name: slash-separated names, none empty, starting with a dot or
// ending with .lock, and no "..", control characters, spaces or any of
// ~^:?*[\@{.
func validBranchPrefix(p string) bool {
	if strings.Contains(p, "..") || strings.ContainsAny(p, " ~^:?*[\\\x7f") || strings.Contains(p, "@{") {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") || strings.HasSuffix(part, ".") {
			return false
		}
		for _, r := range part {
			if r < 0x20 {
				return false
			}
		}
	}
	return true
}
