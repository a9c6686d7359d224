package auth

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
	SessionCookie = "driftwatch_session"
	LoginCookie   = "driftwatch_login"
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

// OIDC is oidc mode's relying party.
type OIDC struct {
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
	// Now is the clock of sessions and login cookies (default time.Now;
	// ID tokens are checked against the real clock: the provider's).
	Now func() time.Time
	// RetryAfter is how long a failed discovery stands before the next
	// sign-in tries again (default 5 s).
	RetryAfter time.Duration

	mu       sync.Mutex
	provider *oidc.Provider
	lastErr  error
	lastTry  time.Time
}

// newOIDC builds the relying party of c. It does not reach the provider:
// discovery happens at the first sign-in (and is retried), so a provider
// that is down does not stop the daemon.
func newOIDC(c config.Server, logger *slog.Logger) (*OIDC, error) {
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
	a := &OIDC{cfg: o, ttl: time.Duration(o.SessionTTL), client: &http.Client{Timeout: oidcHTTPTimeout}, logger: logger, Now: time.Now, RetryAfter: discoveryRetry}
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

// Seal encodes v for the cookie named name (the name is authenticated
// too: one cookie cannot stand in for another).
func (a *OIDC) Seal(name string, v any) (string, error) {
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

// Open decodes a cookie Seal made; false for anything else.
func (a *OIDC) Open(name, value string, v any) bool {
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

// SessionRef is what the session cookie holds, sealed: the session id
// (its SHA-256 is the row's key) and the session's expiry.
type SessionRef struct {
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
func (a *OIDC) setSessions(sessions store.SessionStore, st store.Store) error {
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
func (a *OIDC) fromSession(r *http.Request) (Identity, store.Session, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return Identity{}, store.Session{}, false
	}
	var ref SessionRef
	if !a.Open(SessionCookie, c.Value, &ref) || ref.ID == "" {
		return Identity{}, store.Session{}, false
	}
	ctx, h, now := r.Context(), sessionHash(ref.ID), a.Now()
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

// PruneSessions deletes the sessions ended by now: expired, or idle.
func (a *OIDC) PruneSessions(ctx context.Context) {
	now := a.Now()
	n, err := a.sessions.PruneSessions(ctx, now, now.Add(-a.idle))
	switch {
	case err != nil && ctx.Err() == nil:
		a.logger.Warn("oidc sessions: prune", "err", err)
	case n > 0:
		a.logger.Debug("oidc sessions: pruned ended sessions", "sessions", n)
	}
}

// PruneLoop prunes sessions every sessionPruneEvery until ctx ends (the
// server runs it while it serves).
func (a *OIDC) PruneLoop(ctx context.Context) {
	t := time.NewTicker(sessionPruneEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.PruneSessions(ctx)
		}
	}
}

// discover returns the provider, fetching its discovery document on first
// use; a failure is remembered for discoveryRetry, then tried again.
func (a *OIDC) discover(ctx context.Context) (*oidc.Provider, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.provider != nil {
		return a.provider, nil
	}
	if a.lastErr != nil && time.Since(a.lastTry) < a.RetryAfter {
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
func (a *OIDC) oauth2Config(p *oidc.Provider) (*oauth2.Config, error) {
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

func (a *OIDC) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: a.cookiePath,
		MaxAge: int(maxAge / time.Second), HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteLaxMode,
	})
}

func (a *OIDC) clearCookie(w http.ResponseWriter, name string) {
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

// LoginURL is where a browser without a session is sent to sign in
// before it reads r's page.
func (a *OIDC) LoginURL(r *http.Request) string {
	return a.prefix + "/auth/login?next=" + url.QueryEscape(r.URL.RequestURI())
}
