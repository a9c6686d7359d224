package config

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Auth modes (server.auth.mode).
const (
	// AuthModeToken (the default): callers authenticate with API tokens,
	// server.token_file (admin), server.read_token_file (viewer) and the
	// named server.auth.tokens.
	AuthModeToken = "token"
	// AuthModeProxy: people are identified by an authenticating reverse
	// proxy through trusted headers; API tokens work as in token mode.
	AuthModeProxy = "proxy"
	// AuthModeOIDC: people sign in with an OpenID Connect provider
	// (driftwatch's own login, a session cookie); API tokens work as in
	// token mode.
	AuthModeOIDC = "oidc"
)

// Defaults of server.auth.oidc.
const (
	DefaultOIDCGroupsClaim   = "groups"
	DefaultOIDCUsernameClaim = "preferred_username"
	DefaultOIDCSessionTTL    = 12 * time.Hour
	// DefaultOIDCIdleTimeout ends a session unused for this long (or
	// session_ttl, if shorter).
	DefaultOIDCIdleTimeout = time.Hour
	// OIDCCallbackPath is the redirect URL's path under server.external_url.
	OIDCCallbackPath = "/auth/callback"
	// MinOIDCCookieSecret is the least length of a cookie secret file's
	// content, in bytes.
	MinOIDCCookieSecret = 32
)

// DefaultOIDCScopes are the scopes asked for without server.auth.oidc.scopes.
var DefaultOIDCScopes = []string{"openid", "email", "profile"}

// Roles (server.auth.tokens[].role, server.auth.roles[].role). viewer <
// operator < admin; approver is viewer plus approving and rejecting
// remediations; admin may do everything.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleApprover = "approver"
	RoleAdmin    = "admin"
	// RoleNone is server.auth.anonymous_role's "no access".
	RoleNone = "none"
)

// Roles lists the roles, least first.
var Roles = []string{RoleViewer, RoleOperator, RoleApprover, RoleAdmin}

// The headers an authenticating proxy sets by default (oauth2-proxy's).
const (
	DefaultProxyUserHeader   = "X-Forwarded-User"
	DefaultProxyEmailHeader  = "X-Forwarded-Email"
	DefaultProxyGroupsHeader = "X-Forwarded-Groups"
	// DefaultProxySecretHeader carries the shared secret the proxy adds
	// to every request it forwards (server.auth.proxy.secret_file).
	DefaultProxySecretHeader = "X-Driftwatch-Proxy-Secret"
)

// Auth is server.auth: who may call the server and with which role.
type Auth struct {
	// Mode is "token" (default), "proxy" or "oidc".
	Mode string `yaml:"mode"`
	// Tokens are named API tokens, each with a role, in any mode. Each
	// file is read on every request (rotation needs no restart).
	Tokens []AuthToken `yaml:"tokens"`
	// Proxy is where the identity of a person comes from in proxy mode.
	Proxy AuthProxy `yaml:"proxy"`
	// OIDC is the OpenID Connect provider of oidc mode.
	OIDC AuthOIDC `yaml:"oidc"`
	// Roles maps people (users, emails, groups: the proxy's headers, or
	// the ID token's claims) onto roles (proxy and oidc modes). A person gets every role an entry matches (admin
	// covers the others); no match is no access, unless AnonymousRole.
	Roles []RoleMapping `yaml:"roles"`
	// AnonymousRole is what a caller without a credential may do: "viewer"
	// (every page, read API and run log), or "none". Unset: "none" in
	// proxy mode; in token mode the status pages and the read API stay
	// open and run logs and run pages need a credential (what driftwatch
	// always did). server.open_reads: true is "viewer".
	AnonymousRole string `yaml:"anonymous_role"`
}

// AuthToken is one named API token.
type AuthToken struct {
	// Name names the caller ("token:<name>" in logs and records); unique.
	Name string `yaml:"name"`
	Role string `yaml:"role"`
	// File holds the token (read on every request, surrounding whitespace
	// ignored).
	File string `yaml:"file"`
	// Workspaces limits an approver token to some workspaces.
	Workspaces WorkspaceScope `yaml:"workspaces"`
}

