package auth

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/store"
)

// anonymous access (server.auth.anonymous_role, server.open_reads).
type anonAccess int

const (
	// anonNone: nothing without a credential.
	anonNone anonAccess = iota
	// anonStatus: token mode's default, what driftwatch always did: the
	// pages and the read API are open, run logs and run pages are not.
	anonStatus
	// anonViewer: every read, run logs and run pages too.
	anonViewer
)

// Authenticator establishes a request's Identity: from an API token in
// every mode, from a trusted proxy's headers in proxy mode, from the
// session cookie of an OpenID Connect sign-in in oidc mode (oidc.go).
type Authenticator struct {
	mode   string
	tokens []namedToken
	anon   anonAccess
	// metrics is the scrape token of /metrics (server.metrics_token_file),
	// file "" without one.
	metrics namedToken
	// Proxy mode.
	trusted                []netip.Prefix
	userH, emailH, groupsH string
	// secretH carries the proxy's shared secret, held by secretFile.
	secretH, secretFile string
	roles               []config.RoleMapping
	// files remembers the last problem reported of each credential file
	// (noteFile), so that a broken or weak file is logged once per change,
	// not on every request.
	filesMu sync.Mutex
	files   map[string]string
	// oidc is oidc mode's relying party, nil in other modes.
	oidc    *OIDC
	csrfKey []byte
	// base is the external URL (sameOrigin).
	base    string
	logger  *slog.Logger
	message MessageFunc
}

// Options configures New.
type Options struct {
	// Config is the config file's server section (token files, the auth
	// mode and its settings, the external URL).
	Config config.Server
	// Base is the absolute external URL without its trailing slash (""
	// without one): a request whose Origin it is comes from driftwatch.
	Base   string
	Logger *slog.Logger
	// Sessions keeps oidc mode's sessions; nil: Store's, which must then
	// be a store.SessionStore in oidc mode.
	Sessions store.SessionStore
	Store    store.Store
	// Message answers the sign-in routes with a page (the server's
	// message page; see MessageFunc).
	Message MessageFunc
}

// MessageFunc answers a request with a page saying msg (a sentence
// without its capital and full stop) under heading.
type MessageFunc func(w http.ResponseWriter, r *http.Request, code int, heading, msg string)

