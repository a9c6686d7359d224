package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// server.auth.oidc.idle_timeout: a session unused this long ends, at most
// session_ttl; its default is an hour, or session_ttl if shorter.
func TestAuthOIDCIdleTimeout(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client-secret"), []byte("CANARY-secret\n"), 0o600))
	file := filepath.Join(dir, "driftwatch.yaml")
	base := "server:\n  external_url: https://drift.example.com\n  auth:\n    mode: oidc\n    oidc:\n" +
		"      issuer_url: https://login.example.com\n      client_id: dw\n      client_secret_file: client-secret\n"

	for name, c := range map[string]struct {
		yaml     string
		ttl      time.Duration
		idle     time.Duration
		wantErrs string
	}{
		"defaults":              {yaml: base, ttl: 12 * time.Hour, idle: time.Hour},
		"a short session":       {yaml: base + "      session_ttl: 30m\n", ttl: 30 * time.Minute, idle: 30 * time.Minute},
		"both set":              {yaml: base + "      session_ttl: 8h\n      idle_timeout: 15m\n", ttl: 8 * time.Hour, idle: 15 * time.Minute},
		"idle equal to the ttl": {yaml: base + "      session_ttl: 2h\n      idle_timeout: 2h\n", ttl: 2 * time.Hour, idle: 2 * time.Hour},
		"idle longer than ttl":  {yaml: base + "      session_ttl: 1h\n      idle_timeout: 2h\n", wantErrs: `driftwatch.yaml:10: server.auth.oidc.idle_timeout: 2h0m0s is longer than session_ttl (1h0m0s)`},
		"idle shorter than 1m":  {yaml: base + "      idle_timeout: 30s\n", wantErrs: `driftwatch.yaml:9: server.auth.oidc.idle_timeout: 30s is shorter than a minute`},
		"idle in another mode":  {yaml: "server:\n  auth:\n    oidc: {idle_timeout: 1h}\n", wantErrs: `driftwatch.yaml:3: server.auth.oidc: is used only with server.auth.mode: oidc`},
		"idle_timeout misspelt": {yaml: base + "      idle_ttl: 1h\n", wantErrs: `driftwatch.yaml:9: server.auth.oidc.idle_ttl: unknown key "idle_ttl"`},
	} {
		t.Run(name, func(t *testing.T) {
			c2, err := loadAuth(file, []byte(c.yaml))
			if c.wantErrs != "" {
				require.Error(t, err)
				require.Contains(t, strings.ReplaceAll(err.Error(), dir+"/", ""), c.wantErrs)
				return
			}
			require.NoError(t, err)
			o := c2.Server.Auth.OIDC
			require.Equal(t, Duration(c.ttl), o.SessionTTL)
			require.Equal(t, Duration(c.idle), o.IdleTimeout)
		})
	}
}
