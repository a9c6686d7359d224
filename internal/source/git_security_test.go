package source

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/gittest"
)

func TestCheckoutCredentials(t *testing.T) {
	const wrongToken = "ghp_WRONG_TOKEN_0123456789abcdef"
	f := newFixture(t)
	srv := newGitServer(t, f, nil)

	tests := []struct {
		name     string
		creds    string // file content; "" for no credentials file
		wantUser string
		wantErr  bool
	}{
		{name: "bare token", creds: "  " + canaryToken + "\n", wantUser: defaultUser},
		{name: "user and token", creds: "bot:" + canaryToken + "\n", wantUser: "bot"},
		{name: "wrong token", creds: wrongToken, wantErr: true},
		{name: "wrong token for user", creds: "bot:" + wrongToken, wantErr: true},
		{name: "no credentials", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Git{URL: srv.repoURL(), Ref: "main"}
			if tt.creds != "" {
				g.CredentialsFile = writeCredentials(t, tt.creds)
			}
			var argv, env [][]string
			var mu sync.Mutex
			start := len(srv.requests())
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // git must not wait for a prompt
			defer cancel()
			_, commit, err := g.checkout(ctx, t.TempDir(), t.TempDir(), func(a, e []string) {
				mu.Lock()
				defer mu.Unlock()
				argv, env = append(argv, a), append(env, e)
			})

			// The token never appears in an argument, and only in the one
			// environment variable meant to carry the header.
			for _, a := range argv {
				requireNoSecret(t, strings.Join(a, " "), canaryToken, wrongToken)
			}
			for _, e := range env {
				var carriers []string
				for _, kv := range e {
					if strings.Contains(kv, "Authorization") {
						carriers = append(carriers, kv)
					} else {
						requireNoSecret(t, kv, canaryToken, wrongToken)
					}
				}
				if tt.creds == "" {
					require.Empty(t, carriers)
				} else {
					require.Len(t, carriers, 1)
					require.Regexp(t, `^GIT_CONFIG_VALUE_\d+=Authorization: Basic `, carriers[0])
				}
			}

			// The server never gets the token in a URL.
			reqs := srv.requests()[start:]
			require.NotEmpty(t, reqs)
			for _, r := range reqs {
				requireNoSecret(t, r.url, canaryToken, wrongToken)
				require.NotContains(t, r.url, "@")
			}

			if tt.wantErr {
				require.ErrorIs(t, err, ErrAuthFailed)
				require.ErrorContains(t, err, "authentication failed")
				require.NotErrorIs(t, err, context.DeadlineExceeded)
				requireNoSecret(t, err.Error(), canaryToken, wrongToken)
				return
			}
			require.NoError(t, err)
			require.Equal(t, f.c2, commit)
			for _, r := range reqs {
				require.True(t, r.hasAuth, r.url)
				require.Equal(t, tt.wantUser, r.user)
				require.Equal(t, canaryToken, r.pass)
			}
		})
	}
}

// TestCheckoutRefusesEscapingSymlinks: git stores a symlink to anywhere. One
// to a named pipe hung the daemon (it reads .tf files itself), one to
// /dev/zero would exhaust its memory, one to /etc/passwd would hand a host
// file to Terraform. Each fails the checkout at once, naming the file, and
// never quotes the token.
func TestCheckoutRefusesEscapingSymlinks(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	outside := filepath.Join(t.TempDir(), "secret.tf")
	require.NoError(t, os.WriteFile(outside, []byte("# outside\n"), 0o600))

	f := newFixture(t)
	cases := []struct {
		name, file, target string
	}{
		{name: "named pipe", file: "evil.tf", target: fifo},
		{name: "dev zero", file: "evil.tf", target: "/dev/zero"},
		{name: "relative out", file: "evil.tf", target: "../../../../../../../../../../etc/passwd"},
		{name: "absolute file", file: "evil.tf", target: outside},
		{name: "nested, relative out", file: "envs/prod/evil.tf", target: "../../../../../../../../../../../dev/zero"},
		{name: "directory out", file: "envs/shared", target: filepath.Dir(outside)},
		{name: "dangling out", file: "evil.tf", target: "../nonexistent/x.tf"},
	}
	for i, tc := range cases {
		branch := "evil-" + strconv.Itoa(i)
		gittest.Run(t, f.work, "checkout", "--quiet", "-b", branch, f.c2)
		require.NoError(t, os.Symlink(tc.target, filepath.Join(f.work, filepath.FromSlash(tc.file))))
		f.commit(t, tc.name)
	}
	gittest.Run(t, f.work, "checkout", "--quiet", "main")
	f.publish(t)
	srv := newGitServer(t, f, nil)
	creds := writeCredentials(t, canaryToken)
	cache := t.TempDir()

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A guard only: the checkout must fail in well under a second.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			for _, g := range []Git{
				{URL: srv.repoURL(), Ref: "evil-" + strconv.Itoa(i), CredentialsFile: creds},
				{URL: f.bare(), Ref: "evil-" + strconv.Itoa(i), Path: "envs/prod"},
			} {
				start := time.Now()
				_, _, err := g.Checkout(ctx, cache, t.TempDir())
				require.ErrorIs(t, err, ErrEscapes)
				require.ErrorContains(t, err, tc.file+": symlink to "+tc.target+" points outside the source directory")
				require.NoError(t, ctx.Err(), "failed promptly, not at the guard's timeout")
				require.Less(t, time.Since(start), 10*time.Second)
				requireNoSecret(t, err.Error(), canaryToken)
			}
		})
	}

	t.Run("symlinks inside the checkout are kept", func(t *testing.T) {
		gittest.Run(t, f.work, "checkout", "--quiet", "-b", "inside", f.c2)
		require.NoError(t, os.Symlink("../../main.tf", filepath.Join(f.work, "envs/prod/root.tf")))
		require.NoError(t, os.Symlink("envs/prod", filepath.Join(f.work, "prod")))
		require.NoError(t, os.Symlink("missing.tf", filepath.Join(f.work, "dangling.tf")))
		f.commit(t, "inside")
		gittest.Run(t, f.work, "checkout", "--quiet", "main")
		f.publish(t)
		moduleDir, _, err := Git{URL: f.bare(), Ref: "inside", Path: "prod"}.Checkout(t.Context(), cache, t.TempDir())
		require.NoError(t, err)
		b, err := ReadFile(t.Context(), filepath.Dir(moduleDir), filepath.Join(moduleDir, "root.tf"), MaxConfigFileSize)
		require.NoError(t, err)
		require.Equal(t, "# two\n", string(b))
	})
}
