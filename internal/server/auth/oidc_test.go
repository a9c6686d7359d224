package auth

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

func TestOIDCSessionFromClaims(t *testing.T) {
	a := &OIDC{cfg: config.AuthOIDC{UsernameClaim: "preferred_username", GroupsClaim: "roles"}, ttl: time.Hour, Now: time.Now}
	// Issue 28: an email the provider does not say is verified names no
	// one (role mapping by email would take anyone's word for it).
	for name, c := range map[string]struct {
		claims map[string]any
		want   session
	}{
		"all": {map[string]any{"preferred_username": "jane", "email": "j@x", "email_verified": true, "roles": []any{"a", " b ", 3, ""}},
			session{Subject: "s", Name: "jane", Email: "j@x", Groups: []string{"a", "b"}}},
		"subject when no user name":            {map[string]any{"email": "j@x", "email_verified": true}, session{Subject: "s", Name: "s", Email: "j@x"}},
		"unverified email ignored":             {map[string]any{"email": "j@x", "email_verified": false}, session{Subject: "s", Name: "s"}},
		"email without email_verified ignored": {map[string]any{"email": "j@x"}, session{Subject: "s", Name: "s"}},
		"email_verified not a bool":            {map[string]any{"email": "j@x", "email_verified": "true"}, session{Subject: "s", Name: "s"}},
		"one group as a string":                {map[string]any{"roles": "ops"}, session{Subject: "s", Name: "s", Groups: []string{"ops"}}},
		"user name not a string":               {map[string]any{"preferred_username": 7}, session{Subject: "s", Name: "s"}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, c.want, a.sessionFrom("s", c.claims))
		})
	}
}

// A sign-in goes back to a path on driftwatch only: never another site.
func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/workspaces/a?x=1":     "/workspaces/a?x=1",
		"/":                     "/",
		"":                      "/",
		"//evil.example/":       "/",
		"/\\evil.example":       "/",
		"https://evil.example/": "/",
		"evil.example":          "/",
		"/%0d%0aSet-Cookie:x":   "/%0d%0aSet-Cookie:x", // escaped: a path
		"/\r\nSet-Cookie: x":    "/",
		"javascript:alert(1)":   "/",
		"/x\tbad":               "/",
	} {
		require.Equal(t, want, safeNext(in), "%q", in)
	}
}

// A cookie secret file makes sessions survive a restart; without it
// they end.
func TestOIDCCookieSecret(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s"), 0o600))
	key := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(key, []byte(strings.Repeat("k", 40)), 0o600))
	withKey := config.Server{ExternalURL: "https://d.example.com/dw/", Auth: config.Auth{Mode: config.AuthModeOIDC, OIDC: config.AuthOIDC{
		IssuerURL: "https://login.example.com", ClientID: "dw", ClientSecretFile: secret, CookieSecretFile: key,
	}}}
	logger := slog.New(slog.DiscardHandler)
	a1, err := newOIDC(withKey, logger)
	require.NoError(t, err)
	a2, err := newOIDC(withKey, logger)
	require.NoError(t, err)
	require.Equal(t, "/dw", a1.cookiePath)
	require.True(t, a1.secure)
	require.Equal(t, "https://d.example.com/dw/auth/callback", a1.cfg.RedirectURL)
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	now := time.Now()
	require.NoError(t, st.CreateSession(t.Context(), store.Session{IDHash: sessionHash("sid"), Issuer: "https://login.example.com",
		Subject: "42", Name: "jane", CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}))
	v := mustSeal(t, a1, SessionCookie, SessionRef{ID: "sid", Expiry: now.Add(time.Hour).Unix()})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(&http.Cookie{Name: SessionCookie, Value: v})
	require.NoError(t, a2.setSessions(nil, st), "the store is a SessionStore")
	id, ses, ok := a2.fromSession(r)
	require.True(t, ok, "the same key after a restart")
	require.Equal(t, "jane", id.Name)
	require.Equal(t, "42", ses.Subject)
	random := withKey
	random.Auth.OIDC.CookieSecretFile = ""
	a3, err := newOIDC(random, logger)
	require.NoError(t, err)
	a3.sessions = st
	_, _, ok = a3.fromSession(r)
	require.False(t, ok, "a random key: sessions end at restart")
}

func mustSeal(t *testing.T, a *OIDC, name string, v any) string {
	s, err := a.Seal(name, v)
	require.NoError(t, err)
	return s
}
