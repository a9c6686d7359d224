package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// loadAuth decodes data strictly, as Load does, and validates its
// server.auth block (validateAuth) with file:line:key errors.
func loadAuth(file string, data []byte) (*Config, error) {
	node, err := parseDocument(file, data)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	pos, err := decodeStrict(file, node, c)
	if err != nil {
		return nil, err
	}
	c.File = file
	return c, errors.Join(c.validateAuth(pos)...)
}

func TestAuthValid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ci-token"), []byte("ci-CANARY-0123456789abcdef0123456789\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "proxy-secret"), []byte(strings.Repeat("p", 32)), 0o600))
	file := filepath.Join(dir, "driftwatch.yaml")

	c, err := loadAuth(file, []byte("server: {listen: \"127.0.0.1:9\"}\n"))
	require.NoError(t, err)
	require.Equal(t, AuthModeToken, c.Server.Auth.Mode, "token mode by default")
	require.Empty(t, c.Server.Auth.AnonymousRole)

	c, err = loadAuth(file, []byte(`server:
  auth:
    mode: proxy
    anonymous_role: viewer
    tokens:
      - {name: ci, role: operator, file: ci-token}
      - name: release-approver
        role: approver
        file: ./ci-token
        workspaces: {owners: [team-net]}
    proxy:
      trusted_networks: [10.0.0.0/8, "fd00::/8", 192.168.1.7]
      groups_header: X-Auth-Request-Groups
      secret_file: proxy-secret
    roles:
      - {role: admin, groups: [platform]}
      - {role: operator, emails: [olga@example.com], users: [olga]}
      - role: approver
        groups: [team-net]
        workspaces: {labels: {team: net}, owners: [team-net, team-core]}
`))
	require.NoError(t, err)
	a := c.Server.Auth
	require.Equal(t, filepath.Join(dir, "ci-token"), a.Tokens[0].File, "relative to the config file")
	require.Equal(t, filepath.Join(dir, "ci-token"), a.Tokens[1].File)
	require.Equal(t, DefaultProxyUserHeader, a.Proxy.UserHeader)
	require.Equal(t, DefaultProxyEmailHeader, a.Proxy.EmailHeader)
	require.Equal(t, "X-Auth-Request-Groups", a.Proxy.GroupsHeader)
	require.Equal(t, DefaultProxySecretHeader, a.Proxy.SecretHeader)
	require.Equal(t, filepath.Join(dir, "proxy-secret"), a.Proxy.SecretFile, "relative to the config file")
	require.Equal(t, WorkspaceScope{Labels: map[string]string{"team": "net"}, Owners: []string{"team-net", "team-core"}}, a.Roles[2].Workspaces)
	p, err := ParseTrustedNetwork("192.168.1.7")
	require.NoError(t, err)
	require.Equal(t, "192.168.1.7/32", p.String())
}