// AuthProxy is the trusted reverse proxy of proxy mode.
type AuthProxy struct {
	// TrustedNetworks are the CIDRs (or addresses) of the proxy: its
	// headers are believed only from a TCP peer inside one of them (the
	// connection's address, never X-Forwarded-For). Required in proxy mode.
	TrustedNetworks []string `yaml:"trusted_networks"`
	// The header names (defaults: X-Forwarded-User, X-Forwarded-Email,
	// X-Forwarded-Groups; groups comma-separated).
	UserHeader   string `yaml:"user_header"`
	EmailHeader  string `yaml:"email_header"`
	GroupsHeader string `yaml:"groups_header"`
	// SecretFile holds a shared secret (at least 32 characters) the proxy
	// adds to every request it forwards, in SecretHeader: the identity
	// headers are believed only with it, so that code running next to
	// the proxy (a Terraform provider, a local run) cannot name itself
	// anyone by calling driftwatch from a trusted address. Required in
	// proxy mode; read on every request that carries identity headers.
	SecretFile string `yaml:"secret_file"`
	// SecretHeader names the header of the shared secret (default
	// X-Driftwatch-Proxy-Secret). driftwatch removes it from every
	// request before any handler, log or record sees it.
	SecretHeader string `yaml:"secret_header"`
}

// AuthOIDC is the OpenID Connect provider driftwatch signs people in
// with (oidc mode): the authorization code flow with PKCE, then a signed
// session cookie.
type AuthOIDC struct {
	// IssuerURL is the provider's issuer (its discovery document is
	// IssuerURL + "/.well-known/openid-configuration"); https, except on
	// a loopback address.
	IssuerURL string `yaml:"issuer_url"`
	ClientID  string `yaml:"client_id"`
	// ClientSecretFile holds the client secret (never inline).
	ClientSecretFile string `yaml:"client_secret_file"`
	// RedirectURL is where the provider sends the browser back; default
	// server.external_url + "/auth/callback". Register it with the
	// provider.
	RedirectURL string `yaml:"redirect_url"`
	// Scopes asked for; default openid, email, profile ("openid" is
	// required). Add the scope that makes the provider send groups.
	Scopes []string `yaml:"scopes"`
	// GroupsClaim names the ID token claim with the groups (default
	// "groups"); UsernameClaim the one with the user name (default
	// "preferred_username", else the subject).
	GroupsClaim   string `yaml:"groups_claim"`
	UsernameClaim string `yaml:"username_claim"`
	// SessionTTL is how long a sign-in lasts at most, used or not
	// (default 12h).
	SessionTTL Duration `yaml:"session_ttl"`
	// IdleTimeout ends a session unused for this long (default 1h, or
	// SessionTTL if shorter; at most SessionTTL). Both are enforced on
	// the server, whose store keeps every session.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// CookieSecretFile holds the key that signs session cookies (at least
	// 32 bytes). Without it a random key is made at start: every session
	// ends when driftwatch restarts.
	CookieSecretFile string `yaml:"cookie_secret_file"`
}

// RoleMapping gives Role to the people it matches: any of its users,
// emails or groups.
type RoleMapping struct {
	Role   string   `yaml:"role"`
	Users  []string `yaml:"users"`
	Emails []string `yaml:"emails"`
	Groups []string `yaml:"groups"`
	// Workspaces limits an approver entry to some workspaces.
	Workspaces WorkspaceScope `yaml:"workspaces"`
}

// WorkspaceScope is a set of workspaces: those with all of Labels and
// (when Owners is set) one of Owners. The zero value is every workspace.
type WorkspaceScope struct {
	Labels map[string]string `yaml:"labels"`
	Owners []string          `yaml:"owners"`
}

// IsZero reports an unlimited scope.
func (w WorkspaceScope) IsZero() bool { return len(w.Labels) == 0 && len(w.Owners) == 0 }

// Contains reports whether a workspace with these labels and owner is in
// the scope.
func (w WorkspaceScope) Contains(labels map[string]string, owner string) bool {
	for k, v := range w.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return len(w.Owners) == 0 || slices.Contains(w.Owners, owner)
}

// EffectiveMode is Mode with its default.
func (a Auth) EffectiveMode() string {
	if a.Mode == "" {
		return AuthModeToken
	}
	return a.Mode
}

