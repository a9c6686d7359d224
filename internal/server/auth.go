package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/driftwatch/driftwatch/internal/config"
)

// maxTokenFileSize bounds the token file so a wrong path (a log file, a
// device) cannot make every request read megabytes.
const maxTokenFileSize = 4 << 10

// readToken reads the bearer token from path: the file's content without
// surrounding whitespace. An empty token is an error, never "no auth".
func readToken(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	if len(b) > maxTokenFileSize {
		return nil, fmt.Errorf("token file is larger than %d bytes", maxTokenFileSize)
	}
	tok := bytes.TrimSpace(b)
	if len(tok) == 0 {
		return nil, errors.New("token file is empty")
	}
	return tok, nil
}

// bearer returns the credentials of an "Authorization: Bearer <token>"
// header (scheme case-insensitive), or ok false.
func bearer(h string) (tok []byte, ok bool) {
	scheme, cred, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return nil, false
	}
	cred = strings.TrimSpace(cred)
	if cred == "" {
		return nil, false
	}
	return []byte(cred), true
}

// tokenEqual compares in constant time. Hashing first makes the time
// independent of the lengths too.
func tokenEqual(a, b []byte) bool {
	ha, hb := sha256.Sum256(a), sha256.Sum256(b)
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// offeredToken returns the token a request offers for a read: the bearer
// token, or the password of HTTP Basic auth with any user name (what a
// browser's sign-in dialog sends). offered reports an Authorization header
// at all, usable or not.
//
// Basic auth is accepted for reads only: a browser replays Basic
// credentials on its own, also on requests another site's page makes it
// send, so a mutating endpoint taking them could be called cross-site.
// Mutating endpoints (unsafe methods) take the bearer token alone.
func offeredToken(r *http.Request) (tok []byte, offered bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, false
	}
	if tok, ok := bearer(h); ok {
		return tok, true
	}
	if !safeMethod(r.Method) {
		return nil, true
	}
	if _, pw, ok := r.BasicAuth(); ok && strings.TrimSpace(pw) != "" {
		return []byte(strings.TrimSpace(pw)), true
	}
	return nil, true
}

// Read refusals, for the API and (as plain sentences) the pages.
const (
	msgReadsClosed = "run logs and run pages need a read credential, and none is configured: " +
		"set server.read_token_file (or server.token_file), or server.open_reads: true to open them"
	msgReadMissing = "run logs and run pages need a read credential: the API token or the read token " +
		"(server.read_token_file), as a bearer token or as the password of HTTP Basic auth (any user name)"
	msgReadInvalid = "invalid read credential: it is neither the API token nor the read token"
	msgValuesNoTok = "this log holds the plan's attribute values (log_plan_text): it is served only to a reader " +
		"with a credential, and none is configured: set server.read_token_file or server.token_file"
	msgValues = "this log holds the plan's attribute values (log_plan_text): it is served only with a read credential " +
		"(the API token or the read token), even with server.open_reads"
)

// refuseValues refuses a log that holds attribute values to a reader
// without a credential.
func (s *Server) refuseValues(w http.ResponseWriter, r *http.Request, page bool) {
	if !s.auth.canGrant(RoleViewer) {
		s.refuseRead(w, r, page, http.StatusForbidden, msgValuesNoTok)
		return
	}
	s.refuseRead(w, r, page, http.StatusUnauthorized, msgValues)
}

// refuseRead answers a refused read of a run's log or page.
func (s *Server) refuseRead(w http.ResponseWriter, r *http.Request, page bool, code int, msg string) {
	heading := "Sign in to read this run"
	if code == http.StatusForbidden {
		heading = "Run pages are not open"
	}
	s.refuse(w, r, page, code, heading, msg)
}

// refuse answers a refused request: JSON on the API, a page (that makes a
// browser ask for user name and password on 401) on pages. msg is a
// sentence without its capital and full stop.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, page bool, code int, heading, msg string) {
	if code == http.StatusUnauthorized && page && s.auth.oidc != nil && safeMethod(r.Method) {
		// oidc mode: a browser signs in with the provider, then comes
		// back to this page.
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, s.auth.oidc.loginURL(r), http.StatusSeeOther)
		return
	}
	if code == http.StatusUnauthorized {
		if page {
			w.Header().Set("WWW-Authenticate", `Basic realm="driftwatch"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="driftwatch"`)
		}
	}
	if !page {
		writeError(w, code, msg)
		return
	}
	s.render(w, r, code, s.pages.message, messagePageData{
		page:    s.newPage(r, "driftwatch: "+strings.ToLower(heading), false),
		Heading: heading,
		Message: strings.ToUpper(msg[:1]) + msg[1:] + ".",
	})
}

