package server

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/store"
)

// OpenID Connect sign-in (server.auth.mode: oidc). driftwatch is the
// relying party: GET /auth/login sends the browser to the provider with
// the authorization code flow (PKCE S256, state and nonce), GET
// /auth/callback exchanges the code, verifies the ID token (issuer,
// audience, expiry, signature, nonce), stores a session and sets the
// session cookie, POST /auth/logout (same origin, CSRF token) deletes the
// session.
//
// Sessions are kept on the server (store.SessionStore): the session
// cookie holds a random 256-bit session id, the store its SHA-256 with
// the person (issuer and subject, the name shown, the verified email, the
// groups), when it was made and last used, and when it expires. Every
// request looks its session up: a session signed out (its row deleted, by
// the person or by an admin for every session of a person), idle for
// idle_timeout or older than session_ttl is no session, whatever cookie
// the browser still holds. A person is keyed on the issuer and the
// subject ("sub"): server.auth.roles' users match the subject, the
// username claim is only the name shown, and the email claim counts only
// when the provider says email_verified: true.
//
// Both cookies are sealed with AES-256-GCM under a key derived from
// server.auth.oidc.cookie_secret_file (else a random key made at start):
// the browser can neither read nor change them, and without the file
// every session ends at a restart. The login cookie holds state, nonce,
// the PKCE verifier and where to go back to, for ten minutes. Codes,
// tokens, cookies, session ids and the client secret are never logged.
const (
	sessionCookie = "driftwatch_session"
	loginCookie   = "driftwatch_login"
	// loginTTL bounds the round trip through the provider.
	loginTTL = 10 * time.Minute
	// maxCookieValue keeps a cookie within what browsers store (4 KiB
	// with its name and attributes).
	maxCookieValue = 3800
	// discoveryRetry is how long a failed discovery is remembered before
	// the next sign-in tries again.
	discoveryRetry = 5 * time.Second
	// oidcHTTPTimeout bounds each call to the provider.
	oidcHTTPTimeout = 15 * time.Second
	// sessionTouchEvery is how often a session's last use is written at
	// most (less for a shorter idle timeout): not a write per request.
	sessionTouchEvery = time.Minute
	// maxSessionGroups bounds the groups a session keeps (JSON bytes):
	// beyond it, only those server.auth.roles names.
	maxSessionGroups = 16 << 10
	// sessionPruneEvery is how often Serve deletes the sessions ended
	// meanwhile (each sign-in deletes them too).
	sessionPruneEvery = 10 * time.Minute
)

// oidcAuth is oidc mode's relying party.
type oidcAuth struct {
	cfg  config.AuthOIDC
	aead cipher.AEAD
	// ttl ends a session whatever its use, idle one unused that long.
	ttl, idle time.Duration
	// sessions keeps the sessions (setSessions).
	sessions store.SessionStore
	secure   bool
	// prefix is the external URL's path (routes are served below it);
	// cookiePath is prefix or "/".
	prefix, cookiePath string
	client             *http.Client
	logger             *slog.Logger
	// now is the clock of sessions and login cookies (ID tokens are
	// checked against the real clock: the provider's).
	now func() time.Time
	// retryAfter is how long a failed discovery stands (tests shorten it).
	retryAfter time.Duration

	mu       sync.Mutex
	provider *oidc.Provider
	lastErr  error
	lastTry  time.Time
}

