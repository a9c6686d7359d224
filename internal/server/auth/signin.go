package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/store"
)

// randomString is 32 random bytes, base64url: a session id, a state, a
// nonce.
func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Login serves GET /auth/login?next=PATH (oidc mode): it sends the
// browser to the provider.
func (a *Authenticator) Login(w http.ResponseWriter, r *http.Request) {
	o := a.oidc
	p, err := o.discover(r.Context())
	if err != nil {
		a.logger.Error("oidc sign-in unavailable", "err", err)
		a.message(w, r, http.StatusServiceUnavailable, "Sign-in unavailable",
			"the sign-in provider cannot be reached; try again in a moment (see the driftwatch log)")
		return
	}
	oc, err := o.oauth2Config(p)
	if err != nil {
		a.logger.Error("oidc sign-in unavailable", "err", err)
		a.message(w, r, http.StatusInternalServerError, "Sign-in unavailable", "the client secret cannot be read (see the driftwatch log)")
		return
	}
	st := loginState{Verifier: oauth2.GenerateVerifier(), Next: safeNext(r.URL.Query().Get("next")), Expiry: o.Now().Add(loginTTL).Unix()}
	if st.State, err = randomString(); err == nil {
		st.Nonce, err = randomString()
	}
	var v string
	if err == nil {
		v, err = o.Seal(LoginCookie, st)
	}
	if err != nil {
		a.logger.Error("oidc sign-in failed", "err", err)
		a.message(w, r, http.StatusInternalServerError, "Sign-in failed", "see the driftwatch log")
		return
	}
	o.setCookie(w, LoginCookie, v, loginTTL)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, oc.AuthCodeURL(st.State, oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.Verifier)), http.StatusFound)
}

// Callback serves GET /auth/callback (oidc mode): the provider's answer.
func (a *Authenticator) Callback(w http.ResponseWriter, r *http.Request) {
	o := a.oidc
	w.Header().Set("Cache-Control", "no-store")
	fail := func(code int, reason, msg string) {
		a.logger.Warn("oidc sign-in refused", "reason", reason)
		o.clearCookie(w, LoginCookie)
		a.message(w, r, code, "Sign-in failed", msg+"; sign in again at "+o.prefix+"/auth/login")
	}
	var st loginState
	c, err := r.Cookie(LoginCookie)
	if err != nil || !o.Open(LoginCookie, c.Value, &st) || !o.Now().Before(time.Unix(st.Expiry, 0)) {
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
	p, err := o.discover(r.Context())
	if err != nil {
		a.logger.Error("oidc sign-in unavailable", "err", err)
		a.message(w, r, http.StatusServiceUnavailable, "Sign-in unavailable", "the sign-in provider cannot be reached (see the driftwatch log)")
		return
	}
	oc, err := o.oauth2Config(p)
	if err != nil {
		a.logger.Error("oidc sign-in unavailable", "err", err)
		a.message(w, r, http.StatusInternalServerError, "Sign-in unavailable", "the client secret cannot be read (see the driftwatch log)")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), oauth2.HTTPClient, o.client), oidcHTTPTimeout)
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
	idt, err := p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID}).Verify(ctx, raw)
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
	sess := o.sessionFrom(idt.Subject, claims)
	if groupsSize(sess.Groups) > maxSessionGroups {
		// Too many groups to keep: those server.auth.roles names.
		sess.Groups = slices.DeleteFunc(sess.Groups, func(g string) bool { return !a.namesGroup(g) })
		a.logger.Warn("oidc sign-in: too many groups to keep in the session, keeping those server.auth.roles names",
			"user", sess.Name, "kept", len(sess.Groups))
	}
	sid, err := randomString()
	if err != nil {
		fail(http.StatusInternalServerError, "session id: "+err.Error(), "the session cannot be stored")
		return
	}
	now := o.Now()
	// Sessions that ended meanwhile go at each sign-in (and in Serve's
	// loop): the table holds little more than the live ones.
	o.PruneSessions(ctx)
	if err := o.sessions.CreateSession(ctx, store.Session{
		IDHash: sessionHash(sid), Issuer: o.cfg.IssuerURL, Subject: sess.Subject,
		Name: sess.Name, Email: sess.Email, Groups: sess.Groups,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(o.ttl),
	}); err != nil {
		a.logger.Error("oidc sign-in: store the session", "user", sess.Name, "err", err)
		o.clearCookie(w, LoginCookie)
		a.message(w, r, http.StatusInternalServerError, "Sign-in failed", "the session cannot be stored (see the driftwatch log)")
		return
	}
	v, err := o.Seal(SessionCookie, SessionRef{ID: sid, Expiry: now.Add(o.ttl).Unix()})
	if err != nil {
		fail(http.StatusInternalServerError, "session cookie: "+err.Error(), "the session cannot be stored")
		return
	}
	o.clearCookie(w, LoginCookie)
	o.setCookie(w, SessionCookie, v, o.ttl)
	id := a.withRoles(Identity{Name: sess.Name, Method: MethodOIDC, Email: sess.Email, Groups: sess.Groups}, sess.Subject)
	a.logger.Info("oidc sign-in", "user", sess.Name, "subject", sess.Subject, "roles", joinRoles(id.Roles))
	http.Redirect(w, r, o.prefix+st.Next, http.StatusSeeOther)
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
func (a *OIDC) sessionFrom(sub string, claims map[string]any) session {
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

// Logout serves POST /auth/logout (oidc mode): it ends the session, deleting its
// row (so the cookie signs no one in any more), and says so. It needs a
// request from driftwatch's own pages: same origin always (a cross-site
// POST, which a SameSite=Lax cookie does not come with, must not clear
// the cookie either), and the session's CSRF token when there is a
// session. The provider's own session is left alone.
func (a *Authenticator) Logout(w http.ResponseWriter, r *http.Request) {
	o := a.oidc
	if !respond.LimitBody(w, r, respond.MaxBody) {
		return
	}
	if !a.sameOrigin(r) {
		a.logger.Warn("cross-site sign-out refused", "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		a.message(w, r, http.StatusForbidden, "Refused",
			"cross-site request refused: sign out from driftwatch's own pages")
		return
	}
	if id, ses, ok := o.fromSession(r); ok {
		if ref := a.CheckCSRF(r, id); ref != nil {
			a.message(w, r, ref.Code, ref.Heading, ref.Message)
			return
		}
		if err := o.sessions.DeleteSession(r.Context(), ses.IDHash); err != nil {
			a.logger.Error("oidc sign-out failed", "user", id.Name, "err", err)
			w.Header().Set("Cache-Control", "no-store")
			a.message(w, r, http.StatusInternalServerError, "Sign-out failed",
				"the session cannot be ended (see the driftwatch log); you are still signed in")
			return
		}
		a.logger.Info("oidc sign-out", "user", id.Name, "subject", ses.Subject)
	}
	o.clearCookie(w, SessionCookie)
	w.Header().Set("Cache-Control", "no-store")
	a.message(w, r, http.StatusOK, "Signed out", "you are signed out of driftwatch; sign in again at "+o.prefix+"/auth/login")
}

// authMessage answers a sign-in route with a page. msg is a sentence
