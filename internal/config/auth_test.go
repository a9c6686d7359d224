package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ci-token"), []byte("ci-CANARY\n"), 0o600))
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
	file := filepath.Join(dir, "driftwatch.yaml")
	for name, c := range map[string]struct{ yaml, want string }{
		"mode": {"server:\n  auth:\n    mode: oidc\n",
			`driftwatch.yaml:3: server.auth.mode: "oidc": want token or proxy`},
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
			`driftwatch.yaml:3: server.auth.roles: map proxy identities and are used only with server.auth.mode: proxy`},
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
	require.NoError(t, os.WriteFile(tok, []byte("x"), 0o600))
	block := []string{"server:"}
	for _, l := range lines[start:] {
		if !strings.HasPrefix(l, "  # ") {
			break
		}
		l = "  " + strings.TrimPrefix(l, "  # ")
		block = append(block, strings.ReplaceAll(l, "/var/run/secrets/driftwatch/ci-token", tok))
	}
	c, err := loadAuth(filepath.Join(dir, "driftwatch.yaml"), []byte(strings.Join(block, "\n")+"\n"))
	require.NoError(t, err, strings.Join(block, "\n"))
	require.Equal(t, AuthModeProxy, c.Server.Auth.Mode)
	require.Len(t, c.Server.Auth.Roles, 3)
	require.Len(t, c.Server.Auth.Tokens, 1)
}