// newOIDC builds the relying party of c. It does not reach the provider:
// discovery happens at the first sign-in (and is retried), so a provider
// that is down does not stop the daemon.
func newOIDC(c config.Server, logger *slog.Logger) (*oidcAuth, error) {
	o := c.Auth.OIDC
	switch {
	case o.IssuerURL == "":
		return nil, errors.New("Options.Config.Auth.OIDC.IssuerURL is required in oidc mode")
	case o.ClientID == "":
		return nil, errors.New("Options.Config.Auth.OIDC.ClientID is required in oidc mode")
	case o.ClientSecretFile == "":
		return nil, errors.New("Options.Config.Auth.OIDC.ClientSecretFile is required in oidc mode")
	}
	if _, err := readToken(o.ClientSecretFile); err != nil {
		return nil, fmt.Errorf("Options.Config.Auth.OIDC.ClientSecretFile: %w", err)
	}
	a := &oidcAuth{cfg: o, ttl: time.Duration(o.SessionTTL), client: &http.Client{Timeout: oidcHTTPTimeout}, logger: logger, now: time.Now, retryAfter: discoveryRetry}
	if a.ttl <= 0 {
		a.ttl = config.DefaultOIDCSessionTTL
	}
	if a.idle = time.Duration(o.IdleTimeout); a.idle <= 0 {
		a.idle = min(config.DefaultOIDCIdleTimeout, a.ttl)
	}
	if a.idle > a.ttl {
		return nil, fmt.Errorf("Options.Config.Auth.OIDC.IdleTimeout %s is longer than SessionTTL %s", a.idle, a.ttl)
	}
	if len(a.cfg.Scopes) == 0 {
		a.cfg.Scopes = config.DefaultOIDCScopes
	}
	if a.cfg.GroupsClaim == "" {
		a.cfg.GroupsClaim = config.DefaultOIDCGroupsClaim
	}
	if a.cfg.UsernameClaim == "" {
		a.cfg.UsernameClaim = config.DefaultOIDCUsernameClaim
	}
	site := c.ExternalURL
	if c.ExternalURL != "" {
		u, err := url.Parse(c.ExternalURL)
		if err != nil {
			return nil, fmt.Errorf("Options.Config.ExternalURL %q is not a URL", c.ExternalURL)
		}
		a.prefix = strings.TrimSuffix(u.EscapedPath(), "/")
		if a.cfg.RedirectURL == "" {
			a.cfg.RedirectURL = strings.TrimSuffix(c.ExternalURL, "/") + config.OIDCCallbackPath
		}
	} else {
		site = a.cfg.RedirectURL
	}
	if a.cfg.RedirectURL == "" {
		return nil, errors.New("Options.Config.Auth.OIDC.RedirectURL is required without Options.Config.ExternalURL")
	}
	a.cookiePath = a.prefix
	if a.cookiePath == "" {
		a.cookiePath = "/"
	}
	su, err := url.Parse(site)
	if err != nil || (su.Scheme != "https" && su.Scheme != "http") {
		return nil, fmt.Errorf("oidc mode: %q is not an http(s) URL", site)
	}
	// Secure cookies, except on a loopback http URL (tests, a laptop):
	// there a Secure cookie would never come back and sign-in would loop.
	switch {
	case su.Scheme == "https":
		a.secure = true
	case config.IsLoopbackHost(su.Hostname()):
	default:
		return nil, fmt.Errorf("oidc mode needs an https external URL (or http on a loopback address): %q", site)
	}
	secret := make([]byte, 32)
	if o.CookieSecretFile != "" {
		if secret, err = readToken(o.CookieSecretFile); err != nil {
			return nil, fmt.Errorf("Options.Config.Auth.OIDC.CookieSecretFile: %w", err)
		}
		if len(secret) < config.MinOIDCCookieSecret {
			return nil, fmt.Errorf("Options.Config.Auth.OIDC.CookieSecretFile holds fewer than %d bytes", config.MinOIDCCookieSecret)
		}
	} else if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	if a.aead, err = sealer(secret); err != nil {
		return nil, err
	}
	return a, nil
}

// sealer is the AEAD of cookies: AES-256-GCM under a key derived from
// secret (so a secret of any length, and one shared with nothing else).
func sealer(secret []byte) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("driftwatch oidc cookie key v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return cipher.NewGCM(block)
}

// seal encodes v for the cookie named name (the name is authenticated
// too: one cookie cannot stand in for another).
func (a *oidcAuth) seal(name string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := base64.RawURLEncoding.EncodeToString(a.aead.Seal(nonce, nonce, b, []byte(name)))
	if len(out) > maxCookieValue {
		return "", fmt.Errorf("the %s cookie would be %d bytes, more than a browser keeps", name, len(out))
	}
	return out, nil
}

// open decodes a cookie seal made; false for anything else.
func (a *oidcAuth) open(name, value string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(b) < a.aead.NonceSize() {
		return false
	}
	plain, err := a.aead.Open(nil, b[:a.aead.NonceSize()], b[a.aead.NonceSize():], []byte(name))
	if err != nil {
		return false
	}
	return json.Unmarshal(plain, v) == nil
}

// session is the person a verified ID token names (sessionFrom), as a
// session row keeps them.
type session struct {
	Subject string
	Name    string
	Email   string
	Groups  []string
}