// headerName is an HTTP header field name (RFC 9110 token characters).
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// reservedTokenNames name the tokens of server.token_file and
// server.read_token_file.
var reservedTokenNames = map[string]string{
	"api": "server.token_file", "read": "server.read_token_file", "metrics": "server.metrics_token_file",
}

func (c *Config) validateAuth(pos *positions) []error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, pos.errorf(key, format, args...)) }
	a := &c.Server.Auth
	dir := filepath.Dir(c.File)
	switch a.Mode {
	case "":
		a.Mode = AuthModeToken
	case AuthModeToken, AuthModeProxy, AuthModeOIDC:
	default:
		add("server.auth.mode", "%q: want token, proxy or oidc", a.Mode)
	}
	switch a.AnonymousRole {
	case "", RoleNone:
		if a.AnonymousRole == RoleNone && c.Server.OpenReads {
			add("server.open_reads", "opens reads to anyone, and server.auth.anonymous_role is none: set one of them")
		}
	case RoleViewer:
	default:
		add("server.auth.anonymous_role", "%q: want viewer or none (a caller without a credential never changes anything)", a.AnonymousRole)
	}
	names := map[string]bool{}
	for i := range a.Tokens {
		t := &a.Tokens[i]
		key := fmt.Sprintf("server.auth.tokens[%d]", i)
		switch {
		case t.Name == "":
			add(key+".name", "required")
		case !dnsLabel.MatchString(t.Name):
			add(key+".name", "%q is not a DNS label (lowercase letters, digits and '-')", t.Name)
		case reservedTokenNames[t.Name] != "":
			add(key+".name", "%q names the token of %s: choose another name", t.Name, reservedTokenNames[t.Name])
		case names[t.Name]:
			add(key+".name", "duplicate token %q", t.Name)
		}
		names[t.Name] = true
		if err := checkRole(t.Role); err != nil {
			add(key+".role", "%v", err)
		}
		t.File = absFrom(dir, t.File)
		if t.File == "" {
			add(key+".file", "required: the file that holds the token")
		} else if err := checkServerToken(t.File); err != nil {
			add(key+".file", "%v", err)
		}
		errs = append(errs, checkScope(pos, key, t.Role, t.Workspaces)...)
	}
	p := &a.Proxy
	if a.Mode != AuthModeProxy && (len(p.TrustedNetworks) > 0 || p.UserHeader != "" || p.EmailHeader != "" || p.GroupsHeader != "" ||
		p.SecretFile != "" || p.SecretHeader != "") {
		add("server.auth.proxy", "is used only with server.auth.mode: proxy")
	}
	if a.Mode != AuthModeOIDC && !a.OIDC.isZero() {
		add("server.auth.oidc", "is used only with server.auth.mode: oidc")
	}
	switch a.Mode {
	case AuthModeProxy:
		errs = append(errs, validateProxy(pos, p, dir)...)
	case AuthModeOIDC:
		errs = append(errs, c.validateOIDC(pos)...)
	default:
		if len(a.Roles) > 0 {
			add("server.auth.roles", "map people and are used only with server.auth.mode: proxy or oidc (a token's role is set in server.auth.tokens)")
		}
		return errs
	}
	for i, m := range a.Roles {
		key := fmt.Sprintf("server.auth.roles[%d]", i)
		if err := checkRole(m.Role); err != nil {
			add(key+".role", "%v", err)
		}
		if len(m.Users) == 0 && len(m.Emails) == 0 && len(m.Groups) == 0 {
			add(key, "name users, emails or groups: an entry that matches nobody grants nothing")
		}
		for _, l := range []struct {
			name string
			vs   []string
		}{{"users", m.Users}, {"emails", m.Emails}, {"groups", m.Groups}} {
			for j, v := range l.vs {
				if strings.TrimSpace(v) == "" || strings.Contains(v, ",") && l.name == "groups" {
					add(fmt.Sprintf("%s.%s[%d]", key, l.name, j), "%q is not a %s", v, strings.TrimSuffix(l.name, "s"))
				}
			}
		}
		errs = append(errs, checkScope(pos, key, m.Role, m.Workspaces)...)
	}
	return errs
}