// safeMethod reports a method that reads (it changes nothing).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// namedToken is an API token: the file that holds it (read on every
// request, so rotation needs no restart) and the identity it stands for.
type namedToken struct {
	name, file, key string // key: the config key, for errors
	role            Role
	scope           config.WorkspaceScope
}

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

// authenticator establishes a request's Identity: from an API token in
// every mode, from a trusted proxy's headers in proxy mode, from the
// session cookie of an OpenID Connect sign-in in oidc mode (oidc.go).
type authenticator struct {
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
	oidc    *oidcAuth
	csrfKey []byte
	logger  *slog.Logger
}

// newAuthenticator builds the authenticator of c; it reads every token
// file once, so a token that can never work fails at startup.
func newAuthenticator(c config.Server, logger *slog.Logger) (*authenticator, error) {
	a := &authenticator{mode: c.Auth.EffectiveMode(), logger: logger, files: map[string]string{}}
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
		case !Role(t.Role).valid():
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
func (a *authenticator) setRoles(roles []config.RoleMapping) error {
	for i, m := range roles {
		if !Role(m.Role).valid() {
			return fmt.Errorf("Options.Config.Auth.Roles[%d].Role %q is not a role", i, m.Role)
		}
	}
	a.roles = roles
	return nil
}

// withRoles grants id the roles of every server.auth.roles entry naming
// its user name, its email (any case) or one of its groups.
func (a *authenticator) withRoles(id Identity, user string) Identity {
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
func (a *authenticator) namesGroup(g string) bool {
	return slices.ContainsFunc(a.roles, func(m config.RoleMapping) bool { return slices.Contains(m.Groups, g) })
}

// canGrant reports whether any credential this server accepts could hold
// a role allowing need (else a refusal says what to configure).
func (a *authenticator) canGrant(need Role) bool {
	for _, t := range a.tokens {
		if t.role.grants(need) {
			return true
		}
	}
	for _, m := range a.roles {
		if Role(m.Role).grants(need) {
			return true
		}
	}
	return false
}

// anonymousMay reports whether a caller without a credential may use a
// route that needs need (logs: it shows run logs).
func (a *authenticator) anonymousMay(need Role, logs bool) bool {
	switch a.anon {
	case anonViewer:
		return need == RoleViewer
	case anonStatus:
		return need == RoleViewer && !logs
	}
	return false
}

// Authentication outcomes besides an identity.
type authOutcome int

const (
	// authNone: no credential was offered.
	authNone authOutcome = iota
	// authOK: Identity is who made the request.
	authOK
	// authInvalid: a credential was offered and matches none.
	authInvalid
	// authUntrusted: proxy identity headers from a peer outside
	// trusted_networks.
	authUntrusted
)

// maxHeaderValue bounds what an identity header may carry; longer values
// are refused rather than cut.
const maxHeaderValue = 1024

// authenticate establishes who makes r. A token whose file cannot be read
// (removed, emptied) is revoked: it matches nothing, the others still
// work, and the log names the file (noteFile), never a token.
func (a *authenticator) authenticate(r *http.Request) (Identity, authOutcome) {
	if a.oidc != nil {
		// A session that is missing, forged or expired is no credential
		// (a page then sends the browser to sign in), not an invalid one.
		// server.auth.roles' users match the subject: the name shown
		// (the username claim) is anyone's to choose at some providers.
		if id, ses, ok := a.oidc.fromSession(r); ok {
			return a.withRoles(id, ses.Subject), authOK
		}
	}
	if a.mode == config.AuthModeProxy {
		if id, out := a.fromProxy(r); out != authNone {
			return id, out
		}
	}
	got, offered := offeredToken(r)
	if !offered {
		return Identity{Method: MethodAnonymous}, authNone
	}
	for _, t := range a.tokens {
		want, err := a.readCredential(t.file, t.key)
		if err != nil {
			continue
		}
		if got != nil && tokenEqual(got, want) {
			id := Identity{Name: t.name, Method: methodTokenPrefix + t.name}
			id.grant(t.role, t.scope)
			return id, authOK
		}
	}
	return Identity{Method: MethodAnonymous}, authInvalid
}

// metricsToken reports whether r offers the scrape token of /metrics
// (server.metrics_token_file).
func (a *authenticator) metricsToken(r *http.Request) bool {
	if a.metrics.file == "" {
		return false
	}
	got, _ := offeredToken(r)
	if got == nil {
		return false
	}
	want, err := a.readCredential(a.metrics.file, a.metrics.key)
	return err == nil && tokenEqual(got, want)
}

// readCredential reads a credential file (readToken) and reports a
// problem with it once per change: a file that cannot be read (its
// credential is revoked until it can), or one that is weak (shorter than
// config.MinServerTokenLength, readable by other users: the config
// refuses those at start; a rotated file is warned about). key is the
// Options field, for the log.
func (a *authenticator) readCredential(file, key string) ([]byte, error) {
	tok, err := readToken(file)
	switch {
	case err != nil:
		a.noteFile(file, key, "credential file unusable: what it held is refused until it is readable again", err)
	default:
		a.noteFile(file, key, "weak credential file: it is used, but the config check refuses it", config.ServerTokenProblem(file, tok))
	}
	return tok, err
}

// noteFile logs problem (nil: none) of a credential file when it differs
// from the last one logged for the file.
func (a *authenticator) noteFile(file, key, msg string, problem error) {
	text := ""
	if problem != nil {
		text = msg + ": " + problem.Error()
	}
	a.filesMu.Lock()
	last, seen := a.files[file]
	a.files[file] = text
	a.filesMu.Unlock()
	switch {
	case text == last:
	case problem != nil:
		a.logger.Warn(msg, "file", file, "option", key, "err", problem.Error())
	case seen:
		a.logger.Info("credential file usable again", "file", file, "option", key)
	}
}

// checkProxySecret reports whether r carries the proxy's shared secret
// (exactly one value, compared in constant time), and removes the header
// from r: no handler, log or record ever sees it. Outside proxy mode it
// does nothing and reports false.
func (a *authenticator) checkProxySecret(r *http.Request) bool {
	if a.secretH == "" {
		return false
	}
	vs := r.Header.Values(a.secretH)
	r.Header.Del(a.secretH)
	if len(vs) != 1 || strings.TrimSpace(vs[0]) == "" {
		return false
	}
	want, err := a.readCredential(a.secretFile, "Config.Auth.Proxy.SecretFile")
	return err == nil && tokenEqual([]byte(strings.TrimSpace(vs[0])), want)
}

type proxySecretKey struct{}

// stripProxySecret checks and removes the proxy's shared secret header
// of every request (checkProxySecret), before any route, and puts the
// verdict in the request's context for fromProxy.
func (a *authenticator) stripProxySecret(next http.Handler) http.Handler {
	if a.secretH == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := a.checkProxySecret(r)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), proxySecretKey{}, ok)))
	})
}