// sessionRef is what the session cookie holds: the session id (its
// SHA-256 is the row's key) and the session's expiry.
type sessionRef struct {
	ID     string `json:"sid"`
	Expiry int64  `json:"exp"`
}

// sessionHash is the key of session id's row.
func sessionHash(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// setSessions gives a the store of its sessions: sessions, else st if it
// is a store.SessionStore.
func (a *oidcAuth) setSessions(sessions store.SessionStore, st store.Store) error {
	if sessions == nil {
		sessions, _ = st.(store.SessionStore)
	}
	if sessions == nil {
		return errors.New("oidc mode keeps its sessions in the store: Options.Sessions is required (or an Options.Store that is a store.SessionStore)")
	}
	a.sessions = sessions
	return nil
}

// loginState is what the login cookie holds between /auth/login and
// /auth/callback.
type loginState struct {
	State    string `json:"state"`
	Nonce    string `json:"nonce"`
	Verifier string `json:"verifier"`
	Next     string `json:"next"`
	Expiry   int64  `json:"exp"`
}

// fromSession is the identity of the request's session and its row: ok
// false without a session cookie, or with one that is forged, from
// another key (a restart without cookie_secret_file), signed out, of
// another issuer, idle for idle_timeout or past session_ttl (by a.now).
// An ended session's row is deleted at once; a used one's last use is
// written at most every sessionTouchEvery. A store that fails is no
// session (logged): sign-in fails closed.
func (a *oidcAuth) fromSession(r *http.Request) (Identity, store.Session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return Identity{}, store.Session{}, false
	}
	var ref sessionRef
	if !a.open(sessionCookie, c.Value, &ref) || ref.ID == "" {
		return Identity{}, store.Session{}, false
	}
	ctx, h, now := r.Context(), sessionHash(ref.ID), a.now()
	ses, err := a.sessions.Session(ctx, h)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			a.logger.Error("oidc session lookup failed", "err", err)
		}
		return Identity{}, store.Session{}, false
	}
	if !now.Before(ses.ExpiresAt) || !now.Before(ses.LastSeenAt.Add(a.idle)) || ses.Issuer != a.cfg.IssuerURL {
		if err := a.sessions.DeleteSession(ctx, h); err != nil {
			a.logger.Warn("oidc session: delete an ended session", "err", err)
		}
		return Identity{}, store.Session{}, false
	}
	if now.Sub(ses.LastSeenAt) >= min(sessionTouchEvery, a.idle/4) {
		if err := a.sessions.TouchSession(ctx, h, now); err != nil {
			a.logger.Warn("oidc session: record its use", "err", err)
		} else {
			ses.LastSeenAt = now
		}
	}
	id := Identity{Name: ses.Name, Method: MethodOIDC, Email: ses.Email, Groups: ses.Groups,
		session: base64.RawURLEncoding.EncodeToString(h)}
	return id, ses, true
}

// pruneSessions deletes the sessions ended by now: expired, or idle.
func (a *oidcAuth) pruneSessions(ctx context.Context) {
	now := a.now()
	n, err := a.sessions.PruneSessions(ctx, now, now.Add(-a.idle))
	switch {
	case err != nil && ctx.Err() == nil:
		a.logger.Warn("oidc sessions: prune", "err", err)
	case n > 0:
		a.logger.Debug("oidc sessions: pruned ended sessions", "sessions", n)
	}
}

// pruneLoop prunes sessions every sessionPruneEvery until ctx ends.
func (a *oidcAuth) pruneLoop(ctx context.Context) {
	t := time.NewTicker(sessionPruneEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.pruneSessions(ctx)
		}
	}
}

// discover returns the provider, fetching its discovery document on first
// use; a failure is remembered for discoveryRetry, then tried again.
func (a *oidcAuth) discover(ctx context.Context) (*oidc.Provider, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.provider != nil {
		return a.provider, nil
	}
	if a.lastErr != nil && time.Since(a.lastTry) < a.retryAfter {
		return nil, a.lastErr
	}
	ctx, cancel := context.WithTimeout(ctx, oidcHTTPTimeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, a.client), a.cfg.IssuerURL)
	a.lastTry = time.Now()
	if err != nil {
		a.lastErr = fmt.Errorf("discover the OpenID Connect provider %s: %w", a.cfg.IssuerURL, err)
		return nil, a.lastErr
	}
	a.provider, a.lastErr = p, nil
	return p, nil
}