// validateProxy checks server.auth.proxy in proxy mode, resolves its
// secret file against dir and sets its defaults.
func validateProxy(pos *positions, p *AuthProxy, dir string) []error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, pos.errorf(key, format, args...)) }
	if len(p.TrustedNetworks) == 0 {
		add("server.auth.proxy.trusted_networks", "required in proxy mode: the addresses of the proxy, whose identity headers are believed")
	}
	for i, n := range p.TrustedNetworks {
		if _, err := ParseTrustedNetwork(n); err != nil {
			add(fmt.Sprintf("server.auth.proxy.trusted_networks[%d]", i), "%v", err)
		}
	}
	for _, h := range []struct {
		key string
		v   *string
		def string
	}{
		{"user_header", &p.UserHeader, DefaultProxyUserHeader},
		{"email_header", &p.EmailHeader, DefaultProxyEmailHeader},
		{"groups_header", &p.GroupsHeader, DefaultProxyGroupsHeader},
		{"secret_header", &p.SecretHeader, DefaultProxySecretHeader},
	} {
		if *h.v == "" {
			*h.v = h.def
		} else if !headerName.MatchString(*h.v) {
			add("server.auth.proxy."+h.key, "%q is not an HTTP header name", *h.v)
		}
	}
	for _, h := range []struct{ key, v string }{{"user_header", p.UserHeader}, {"email_header", p.EmailHeader}, {"groups_header", p.GroupsHeader}} {
		if strings.EqualFold(h.v, p.SecretHeader) {
			add("server.auth.proxy.secret_header", "%q is the %s too: the secret needs a header of its own", p.SecretHeader, h.key)
		}
	}
	p.SecretFile = absFrom(dir, p.SecretFile)
	if p.SecretFile == "" {
		add("server.auth.proxy.secret_file", "required in proxy mode: the file holding the shared secret the proxy adds in %s "+
			"(a trusted address alone is not enough: anything running there could name itself anyone)", p.SecretHeader)
	} else if err := checkServerToken(p.SecretFile); err != nil {
		add("server.auth.proxy.secret_file", "%v", err)
	}
	return errs
}

func (o AuthOIDC) isZero() bool {
	return o.IssuerURL == "" && o.ClientID == "" && o.ClientSecretFile == "" && o.RedirectURL == "" &&
		len(o.Scopes) == 0 && o.GroupsClaim == "" && o.UsernameClaim == "" && o.SessionTTL == 0 && o.IdleTimeout == 0 && o.CookieSecretFile == ""
}