// New builds the Authenticator of o.Config: it reads every token file
// once, so a token that can never work fails at startup (the files are
// still read on every request, so that rotation needs no restart).
func New(o Options) (*Authenticator, error) {
	a, err := newAuthenticator(o.Config, o.Logger)
	if err != nil {
		return nil, err
	}
	a.base, a.message = o.Base, o.Message
	if a.oidc != nil {
		if err := a.oidc.setSessions(o.Sessions, o.Store); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func newAuthenticator(c config.Server, logger *slog.Logger) (*Authenticator, error) {
	a := &Authenticator{mode: c.Auth.EffectiveMode(), logger: logger, files: map[string]string{}}
	if c.TokenFile != "" {
		a.tokens = append(a.tokens, namedToken{name: "api", file: c.TokenFile, key: "Config.TokenFile", role: RoleAdmin})
	}
	if c.ReadTokenFile != "" {
		a.tokens = append(a.tokens, namedToken{name: "read", file: c.ReadTokenFile, key: "Config.ReadTokenFile", role: RoleViewer})
	}
	names := map[string]bool{"api": true, "read": true, "metrics": true}
	for i, t := range c.Auth.Tokens {
		key := fmt.Sprintf("Config.Auth.Tokens[%d]", i)
		switch {
		case t.Name == "" || names[t.Name]:
			return nil, fmt.Errorf("Options.%s.Name %q: empty, reserved or not unique", key, t.Name)
		case !Role(t.Role).Valid():
			return nil, fmt.Errorf("Options.%s.Role %q is not a role", key, t.Role)
		case t.File == "":
			return nil, fmt.Errorf("Options.%s.File is required", key)
		}
		names[t.Name] = true
		a.tokens = append(a.tokens, namedToken{name: t.Name, file: t.File, key: key, role: Role(t.Role), scope: t.Workspaces})
	}
	if c.MetricsTokenFile != "" {
		a.metrics = namedToken{name: "metrics", file: c.MetricsTokenFile, key: "Config.MetricsTokenFile"}
		if _, err := a.readCredential(a.metrics.file, a.metrics.key); err != nil {
			return nil, fmt.Errorf("%s: %w", "Options."+a.metrics.key, err)
		}
	}
	var toks [][]byte
	for _, t := range a.tokens {
		tok, err := a.readCredential(t.file, t.key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", "Options."+t.key, err)
		}
		for j, prev := range toks {
			switch {
			case !tokenEqual(prev, tok):
			case a.tokens[j].name == "api" && t.name == "read":
				logger.Warn("the read token (server.read_token_file) is the API token (server.token_file): whoever holds it can call mutating endpoints too")
			default:
				logger.Warn("two API tokens are the same: whoever holds it has the larger role of the two",
					"token", a.tokens[j].name, "same_as", t.name)
			}
		}
		toks = append(toks, tok)
	}
	switch c.Auth.AnonymousRole {
	case config.RoleViewer:
		a.anon = anonViewer
	case "":
		if a.mode == config.AuthModeToken {
			a.anon = anonStatus
		}
	case config.RoleNone:
		a.anon = anonNone
		if c.OpenReads {
			return nil, errors.New("Options.Config.OpenReads opens reads and Options.Config.Auth.AnonymousRole is none")
		}
	default:
		return nil, fmt.Errorf("Options.Config.Auth.AnonymousRole %q: want viewer, none or empty", c.Auth.AnonymousRole)
	}
	if c.OpenReads {
		a.anon = anonViewer
	}
	switch a.mode {
	case config.AuthModeToken:
	case config.AuthModeProxy:
		p := c.Auth.Proxy
		if len(p.TrustedNetworks) == 0 {
			return nil, errors.New("Options.Config.Auth.Proxy.TrustedNetworks is required in proxy mode")
		}
		for i, n := range p.TrustedNetworks {
			pfx, err := config.ParseTrustedNetwork(n)
			if err != nil {
				return nil, fmt.Errorf("Options.Config.Auth.Proxy.TrustedNetworks[%d]: %w", i, err)
			}
			a.trusted = append(a.trusted, pfx)
		}
		a.userH = cmp.Or(p.UserHeader, config.DefaultProxyUserHeader)
		a.emailH = cmp.Or(p.EmailHeader, config.DefaultProxyEmailHeader)
		a.groupsH = cmp.Or(p.GroupsHeader, config.DefaultProxyGroupsHeader)
		a.secretH = http.CanonicalHeaderKey(cmp.Or(p.SecretHeader, config.DefaultProxySecretHeader))
		if p.SecretFile == "" {
			return nil, errors.New("Options.Config.Auth.Proxy.SecretFile is required in proxy mode: " +
				"the proxy's headers are believed only with the shared secret it adds")
		}
		a.secretFile = p.SecretFile
		if _, err := a.readCredential(a.secretFile, "Config.Auth.Proxy.SecretFile"); err != nil {
			return nil, fmt.Errorf("Options.Config.Auth.Proxy.SecretFile: %w", err)
		}
		if err := a.setRoles(c.Auth.Roles); err != nil {
			return nil, err
		}
	case config.AuthModeOIDC:
		if err := a.setRoles(c.Auth.Roles); err != nil {
			return nil, err
		}
		var err error
		if a.oidc, err = newOIDC(c, logger); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("Options.Config.Auth.Mode %q: want token, proxy or oidc", a.mode)
	}
	a.csrfKey = make([]byte, 32)
	if _, err := rand.Read(a.csrfKey); err != nil {
		return nil, fmt.Errorf("csrf key: %w", err)
	}
	return a, nil
}

// setRoles checks and keeps server.auth.roles (proxy and oidc modes).
func (a *Authenticator) setRoles(roles []config.RoleMapping) error {
	for i, m := range roles {
		if !Role(m.Role).Valid() {
			return fmt.Errorf("Options.Config.Auth.Roles[%d].Role %q is not a role", i, m.Role)
		}
	}
	a.roles = roles
	return nil
}

// withRoles grants id the roles of every server.auth.roles entry naming
// its user name, its email (any case) or one of its groups.
func (a *Authenticator) withRoles(id Identity, user string) Identity {
	for _, m := range a.roles {
		if (user != "" && slices.Contains(m.Users, user)) ||
			(id.Email != "" && slices.ContainsFunc(m.Emails, func(e string) bool { return strings.EqualFold(e, id.Email) })) ||
			slices.ContainsFunc(m.Groups, func(g string) bool { return slices.Contains(id.Groups, g) }) {
			id.grant(Role(m.Role), m.Workspaces)
		}
	}
	return id
}

// namesGroup reports whether a server.auth.roles entry names group g.
func (a *Authenticator) namesGroup(g string) bool {
	return slices.ContainsFunc(a.roles, func(m config.RoleMapping) bool { return slices.Contains(m.Groups, g) })
}

// canGrant reports whether any credential this server accepts could hold
// a role allowing need (else a refusal says what to configure).
func (a *Authenticator) canGrant(need Role) bool {
	for _, t := range a.tokens {
		if t.role.Grants(need) {
			return true
		}
	}
	for _, m := range a.roles {
		if Role(m.Role).Grants(need) {
			return true
		}
	}
	return false
}

// anonymousMay reports whether a caller without a credential may use a
// route that needs need (logs: it shows run logs).
func (a *Authenticator) anonymousMay(need Role, logs bool) bool {
	switch a.anon {
	case anonViewer:
		return need == RoleViewer
	case anonStatus:
		return need == RoleViewer && !logs
	}
	return false
}

// AnonymousViewer reports whether a caller without a credential reads
// all a viewer does (server.auth.anonymous_role: viewer, open_reads).
func (a *Authenticator) AnonymousViewer() bool { return a.anon == anonViewer }

// OIDC is oidc mode's relying party, nil in other modes.
func (a *Authenticator) OIDC() *OIDC { return a.oidc }

// Outcome is what authentication made of a request's credential,
// besides the identity.
type Outcome int

const (
	// OutcomeNone is a request that offered no credential.
	OutcomeNone Outcome = iota
	// OutcomeOK is a credential that names who made the request.
	OutcomeOK
	// OutcomeInvalid is a credential offered that matches none.
	OutcomeInvalid
	// OutcomeUntrusted is proxy identity headers from a peer outside
	// trusted_networks.
	OutcomeUntrusted
)

// authenticate establishes who makes r. A token whose file cannot be read
// (removed, emptied) is revoked: it matches nothing, the others still
// work, and the log names the file (noteFile), never a token.
func (a *Authenticator) authenticate(r *http.Request) (Identity, Outcome) {
	if a.oidc != nil {
		// A session that is missing, forged or expired is no credential
		// (a page then sends the browser to sign in), not an invalid one.
		// server.auth.roles' users match the subject: the name shown
		// (the username claim) is anyone's to choose at some providers.
		if id, ses, ok := a.oidc.fromSession(r); ok {
			return a.withRoles(id, ses.Subject), OutcomeOK
		}
	}
	if a.mode == config.AuthModeProxy {
		if id, out := a.fromProxy(r); out != OutcomeNone {
			return id, out
		}
	}
	got, offered := offeredToken(r)
	if !offered {
		return Identity{Method: MethodAnonymous}, OutcomeNone
	}
	for _, t := range a.tokens {
		want, err := a.readCredential(t.file, t.key)
		if err != nil {
			continue
		}
		if got != nil && tokenEqual(got, want) {
			id := Identity{Name: t.name, Method: MethodTokenPrefix + t.name}
			id.grant(t.role, t.scope)
			return id, OutcomeOK
		}
	}
	return Identity{Method: MethodAnonymous}, OutcomeInvalid
}