// oauth2Config is the client's configuration; the client secret is read
// from its file each time (rotation needs no restart).
func (a *oidcAuth) oauth2Config(p *oidc.Provider) (*oauth2.Config, error) {
	secret, err := readToken(a.cfg.ClientSecretFile)
	if err != nil {
		return nil, fmt.Errorf("client secret: %w", err)
	}
	return &oauth2.Config{
		ClientID:     a.cfg.ClientID,
		ClientSecret: string(secret),
		Endpoint:     p.Endpoint(),
		RedirectURL:  a.cfg.RedirectURL,
		Scopes:       a.cfg.Scopes,
	}, nil
}

func (a *oidcAuth) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: a.cookiePath,
		MaxAge: int(maxAge / time.Second), HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteLaxMode,
	})
}

func (a *oidcAuth) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: a.cookiePath, MaxAge: -1, HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteLaxMode,
	})
}

// safeNext is where a sign-in may go back to: a path on this driftwatch
// (below the external URL's prefix), never another site. Anything else is
// "/".
func safeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\x00\r\n\t") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

// loginURL is where a browser without a session is sent to sign in
// before it reads r's page.
func (a *oidcAuth) loginURL(r *http.Request) string {
	return a.prefix + "/auth/login?next=" + url.QueryEscape(r.URL.RequestURI())
}

// oidcRoutes mounts the sign-in routes of oidc mode (none in other
// modes). They are public: the login and callback establish the session
// the guard would ask for; logout checks its session's CSRF token itself.
func (s *Server) oidcRoutes(mux *router) {
	if s.auth.oidc == nil {
		return
	}
	mux.public("GET /auth/login", http.HandlerFunc(s.oidcLogin))
	mux.public("GET /auth/callback", http.HandlerFunc(s.oidcCallback))
	mux.public("POST /auth/logout", http.HandlerFunc(s.oidcLogout))
	s.sessionRoutes(mux)
}

func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// oidcLogin serves GET /auth/login?next=PATH: it sends the browser to the
// provider.
func (s *Server) oidcLogin(w http.ResponseWriter, r *http.Request) {
	a := s.auth.oidc
	p, err := a.discover(r.Context())
	if err != nil {
		s.o.Logger.Error("oidc sign-in unavailable", "err", err)
		s.authMessage(w, r, http.StatusServiceUnavailable, "Sign-in unavailable",
			"the sign-in provider cannot be reached; try again in a moment (see the driftwatch log)")
		return
	}
	oc, err := a.oauth2Config(p)
	if err != nil {
		s.o.Logger.Error("oidc sign-in unavailable", "err", err)
		s.authMessage(w, r, http.StatusInternalServerError, "Sign-in unavailable", "the client secret cannot be read (see the driftwatch log)")
		return
	}
	st := loginState{Verifier: oauth2.GenerateVerifier(), Next: safeNext(r.URL.Query().Get("next")), Expiry: a.now().Add(loginTTL).Unix()}
	if st.State, err = randomString(); err == nil {
		st.Nonce, err = randomString()
	}
	var v string
	if err == nil {
		v, err = a.seal(loginCookie, st)
	}
	if err != nil {
		s.o.Logger.Error("oidc sign-in failed", "err", err)
		s.authMessage(w, r, http.StatusInternalServerError, "Sign-in failed", "see the driftwatch log")
		return
	}
	a.setCookie(w, loginCookie, v, loginTTL)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, oc.AuthCodeURL(st.State, oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.Verifier)), http.StatusFound)
}