// validateOIDC checks server.auth.oidc in oidc mode, resolves its files
// against the config file's directory and sets its defaults. The secrets'
// contents are never part of an error.
func (c *Config) validateOIDC(pos *positions) []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, pos.errorf("server.auth.oidc"+key, format, args...))
	}
	o := &c.Server.Auth.OIDC
	dir := filepath.Dir(c.File)
	if o.IssuerURL == "" {
		add(".issuer_url", "required in oidc mode: the provider's issuer URL")
	} else if err := checkIssuerURL(o.IssuerURL); err != nil {
		add(".issuer_url", "%v", err)
	}
	if strings.TrimSpace(o.ClientID) == "" {
		add(".client_id", "required in oidc mode: driftwatch's client ID at the provider")
	}
	o.ClientSecretFile = absFrom(dir, o.ClientSecretFile)
	if o.ClientSecretFile == "" {
		add(".client_secret_file", "required in oidc mode: the file that holds the client secret")
	} else if err := checkTokenFile(o.ClientSecretFile); err != nil {
		add(".client_secret_file", "%v", err)
	}
	switch {
	case o.RedirectURL != "":
		if u, err := url.Parse(o.RedirectURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
			add(".redirect_url", "%q is not an absolute http(s) URL", o.RedirectURL)
		}
	case c.Server.ExternalURL != "":
		o.RedirectURL = strings.TrimSuffix(c.Server.ExternalURL, "/") + OIDCCallbackPath
	default:
		add(".redirect_url", "required without server.external_url (it defaults to server.external_url + %q)", OIDCCallbackPath)
	}
	if len(o.Scopes) == 0 {
		o.Scopes = slices.Clone(DefaultOIDCScopes)
	} else if !slices.Contains(o.Scopes, "openid") {
		add(".scopes", "must include openid")
	}
	for i, sc := range o.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\n\"\\") {
			add(fmt.Sprintf(".scopes[%d]", i), "%q is not a scope", sc)
		}
	}
	o.GroupsClaim = cmp.Or(o.GroupsClaim, DefaultOIDCGroupsClaim)
	o.UsernameClaim = cmp.Or(o.UsernameClaim, DefaultOIDCUsernameClaim)
	switch {
	case o.SessionTTL == 0:
		o.SessionTTL = Duration(DefaultOIDCSessionTTL)
	case time.Duration(o.SessionTTL) < time.Minute:
		add(".session_ttl", "%s is shorter than a minute", time.Duration(o.SessionTTL))
	}
	switch {
	case o.IdleTimeout == 0:
		o.IdleTimeout = min(Duration(DefaultOIDCIdleTimeout), o.SessionTTL)
	case time.Duration(o.IdleTimeout) < time.Minute:
		add(".idle_timeout", "%s is shorter than a minute", time.Duration(o.IdleTimeout))
	case o.IdleTimeout > o.SessionTTL:
		add(".idle_timeout", "%s is longer than session_ttl (%s): a session ends at session_ttl anyway",
			time.Duration(o.IdleTimeout), time.Duration(o.SessionTTL))
	}
	o.CookieSecretFile = absFrom(dir, o.CookieSecretFile)
	if o.CookieSecretFile != "" {
		if err := checkTokenFile(o.CookieSecretFile); err != nil {
			add(".cookie_secret_file", "%v", err)
		} else if b, err := os.ReadFile(o.CookieSecretFile); err == nil && len(strings.TrimSpace(string(b))) < MinOIDCCookieSecret {
			add(".cookie_secret_file", "%s holds fewer than %d bytes: the key must be long and random (e.g. openssl rand -base64 48)", o.CookieSecretFile, MinOIDCCookieSecret)
		}
	}
	return errs
}

// checkIssuerURL checks an issuer: an absolute URL without query or
// fragment, https unless its host is a loopback address (a test's
// provider): a plain-http issuer elsewhere would let the network forge
// sign-ins.
func checkIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not an absolute http(s) URL without query or fragment", s)
	}
	if u.Scheme == "http" && !IsLoopbackHost(u.Hostname()) {
		return fmt.Errorf("%q: the issuer must be https (plain http only on a loopback address)", s)
	}
	return nil
}

// IsLoopbackHost reports "localhost" or a loopback IP address.
func IsLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func checkRole(role string) error {
	switch {
	case role == "":
		return fmt.Errorf("required: one of %s", strings.Join(Roles, ", "))
	case !slices.Contains(Roles, role):
		return fmt.Errorf("%q: want one of %s", role, strings.Join(Roles, ", "))
	}
	return nil
}

// checkScope checks the workspaces limit of a role entry: approvers only.
func checkScope(pos *positions, key, role string, w WorkspaceScope) []error {
	if w.IsZero() {
		return nil
	}
	if role != RoleApprover {
		return []error{pos.errorf(key+".workspaces", "limits approvers only (this entry's role is %q)", role)}
	}
	var errs []error
	for k, v := range w.Labels {
		if k == "" || v == "" {
			errs = append(errs, pos.errorf(key+".workspaces.labels", "labels need a key and a value"))
			break
		}
	}
	for i, o := range w.Owners {
		if strings.TrimSpace(o) == "" {
			errs = append(errs, pos.errorf(fmt.Sprintf("%s.workspaces.owners[%d]", key, i), "empty owner"))
		}
	}
	return errs
}

// ParseTrustedNetwork parses a server.auth.proxy.trusted_networks entry: a
// CIDR, or one address. A network of every address is refused: it would
// let anyone who reaches the port name themselves.
func ParseTrustedNetwork(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		a, aerr := netip.ParseAddr(strings.TrimSpace(s))
		if aerr != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR or an IP address", s)
		}
		p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, fmt.Errorf("%q trusts every address: anyone who reaches the port could name themselves; list the proxy's addresses", s)
	}
	return p.Masked(), nil
}