// Each error names file, line and key, never a token.
func TestAuthInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tok"), []byte("CANARY"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600))
	long := "CANARY-" + strings.Repeat("x", 32)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "good"), []byte(long), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shared"), []byte(long), 0o600))
	require.NoError(t, os.Chmod(filepath.Join(dir, "shared"), 0o644))
	file := filepath.Join(dir, "driftwatch.yaml")
	for name, c := range map[string]struct{ yaml, want string }{
		"mode": {"server:\n  auth:\n    mode: saml\n",
			`driftwatch.yaml:3: server.auth.mode: "saml": want token, proxy or oidc`},
		"anonymous operator": {"server:\n  auth:\n    anonymous_role: operator\n",
			`driftwatch.yaml:3: server.auth.anonymous_role: "operator": want viewer or none`},
		"open reads and none": {"server:\n  open_reads: true\n  auth:\n    anonymous_role: none\n",
			`driftwatch.yaml:2: server.open_reads: opens reads to anyone, and server.auth.anonymous_role is none`},
		"token without name": {"server:\n  auth:\n    tokens:\n      - {role: admin, file: tok}\n",
			`driftwatch.yaml:4: server.auth.tokens[0].name: required`},
		"token bad name": {"server:\n  auth:\n    tokens:\n      - {name: CI_bot, role: admin, file: tok}\n",
			`driftwatch.yaml:4: server.auth.tokens[0].name: "CI_bot" is not a DNS label`},
		"token reserved name": {"server:\n  auth:\n    tokens:\n      - {name: api, role: admin, file: tok}\n",
			`server.auth.tokens[0].name: "api" names the token of server.token_file`},
		"duplicate token": {"server:\n  auth:\n    tokens:\n      - {name: ci, role: admin, file: tok}\n      - {name: ci, role: viewer, file: tok}\n",
			`driftwatch.yaml:5: server.auth.tokens[1].name: duplicate token "ci"`},
		"token without role": {"server:\n  auth:\n    tokens:\n      - name: ci\n        file: tok\n",
			`driftwatch.yaml:4: server.auth.tokens[0].role: required: one of viewer, operator, approver, admin`},
		"token bad role": {"server:\n  auth:\n    tokens:\n      - name: ci\n        role: root\n        file: tok\n",
			`driftwatch.yaml:5: server.auth.tokens[0].role: "root": want one of viewer, operator, approver, admin`},
		"token without file": {"server:\n  auth:\n    tokens:\n      - {name: ci, role: admin}\n",
			`server.auth.tokens[0].file: required`},
		"empty token file": {"server:\n  auth:\n    tokens:\n      - name: ci\n        role: admin\n        file: empty\n",
			"driftwatch.yaml:6: server.auth.tokens[0].file: " + filepath.Join(dir, "empty") + " is empty"},
		"scope on an operator": {"server:\n  auth:\n    tokens:\n      - name: ci\n        role: operator\n        file: tok\n        workspaces: {owners: [x]}\n",
			`driftwatch.yaml:7: server.auth.tokens[0].workspaces: limits approvers only (this entry's role is "operator")`},
		"proxy in token mode": {"server:\n  auth:\n    proxy: {trusted_networks: [10.0.0.0/8]}\n",
			`driftwatch.yaml:3: server.auth.proxy: is used only with server.auth.mode: proxy`},
		"roles in token mode": {"server:\n  auth:\n    roles: [{role: admin, groups: [x]}]\n",
			`driftwatch.yaml:3: server.auth.roles: map people and are used only with server.auth.mode: proxy or oidc`},
		"no trusted networks": {"server:\n  auth:\n    mode: proxy\n",
			`server.auth.proxy.trusted_networks: required in proxy mode`},
		"bad network": {"server:\n  auth:\n    mode: proxy\n    proxy:\n      trusted_networks:\n        - 10.0.0.0/8\n        - proxy.internal\n",
			`driftwatch.yaml:7: server.auth.proxy.trusted_networks[1]: "proxy.internal" is not a CIDR or an IP address`},
		"every address": {"server:\n  auth:\n    mode: proxy\n    proxy:\n      trusted_networks: [\"::/0\"]\n",
			`server.auth.proxy.trusted_networks[0]: "::/0" trusts every address`},
		"bad header": {"server:\n  auth:\n    mode: proxy\n    proxy:\n      trusted_networks: [10.0.0.1]\n      user_header: \"X User\"\n",
			`driftwatch.yaml:6: server.auth.proxy.user_header: "X User" is not an HTTP header name`},
		"role matches nobody": {"server:\n  auth:\n    mode: proxy\n    proxy: {trusted_networks: [10.0.0.1]}\n    roles:\n      - role: admin\n",
			`driftwatch.yaml:6: server.auth.roles[0]: name users, emails or groups`},
		"role bad": {"server:\n  auth:\n    mode: proxy\n    proxy: {trusted_networks: [10.0.0.1]}\n    roles:\n      - role: owner\n        users: [a]\n",
			`driftwatch.yaml:6: server.auth.roles[0].role: "owner": want one of`},
		"group with a comma": {"server:\n  auth:\n    mode: proxy\n    proxy: {trusted_networks: [10.0.0.1]}\n    roles:\n      - role: admin\n        groups: [\"a,b\"]\n",
			`server.auth.roles[0].groups[0]: "a,b" is not a group`},
		"scope on an admin": {"server:\n  auth:\n    mode: proxy\n    proxy: {trusted_networks: [10.0.0.1]}\n    roles:\n      - role: admin\n        users: [a]\n        workspaces: {labels: {team: x}}\n",
			`driftwatch.yaml:8: server.auth.roles[0].workspaces: limits approvers only`},
		"empty label": {"server:\n  auth:\n    mode: proxy\n    proxy: {trusted_networks: [10.0.0.1]}\n    roles:\n      - role: approver\n        users: [a]\n        workspaces: {labels: {team: \"\"}}\n",
			`server.auth.roles[0].workspaces.labels: labels need a key and a value`},
		"short token": {"server:\n  auth:\n    tokens:\n      - name: ci\n        role: admin\n        file: tok\n",
			"driftwatch.yaml:6: server.auth.tokens[0].file: " + filepath.Join(dir, "tok") + " holds 6 characters, fewer than 32"},
		"token readable by others": {"server:\n  auth:\n    tokens:\n      - name: ci\n        role: admin\n        file: shared\n",
			"driftwatch.yaml:6: server.auth.tokens[0].file: " + filepath.Join(dir, "shared") + " is readable by every user (mode 0644)"},
		"metrics token name": {"server:\n  auth:\n    tokens:\n      - {name: metrics, role: viewer, file: good}\n",
			`server.auth.tokens[0].name: "metrics" names the token of server.metrics_token_file`},
		"proxy without secret": {"server:\n  auth:\n    mode: proxy\n    proxy: {trusted_networks: [10.0.0.1]}\n",
			`driftwatch.yaml:4: server.auth.proxy.secret_file: required in proxy mode: the file holding the shared secret the proxy adds in X-Driftwatch-Proxy-Secret`},
		"proxy short secret": {"server:\n  auth:\n    mode: proxy\n    proxy:\n      trusted_networks: [10.0.0.1]\n      secret_file: tok\n",
			"driftwatch.yaml:6: server.auth.proxy.secret_file: " + filepath.Join(dir, "tok") + " holds 6 characters, fewer than 32"},
		"proxy secret readable by others": {"server:\n  auth:\n    mode: proxy\n    proxy:\n      trusted_networks: [10.0.0.1]\n      secret_file: shared\n",
			"server.auth.proxy.secret_file: " + filepath.Join(dir, "shared") + " is readable by every user"},
		"secret header is an identity header": {"server:\n  auth:\n    mode: proxy\n    proxy:\n      trusted_networks: [10.0.0.1]\n      secret_file: good\n      secret_header: x-forwarded-user\n",
			`driftwatch.yaml:7: server.auth.proxy.secret_header: "x-forwarded-user" is the user_header too`},
		"proxy secret in token mode": {"server:\n  auth:\n    proxy: {secret_file: good}\n",
			`driftwatch.yaml:3: server.auth.proxy: is used only with server.auth.mode: proxy`},
		"unknown key": {"server:\n  auth:\n    tokenz: []\n",
			`driftwatch.yaml:3: server.auth.tokenz: unknown key "tokenz" (did you mean "tokens"?)`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadAuth(file, []byte(c.yaml))
			require.Error(t, err)
			got := strings.ReplaceAll(err.Error(), dir+"/", "")
			require.Contains(t, got, strings.ReplaceAll(c.want, dir+"/", ""))
			require.NotContains(t, got, "CANARY")
		})
	}
}