// oidcCallback serves GET /auth/callback: the provider's answer.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	a := s.auth.oidc
	w.Header().Set("Cache-Control", "no-store")
	fail := func(code int, reason, msg string) {
		s.o.Logger.Warn("oidc sign-in refused", "reason", reason)
		a.clearCookie(w, loginCookie)
		s.authMessage(w, r, code, "Sign-in failed", msg+"; sign in again at "+a.prefix+"/auth/login")
	}
	var st loginState
	c, err := r.Cookie(loginCookie)
	if err != nil || !a.open(loginCookie, c.Value, &st) || !a.now().Before(time.Unix(st.Expiry, 0)) {
		fail(http.StatusBadRequest, "no valid login cookie", "this sign-in was not started here, or took longer than 10 minutes")
		return
	}
	q := r.URL.Query()
	if !hmac.Equal([]byte(q.Get("state")), []byte(st.State)) {
		fail(http.StatusBadRequest, "state mismatch", "this sign-in's state does not match the one this browser started")
		return
	}
	if e := q.Get("error"); e != "" {
		// The provider's error code is a short token (access_denied…);
		// its description is not logged.
		if len(e) > 64 || strings.ContainsFunc(e, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
			e = "invalid"
		}
		fail(http.StatusForbidden, "provider error "+e, "the sign-in provider refused: "+e)
		return
	}
	code := q.Get("code")
	if code == "" {
		fail(http.StatusBadRequest, "no code", "the sign-in provider sent no authorization code")
		return
	}
	p, err := a.discover(r.Context())
	if err != nil {
		s.o.Logger.Error("oidc sign-in unavailable", "err", err)
		s.authMessage(w, r, http.StatusServiceUnavailable, "Sign-in unavailable", "the sign-in provider cannot be reached (see the driftwatch log)")
		return
	}
	oc, err := a.oauth2Config(p)
	if err != nil {
		s.o.Logger.Error("oidc sign-in unavailable", "err", err)
		s.authMessage(w, r, http.StatusInternalServerError, "Sign-in unavailable", "the client secret cannot be read (see the driftwatch log)")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), oauth2.HTTPClient, a.client), oidcHTTPTimeout)
	defer cancel()
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		// Never err itself: the provider's answer may quote the code.
		reason := "token exchange failed"
		if re := (*oauth2.RetrieveError)(nil); errors.As(err, &re) {
			reason = fmt.Sprintf("token exchange failed: status %d, error %q", re.Response.StatusCode, re.ErrorCode)
		} else if errors.Is(err, context.DeadlineExceeded) {
			reason = "token exchange timed out"
		}
		fail(http.StatusBadGateway, reason, "the sign-in provider did not accept the authorization code")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		fail(http.StatusBadGateway, "no id_token in the token response", "the sign-in provider sent no ID token")
		return
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: a.cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		fail(http.StatusForbidden, "id token rejected: "+verifyReason(err), "the ID token is not valid for this driftwatch")
		return
	}
	if !hmac.Equal([]byte(idt.Nonce), []byte(st.Nonce)) {
		fail(http.StatusForbidden, "id token nonce mismatch", "the ID token was not issued for this sign-in")
		return
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		fail(http.StatusBadGateway, "id token claims unreadable", "the ID token's claims cannot be read")
		return
	}
	sess := a.sessionFrom(idt.Subject, claims)
	if groupsSize(sess.Groups) > maxSessionGroups {
		// Too many groups to keep: those server.auth.roles names.
		sess.Groups = slices.DeleteFunc(sess.Groups, func(g string) bool { return !s.auth.namesGroup(g) })
		s.o.Logger.Warn("oidc sign-in: too many groups to keep in the session, keeping those server.auth.roles names",
			"user", sess.Name, "kept", len(sess.Groups))
	}
	sid, err := randomString()
	if err != nil {
		fail(http.StatusInternalServerError, "session id: "+err.Error(), "the session cannot be stored")
		return
	}
	now := a.now()
	// Sessions that ended meanwhile go at each sign-in (and in Serve's
	// loop): the table holds little more than the live ones.
	a.pruneSessions(ctx)
	if err := a.sessions.CreateSession(ctx, store.Session{
		IDHash: sessionHash(sid), Issuer: a.cfg.IssuerURL, Subject: sess.Subject,
		Name: sess.Name, Email: sess.Email, Groups: sess.Groups,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(a.ttl),
	}); err != nil {
		s.o.Logger.Error("oidc sign-in: store the session", "user", sess.Name, "err", err)
		a.clearCookie(w, loginCookie)
		s.authMessage(w, r, http.StatusInternalServerError, "Sign-in failed", "the session cannot be stored (see the driftwatch log)")
		return
	}
	v, err := a.seal(sessionCookie, sessionRef{ID: sid, Expiry: now.Add(a.ttl).Unix()})
	if err != nil {
		fail(http.StatusInternalServerError, "session cookie: "+err.Error(), "the session cannot be stored")
		return
	}
	a.clearCookie(w, loginCookie)
	a.setCookie(w, sessionCookie, v, a.ttl)
	id := s.auth.withRoles(Identity{Name: sess.Name, Method: MethodOIDC, Email: sess.Email, Groups: sess.Groups}, sess.Subject)
	s.o.Logger.Info("oidc sign-in", "user", sess.Name, "subject", sess.Subject, "roles", joinRoles(id.Roles))
	http.Redirect(w, r, a.prefix+st.Next, http.StatusSeeOther)
}

