package source

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGitEnv(t *testing.T) {
	parent := []string{
		"PATH=/opt/bin:/usr/bin",
		"HOME=/home/user",
		"HTTPS_PROXY=http://proxy:3128",
		"SSL_CERT_FILE=/etc/ssl/ca.pem",
		"GIT_TRACE=1",
		"GIT_TRACE_CURL=/tmp/curl.log",
		"GIT_CURL_VERBOSE=1",
		"GIT_DIR=/elsewhere/.git",
		"GIT_ASKPASS=/usr/bin/ksshaskpass",
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.proxy",
		"XDG_CONFIG_HOME=/home/user/.config",
		"DRIFTWATCH_SLACK_TOKEN=xoxb-secret",
	}
	base := []string{
		"PATH=/opt/bin:/usr/bin",
		"HTTPS_PROXY=http://proxy:3128",
		"SSL_CERT_FILE=/etc/ssl/ca.pem",
		"HOME=/tmp/h",
		"XDG_CONFIG_HOME=/tmp/h",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GCM_INTERACTIVE=never",
		"GIT_ALLOW_PROTOCOL=https:http:file",
		"LC_ALL=C",
		"LANG=C",
	}
	baseConfig := []string{
		"GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=",
		"GIT_CONFIG_KEY_1=core.hooksPath", "GIT_CONFIG_VALUE_1=/dev/null",
		"GIT_CONFIG_KEY_2=gc.autoDetach", "GIT_CONFIG_VALUE_2=false",
		"GIT_CONFIG_KEY_3=advice.detachedHead", "GIT_CONFIG_VALUE_3=false",
	}
	auth := &basicAuth{user: "bot", token: canaryToken}
	tests := []struct {
		name   string
		parent []string
		header *extraHeader
		want   []string
	}{
		{
			name:   "no credentials",
			parent: parent,
			want:   concat(base, []string{"GIT_CONFIG_COUNT=4"}, baseConfig),
		},
		{
			name:   "credentials",
			parent: parent,
			header: authHeader("https://git.example.com/", auth),
			want: concat(base, []string{"GIT_CONFIG_COUNT=5"}, baseConfig, []string{
				"GIT_CONFIG_KEY_4=http.https://git.example.com/.extraHeader",
				"GIT_CONFIG_VALUE_4=Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("bot:"+canaryToken)),
			}),
		},
		{
			name:   "no PATH",
			parent: []string{"HOME=/root"},
			want:   concat([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, base[3:], []string{"GIT_CONFIG_COUNT=4"}, baseConfig),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, gitEnv(tt.parent, "/tmp/h", tt.header))
		})
	}
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestGitArgs pins every argv Checkout can build. None takes a credential,
// so none can carry one; refs and paths are validated before they get here.
func TestGitArgs(t *testing.T) {
	const repo = "/cache/git/k.git"
	sha := strings.Repeat("ab", 20)
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{
			name: "init",
			got:  initArgs("/cache/git/k.git.tmp-1", "https://h/r.git")[0],
			want: []string{"init", "--bare", "--quiet", "/cache/git/k.git.tmp-1"},
		},
		{
			name: "set origin",
			got:  initArgs("/cache/git/k.git.tmp-1", "https://h/r.git")[1],
			want: []string{"--git-dir=/cache/git/k.git.tmp-1", "config", "remote.origin.url", "https://h/r.git"},
		},
		{
			name: "shallow fetch of a branch",
			got:  fetchArgs(repo, "main", fetchShallow, false),
			want: []string{"--git-dir=" + repo, "fetch", "--quiet", "--no-progress", "--no-tags", "--depth=1", "origin", "main"},
		},
		{
			name: "shallow fetch of a sha",
			got:  fetchArgs(repo, sha, fetchShallow, false),
			want: []string{"--git-dir=" + repo, "fetch", "--quiet", "--no-progress", "--no-tags", "--depth=1", "origin", sha},
		},
		{
			name: "full fetch",
			got:  fetchArgs(repo, sha, fetchAll, false),
			want: []string{"--git-dir=" + repo, "fetch", "--quiet", "--no-progress", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*"},
		},
		{
			name: "full fetch of a shallow cache",
			got:  fetchArgs(repo, sha, fetchAll, true),
			want: []string{"--git-dir=" + repo, "fetch", "--quiet", "--no-progress", "--unshallow", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*"},
		},
		{
			name: "resolve",
			got:  revParseArgs(repo, "FETCH_HEAD"),
			want: []string{"--git-dir=" + repo, "rev-parse", "--verify", "--quiet", "--end-of-options", "FETCH_HEAD^{commit}"},
		},
		{
			name: "checkout",
			got:  checkoutArgs(repo, "/work/dst", sha),
			want: []string{"--git-dir=" + repo, "--work-tree=/work/dst", "checkout", "--quiet", "--force", sha, "--", "."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.got)
		})
	}
}