func TestAuthOIDC(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client-secret"), []byte("CANARY-secret\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cookie-key"), []byte(strings.Repeat("CANARY", 8)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "short-key"), []byte("CANARY-short"), 0o600))
	file := filepath.Join(dir, "driftwatch.yaml")

	t.Run("defaults", func(t *testing.T) {
		c, err := loadAuth(file, []byte(`server:
  external_url: https://drift.example.com/dw/
  auth:
    mode: oidc
    oidc:
      issuer_url: https://login.example.com/realms/ops
      client_id: driftwatch
      client_secret_file: client-secret
    roles:
      - {role: admin, groups: [platform]}
`))
		require.NoError(t, err)
		o := c.Server.Auth.OIDC
		require.Equal(t, AuthModeOIDC, c.Server.Auth.Mode)
		require.Equal(t, filepath.Join(dir, "client-secret"), o.ClientSecretFile, "relative to the config file")
		require.Equal(t, "https://drift.example.com/dw/auth/callback", o.RedirectURL)
		require.Equal(t, []string{"openid", "email", "profile"}, o.Scopes)
		require.Equal(t, "groups", o.GroupsClaim)
		require.Equal(t, "preferred_username", o.UsernameClaim)
		require.Equal(t, Duration(12*time.Hour), o.SessionTTL)
		require.Empty(t, o.CookieSecretFile, "a random key at start")
	})
	t.Run("everything set, loopback http issuer", func(t *testing.T) {
		c, err := loadAuth(file, []byte(`server:
  auth:
    mode: oidc
    oidc:
      issuer_url: http://127.0.0.1:5556/dex
      client_id: driftwatch
      client_secret_file: client-secret
      redirect_url: http://127.0.0.1:8080/auth/callback
      scopes: [openid, email, groups]
      groups_claim: roles
      username_claim: sub
      session_ttl: 1h
      cookie_secret_file: cookie-key
`))
		require.NoError(t, err)
		o := c.Server.Auth.OIDC
		require.Equal(t, "http://127.0.0.1:8080/auth/callback", o.RedirectURL)
		require.Equal(t, []string{"openid", "email", "groups"}, o.Scopes)
		require.Equal(t, "roles", o.GroupsClaim)
		require.Equal(t, "sub", o.UsernameClaim)
		require.Equal(t, Duration(time.Hour), o.SessionTTL)
		require.Equal(t, filepath.Join(dir, "cookie-key"), o.CookieSecretFile)
		require.Subset(t, c.SecretFiles(), []string{o.ClientSecretFile, o.CookieSecretFile},
			"the client secret and the cookie key are redacted from every run's log")
	})

	base := "server:\n  external_url: https://drift.example.com\n  auth:\n    mode: oidc\n    oidc:\n"
	full := "      issuer_url: https://login.example.com\n      client_id: dw\n      client_secret_file: client-secret\n"
	for name, c := range map[string]struct{ yaml, want string }{
		"no issuer": {base + "      client_id: dw\n      client_secret_file: client-secret\n",
			`driftwatch.yaml:5: server.auth.oidc.issuer_url: required in oidc mode`},
		"http issuer": {base + "      issuer_url: http://login.example.com\n      client_id: dw\n      client_secret_file: client-secret\n",
			`driftwatch.yaml:6: server.auth.oidc.issuer_url: "http://login.example.com": the issuer must be https`},
		"issuer not a URL": {base + "      issuer_url: login.example.com\n      client_id: dw\n      client_secret_file: client-secret\n",
			`driftwatch.yaml:6: server.auth.oidc.issuer_url: "login.example.com" is not an absolute http(s) URL`},
		"no client id": {base + "      issuer_url: https://login.example.com\n      client_secret_file: client-secret\n",
			`driftwatch.yaml:5: server.auth.oidc.client_id: required in oidc mode`},
		"no client secret": {base + "      issuer_url: https://login.example.com\n      client_id: dw\n",
			`driftwatch.yaml:5: server.auth.oidc.client_secret_file: required in oidc mode`},
		"client secret missing": {base + "      issuer_url: https://login.example.com\n      client_id: dw\n      client_secret_file: nope\n",
			`driftwatch.yaml:8: server.auth.oidc.client_secret_file: open ` + filepath.Join(dir, "nope")},
		"no redirect url": {"server:\n  auth:\n    mode: oidc\n    oidc:\n" + full,
			`driftwatch.yaml:4: server.auth.oidc.redirect_url: required without server.external_url`},
		"bad redirect url": {base + full + "      redirect_url: /auth/callback\n",
			`driftwatch.yaml:9: server.auth.oidc.redirect_url: "/auth/callback" is not an absolute http(s) URL`},
		"scopes without openid": {base + full + "      scopes: [email]\n",
			`driftwatch.yaml:9: server.auth.oidc.scopes: must include openid`},
		"bad scope": {base + full + "      scopes: [openid, \"a b\"]\n",
			`driftwatch.yaml:9: server.auth.oidc.scopes[1]: "a b" is not a scope`},
		"short session": {base + full + "      session_ttl: 10s\n",
			`driftwatch.yaml:9: server.auth.oidc.session_ttl: 10s is shorter than a minute`},
		"short cookie key": {base + full + "      cookie_secret_file: short-key\n",
			`driftwatch.yaml:9: server.auth.oidc.cookie_secret_file: ` + filepath.Join(dir, "short-key") + ` holds fewer than 32 bytes`},
		"oidc in proxy mode": {"server:\n  auth:\n    mode: proxy\n    proxy: {trusted_networks: [10.0.0.1]}\n    oidc: {client_id: x}\n",
			`driftwatch.yaml:5: server.auth.oidc: is used only with server.auth.mode: oidc`},
		"proxy in oidc mode": {base + full + "    proxy: {trusted_networks: [10.0.0.1]}\n",
			`driftwatch.yaml:9: server.auth.proxy: is used only with server.auth.mode: proxy`},
		"inline secret": {base + full + "      client_secret: x\n",
			`driftwatch.yaml:9: server.auth.oidc.client_secret: unknown key "client_secret"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadAuth(file, []byte(c.yaml))
			require.Error(t, err)
			got := strings.ReplaceAll(err.Error(), dir+"/", "")
			require.Contains(t, got, strings.ReplaceAll(c.want, dir+"/", ""))
			require.NotContains(t, got, "CANARY")
		})
	}
	// Loopback issuers may be plain http: a provider on the same host.
	for _, u := range []string{"http://localhost:5556", "http://[::1]:80/x", "https://login.example.com"} {
		require.NoError(t, checkIssuerURL(u), u)
	}
}

func TestWorkspaceScope(t *testing.T) {
	s := WorkspaceScope{Labels: map[string]string{"team": "net"}, Owners: []string{"a", "b"}}
	require.True(t, s.Contains(map[string]string{"team": "net", "env": "prod"}, "b"))
	require.False(t, s.Contains(map[string]string{"team": "net"}, "c"), "owner not listed")
	require.False(t, s.Contains(map[string]string{"team": "web"}, "a"), "label differs")
	require.False(t, s.Contains(nil, "a"), "label missing")
	require.True(t, WorkspaceScope{}.Contains(nil, ""), "the zero scope holds every workspace")
	require.True(t, WorkspaceScope{}.IsZero())
}

// The example's commented auth block, uncommented, is a valid config (its
// token file replaced by a real one), so it cannot drift from the code.
func TestExampleAuthBlock(t *testing.T) {
	b, err := os.ReadFile("../../configs/driftwatch.example.yaml")
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	start := -1
	for i, l := range lines {
		if l == "  # auth:" {
			start = i
			break
		}
	}
	require.GreaterOrEqual(t, start, 0, "the example has a commented server.auth block")
	dir := t.TempDir()
	tok := filepath.Join(dir, "ci-token")
	require.NoError(t, os.WriteFile(tok, []byte(strings.Repeat("x", 32)), 0o600))
	secret := filepath.Join(dir, "proxy-secret")
	require.NoError(t, os.WriteFile(secret, []byte(strings.Repeat("s", 32)), 0o600))
	block := []string{"server:"}
	for _, l := range lines[start:] {
		if !strings.HasPrefix(l, "  # ") {
			break
		}
		l = "  " + strings.TrimPrefix(l, "  # ")
		l = strings.ReplaceAll(l, "/var/run/secrets/driftwatch/proxy-secret", secret)
		block = append(block, strings.ReplaceAll(l, "/var/run/secrets/driftwatch/ci-token", tok))
	}
	c, err := loadAuth(filepath.Join(dir, "driftwatch.yaml"), []byte(strings.Join(block, "\n")+"\n"))
	require.NoError(t, err, strings.Join(block, "\n"))
	require.Equal(t, AuthModeProxy, c.Server.Auth.Mode)
	require.Len(t, c.Server.Auth.Roles, 3)
	require.Len(t, c.Server.Auth.Tokens, 1)
}