// fromProxy is the identity the proxy's headers name: authNone without
// them (or with them empty), authUntrusted when they come from a peer the
// config does not trust. Header values are never logged.
func (a *authenticator) fromProxy(r *http.Request) (Identity, authOutcome) {
	present := false
	for _, h := range []string{a.userH, a.emailH, a.groupsH} {
		if _, ok := r.Header[http.CanonicalHeaderKey(h)]; ok {
			present = true
		}
	}
	if !present {
		return Identity{}, authNone
	}
	if !a.trustedPeer(r.RemoteAddr) {
		a.logger.Warn("identity headers refused: the peer is not in server.auth.proxy.trusted_networks",
			"peer", peerAddr(r.RemoteAddr), "method", r.Method, "path", r.URL.Path)
		return Identity{}, authUntrusted
	}
	if ok, _ := r.Context().Value(proxySecretKey{}).(bool); !ok {
		// From the proxy's address, but not from the proxy: something
		// else running there (a Terraform provider, a local run) cannot
		// name itself anyone. The request is unauthenticated.
		a.logger.Warn("identity headers ignored: the request lacks the proxy's shared secret (server.auth.proxy.secret_header)",
			"peer", peerAddr(r.RemoteAddr), "method", r.Method, "path", r.URL.Path, "header", a.secretH)
		return Identity{}, authNone
	}
	user := strings.TrimSpace(r.Header.Get(a.userH))
	email := strings.TrimSpace(r.Header.Get(a.emailH))
	groupsH := r.Header.Get(a.groupsH)
	if len(user) > maxHeaderValue || len(email) > maxHeaderValue || len(groupsH) > 16*maxHeaderValue {
		return Identity{}, authInvalid
	}
	name := cmp.Or(user, email)
	if name == "" {
		return Identity{}, authNone
	}
	var groups []string
	for g := range strings.SplitSeq(groupsH, ",") {
		if g = strings.TrimSpace(g); g != "" {
			groups = append(groups, g)
		}
	}
	return a.withRoles(Identity{Name: name, Method: MethodProxy, Email: email, Groups: groups}, user), authOK
}

// trustedPeer reports whether the TCP peer (r.RemoteAddr, never a
// forwarded-for header) is inside trusted_networks.
func (a *authenticator) trustedPeer(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	return slices.ContainsFunc(a.trusted, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// peerAddr is the address of a peer for a log line, without its port.
func peerAddr(remote string) string {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().String()
	}
	return "unknown"
}