func TestParseCredentials(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		want     *basicAuth
		wantErr  string
		wantHead string
	}{
		{name: "token", content: canaryToken, want: &basicAuth{user: defaultUser, token: canaryToken}},
		{name: "token with whitespace", content: "\n  " + canaryToken + " \r\n", want: &basicAuth{user: defaultUser, token: canaryToken}},
		{name: "user and token", content: "bot:" + canaryToken + "\n", want: &basicAuth{user: "bot", token: canaryToken}},
		{name: "colon in token", content: "bot:a:b", want: &basicAuth{user: "bot", token: "a:b"}},
		{name: "empty user", content: ":" + canaryToken, want: &basicAuth{user: defaultUser, token: canaryToken}},
		{name: "empty", content: " \n\t", wantErr: "credentials file /t is empty"},
		{name: "empty token", content: "bot:", wantErr: `credentials file /t: token after "bot:" is empty`},
		{name: "two lines", content: canaryToken + "\n" + canaryToken, wantErr: "credentials file /t: token contains a control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCredentials(tt.content, "/t")
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				requireNoSecret(t, err.Error(), canaryToken)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRedactorTail(t *testing.T) {
	auth := &basicAuth{user: "bot", token: canaryToken}
	r := newRedactor(auth.secrets()...)
	b64 := base64.StdEncoding.EncodeToString([]byte("bot:" + canaryToken))

	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{name: "empty", want: ""},
		{
			name:   "every form",
			writes: []string{"token " + canaryToken + "\nuser bot:" + canaryToken + "\nheader Authorization: Basic " + b64 + "\nraw " + strings.TrimRight(b64, "=") + "\n"},
			want:   "token [REDACTED]\nuser [REDACTED]\nheader Authorization: [REDACTED]\nraw [REDACTED]",
		},
		{
			name:   "secret split across writes",
			writes: []string{"fatal: " + canaryToken[:10], canaryToken[10:] + " rejected\n"},
			want:   "fatal: [REDACTED] rejected",
		},
		{
			name:   "long output keeps the end",
			writes: []string{strings.Repeat("x", 10*stderrLimit) + "\nfatal: the end\n"},
			want:   "…" + strings.Repeat("x", stderrLimit-len("\nfatal: the end\n")) + "\nfatal: the end",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTailBuffer(stderrLimit + r.maxLen())
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				require.NoError(t, err)
				require.Equal(t, len(w), n)
			}
			require.Equal(t, tt.want, r.tail(b, stderrLimit))
		})
	}

	// Wherever the buffer's cut falls, no part of the token long enough to
	// be recognised survives and the result stays bounded.
	for cut := 0; cut <= len(b64); cut++ {
		b := newTailBuffer(stderrLimit + r.maxLen())
		line := "Authorization: Basic " + b64 + "\n"
		_, _ = b.Write([]byte(strings.Repeat(line, 200)))
		_, _ = b.Write([]byte(strings.Repeat("y", cut)))
		got := r.tail(b, stderrLimit)
		require.LessOrEqual(t, len(got), stderrLimit+len("…"))
		for _, form := range []string{canaryToken[:12], b64[:12], b64[len(b64)-12:]} {
			require.NotContains(t, got, form, "cut %d", cut)
		}
	}
}

func TestIsAuthFailure(t *testing.T) {
	tests := []struct {
		stderr string
		want   bool
	}{
		{"fatal: Authentication failed for 'https://h/r.git/'", true},
		{"fatal: could not read Username for 'https://h': terminal prompts disabled", true},
		{"fatal: unable to access 'https://h/r.git/': The requested URL returned error: 403", true},
		{"fatal: unable to access 'https://h/r.git/': The requested URL returned error: 404", false},
		{"fatal: couldn't find remote ref nope", false},
	}
	for _, tt := range tests {
		t.Run(tt.stderr, func(t *testing.T) {
			require.Equal(t, tt.want, isAuthFailure(tt.stderr))
		})
	}
}