// groupsSize is about the bytes groups take in a session row.
func groupsSize(groups []string) int {
	n := 0
	for _, g := range groups {
		n += len(g) + 3
	}
	return n
}

// verifyReason words an ID token verification error for the log without
// the token: go-oidc's errors name claims and issuers, never the token,
// but are cut to a line anyway.
func verifyReason(err error) string {
	var exp *oidc.TokenExpiredError
	if errors.As(err, &exp) {
		return "expired"
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

// sessionFrom is the person of a verified ID token's claims: keyed on
// the subject; the name shown from username_claim (else the subject); the
// email only when the provider says email_verified: true (an unverified
// email names no one: anyone may type it at some providers); the groups
// from groups_claim (a list, or one string).
func (a *oidcAuth) sessionFrom(sub string, claims map[string]any) session {
	s := session{Subject: sub}
	if v, ok := claims[a.cfg.UsernameClaim].(string); ok {
		s.Name = strings.TrimSpace(v)
	}
	if s.Name == "" {
		s.Name = sub
	}
	if v, ok := claims["email"].(string); ok {
		if verified, ok := claims["email_verified"].(bool); ok && verified {
			s.Email = strings.TrimSpace(v)
		}
	}
	switch g := claims[a.cfg.GroupsClaim].(type) {
	case []any:
		for _, x := range g {
			if x, ok := x.(string); ok && strings.TrimSpace(x) != "" {
				s.Groups = append(s.Groups, strings.TrimSpace(x))
			}
		}
	case string:
		if strings.TrimSpace(g) != "" {
			s.Groups = []string{strings.TrimSpace(g)}
		}
	}
	return s
}

// oidcLogout serves POST /auth/logout: it ends the session, deleting its
// row (so the cookie signs no one in any more), and says so. It needs a
// request from driftwatch's own pages: same origin always (a cross-site
// POST, which a SameSite=Lax cookie does not come with, must not clear
// the cookie either), and the session's CSRF token when there is a
// session. The provider's own session is left alone.
func (s *Server) oidcLogout(w http.ResponseWriter, r *http.Request) {
	a := s.auth.oidc
	if !limitBody(w, r, maxBody) {
		return
	}
	if !s.sameOrigin(r) {
		s.o.Logger.Warn("cross-site sign-out refused", "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		s.refuse(w, r, true, http.StatusForbidden, "Refused",
			"cross-site request refused: sign out from driftwatch's own pages")
		return
	}
	if id, ses, ok := a.fromSession(r); ok {
		if !s.checkCSRF(w, r, id, true) {
			return
		}
		if err := a.sessions.DeleteSession(r.Context(), ses.IDHash); err != nil {
			s.o.Logger.Error("oidc sign-out failed", "user", id.Name, "err", err)
			w.Header().Set("Cache-Control", "no-store")
			s.authMessage(w, r, http.StatusInternalServerError, "Sign-out failed",
				"the session cannot be ended (see the driftwatch log); you are still signed in")
			return
		}
		s.o.Logger.Info("oidc sign-out", "user", id.Name, "subject", ses.Subject)
	}
	a.clearCookie(w, sessionCookie)
	w.Header().Set("Cache-Control", "no-store")
	s.authMessage(w, r, http.StatusOK, "Signed out", "you are signed out of driftwatch; sign in again at "+a.prefix+"/auth/login")
}

// authMessage answers a sign-in route with a page. msg is a sentence
// without its capital and full stop.
func (s *Server) authMessage(w http.ResponseWriter, r *http.Request, code int, heading, msg string) {
	s.render(w, r, code, s.pages.message, messagePageData{
		page:    s.newPage(r, "driftwatch: "+strings.ToLower(heading), false),
		Heading: heading,
		Message: strings.ToUpper(msg[:1]) + msg[1:] + ".",
	})
}
