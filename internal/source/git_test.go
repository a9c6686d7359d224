package source

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/gittest"
)

// main tree at c2, shared by several cases.
func mainTree() map[string]string {
	return map[string]string{
		"main.tf":                       "file # two\n",
		"envs":                          "dir",
		"envs/prod":                     "dir",
		"envs/prod/main.tf":             "file # prod\n",
		"envs/prod/modules":             "dir",
		"envs/prod/modules/net":         "dir",
		"envs/prod/modules/net/main.tf": "file # net\n",
		"scripts":                       "dir",
		"scripts/run.sh":                "exec #!/bin/sh\n",
	}
}

func TestCheckout(t *testing.T) {
	f := newFixture(t)
	srv := newGitServer(t, f, nil)
	creds := writeCredentials(t, canaryToken+"\n")
	cache := t.TempDir()

	v1Tree := mainTree()
	v1Tree["main.tf"] = "file # one\n"
	featureTree := mainTree()
	featureTree["main.tf"] = "file # one\n"
	featureTree["feature.tf"] = "file # feature\n"

	tests := []struct {
		name       string
		ref, path  string
		wantCommit string
		wantTree   map[string]string // of the module directory
	}{
		{name: "default branch", wantCommit: f.c2, wantTree: mainTree()},
		{name: "branch", ref: "main", wantCommit: f.c2, wantTree: mainTree()},
		{name: "other branch", ref: "feature", wantCommit: f.c3, wantTree: featureTree},
		{name: "full ref name", ref: "refs/heads/feature", wantCommit: f.c3, wantTree: featureTree},
		{name: "annotated tag", ref: "v1.0.0", wantCommit: f.c1, wantTree: v1Tree},
		{name: "lightweight tag", ref: "light", wantCommit: f.c2, wantTree: mainTree()},
		{name: "tip sha", ref: f.c2, wantCommit: f.c2, wantTree: mainTree()},
		{name: "upper-case sha", ref: strings.ToUpper(f.c2), wantCommit: f.c2, wantTree: mainTree()},
		{name: "sha behind a tip", ref: f.c1, wantCommit: f.c1, wantTree: v1Tree},
		{name: "sha of another branch", ref: f.c3, wantCommit: f.c3, wantTree: featureTree},
		{
			name: "subdirectory", ref: "main", path: "envs/prod", wantCommit: f.c2,
			wantTree: map[string]string{
				"main.tf":             "file # prod\n",
				"modules":             "dir",
				"modules/net":         "dir",
				"modules/net/main.tf": "file # net\n",
			},
		},
		{
			name: "subdirectory with trailing slash", ref: "main", path: "envs/prod/modules/net/", wantCommit: f.c2,
			wantTree: map[string]string{"main.tf": "file # net\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := t.TempDir()
			g := Git{URL: srv.repoURL(), Ref: tt.ref, Path: tt.path, CredentialsFile: creds}
			moduleDir, commit, err := g.Checkout(t.Context(), cache, dst)
			require.NoError(t, err)
			require.Equal(t, tt.wantCommit, commit)
			require.Equal(t, filepath.Join(dst, filepath.FromSlash(tt.path)), moduleDir)
			require.True(t, filepath.IsAbs(moduleDir))
			require.Equal(t, tt.wantTree, readTree(t, moduleDir, false))
			require.NoDirExists(t, filepath.Join(dst, ".git"))
		})
	}
}

func TestCheckoutSHAFallsBackToFullFetch(t *testing.T) {
	f := newFixture(t)
	// Protocol v0 without allow*SHA1InWant refuses a want for c1, which is
	// no ref's tip.
	gittest.Run(t, f.root, "--git-dir="+f.bare(), "config", "uploadpack.allowReachableSHA1InWant", "false")
	gittest.Run(t, f.root, "--git-dir="+f.bare(), "config", "uploadpack.allowAnySHA1InWant", "false")
	srv := newGitServer(t, f, func(s *gitServer) { s.protocolV0 = true })
	creds := writeCredentials(t, canaryToken)
	cache := t.TempDir()

	// Make the cache shallow first, so the fallback must also unshallow.
	_, _, err := Git{URL: srv.repoURL(), CredentialsFile: creds}.Checkout(t.Context(), cache, t.TempDir())
	require.NoError(t, err)

	var fetches [][]string
	g := Git{URL: srv.repoURL(), Ref: f.c1, Path: "envs/prod", CredentialsFile: creds}
	moduleDir, commit, err := g.checkout(t.Context(), cache, t.TempDir(), func(args, _ []string) {
		if slices.Contains(args, "fetch") {
			fetches = append(fetches, args)
		}
	})
	require.NoError(t, err)
	require.Equal(t, f.c1, commit)
	require.FileExists(t, filepath.Join(moduleDir, "main.tf"))
	require.Len(t, fetches, 2)
	require.Contains(t, fetches[0], "--depth=1")
	require.Contains(t, fetches[1], "--unshallow")

	// A SHA that no branch or tag reaches is a clear error.
	_, _, err = Git{URL: srv.repoURL(), Ref: strings.Repeat("ab", 20), CredentialsFile: creds}.Checkout(t.Context(), cache, t.TempDir())
	require.ErrorContains(t, err, "is not reachable from any branch or tag")
}

func TestCheckoutLocalRepository(t *testing.T) {
	f := newFixture(t)
	for _, url := range []string{f.bare(), "file://" + f.bare()} {
		t.Run(url, func(t *testing.T) {
			moduleDir, commit, err := Git{URL: url, Ref: "v1.0.0", Path: "envs/prod"}.Checkout(t.Context(), t.TempDir(), t.TempDir())
			require.NoError(t, err)
			require.Equal(t, f.c1, commit)
			require.FileExists(t, filepath.Join(moduleDir, "modules/net/main.tf"))
		})
	}
}

func TestCheckoutErrors(t *testing.T) {
	f := newFixture(t)
	gittest.Run(t, f.work, "checkout", "--quiet", "-b", "links")
	f.write(t, "file.tf", "#\n", 0o644)
	f.commit(t, "links")
	gittest.Run(t, f.work, "tag", "tree", "HEAD^{tree}")
	gittest.Run(t, f.work, "checkout", "--quiet", "-b", "escape")
	require.NoError(t, os.Symlink("/", filepath.Join(f.work, "escape")))
	f.commit(t, "escape")
	f.publish(t)

	notEmpty := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notEmpty, "x"), nil, 0o600))

	tests := []struct {
		name    string
		git     Git
		dst     string
		wantErr string
	}{
		{name: "missing ref", git: Git{URL: f.bare(), Ref: "nope"}, wantErr: "couldn't find remote ref nope"},
		{name: "tag of a tree", git: Git{URL: f.bare(), Ref: "tree"}, wantErr: `ref "tree" does not point to a commit`},
		{name: "missing path", git: Git{URL: f.bare(), Path: "nope"}, wantErr: `path "nope": `},
		{name: "path is a file", git: Git{URL: f.bare(), Ref: "links", Path: "file.tf"}, wantErr: `path "file.tf" is not a directory`},
		{name: "path through escaping symlink", git: Git{URL: f.bare(), Ref: "escape", Path: "escape"}, wantErr: `: escape: symlink to / points outside the source directory`},
		{name: "missing repository", git: Git{URL: filepath.Join(f.root, "nope.git")}, wantErr: "git fetch: exit status 128"},
		{name: "destination not empty", git: Git{URL: f.bare()}, dst: notEmpty, wantErr: "is not empty"},
		{name: "destination missing", git: Git{URL: f.bare()}, dst: filepath.Join(notEmpty, "missing"), wantErr: "no such file or directory"},
		{name: "missing credentials file", git: Git{URL: "https://git.example.com/r.git", CredentialsFile: filepath.Join(notEmpty, "missing")}, wantErr: "credentials file: open"},
		{name: "empty credentials file", git: Git{URL: "https://git.example.com/r.git", CredentialsFile: writeCredentials(t, " \n")}, wantErr: "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := tt.dst
			if dst == "" {
				dst = t.TempDir()
			}
			_, _, err := tt.git.Checkout(t.Context(), t.TempDir(), dst)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestGitValidate(t *testing.T) {
	const secret = "s3cr3t-PASSWORD"
	tests := []struct {
		name    string
		git     Git
		wantErr string // "" for valid
	}{
		{name: "https", git: Git{URL: "https://github.com/org/repo.git"}},
		{name: "https with credentials", git: Git{URL: "https://github.com/org/repo.git", CredentialsFile: "/t"}},
		{name: "http on loopback with credentials", git: Git{URL: "http://127.0.0.1:8080/r.git", CredentialsFile: "/t"}},
		{name: "http without credentials", git: Git{URL: "http://git.internal/r.git"}},
		{name: "local path", git: Git{URL: "testdata/repo.git"}},
		{name: "sha ref", git: Git{URL: "https://h/r.git", Ref: strings.Repeat("0a", 20)}},
		{name: "nested path", git: Git{URL: "https://h/r.git", Path: "envs/prod/"}},
		{name: "missing url", git: Git{}, wantErr: "git source: url is required"},
		{name: "user and password", git: Git{URL: "https://user:" + secret + "@github.com/org/repo.git"}, wantErr: "url must not contain credentials (userinfo)"},
		{name: "token as user", git: Git{URL: "https://" + secret + "@github.com/org/repo.git"}, wantErr: "url must not contain credentials (userinfo)"},
		{name: "unparsable url with password", git: Git{URL: "https://user:" + secret + "@git hub.com/r.git"}, wantErr: "git source: url is not a valid URL"},
		{name: "token in query", git: Git{URL: "https://github.com/org/repo.git?access_token=" + secret}, wantErr: "url must not contain a query or fragment"},
		{name: "scp style", git: Git{URL: "git@github.com:org/repo.git"}, wantErr: "ssh, scp-style and transport-helper urls are not supported"},
		{name: "scp style with password", git: Git{URL: "git:" + secret + "@github.com:org/repo.git"}, wantErr: "ssh, scp-style and transport-helper urls are not supported"},
		{name: "transport helper", git: Git{URL: "ext::sh -c touch% /tmp/pwned"}, wantErr: "ssh, scp-style and transport-helper urls are not supported"},
		{name: "ssh scheme", git: Git{URL: "ssh://github.com/org/repo.git"}, wantErr: `url scheme "ssh" is not supported`},
		{name: "plain http with credentials", git: Git{URL: "http://github.com/org/repo.git", CredentialsFile: "/t"}, wantErr: `refusing to send credentials over plain http to "github.com"`},
		{name: "no host", git: Git{URL: "https:///org/repo.git"}, wantErr: "url has no host"},
		{name: "option-like ref", git: Git{URL: "https://h/r.git", Ref: "--upload-pack=touch /tmp/pwned"}, wantErr: "must not start with '-' or '+'"},
		{name: "forced refspec", git: Git{URL: "https://h/r.git", Ref: "+main"}, wantErr: "must not start with '-' or '+'"},
		{name: "refspec with destination", git: Git{URL: "https://h/r.git", Ref: "main:refs/heads/x"}, wantErr: "contains a character not allowed"},
		{name: "ref with dots", git: Git{URL: "https://h/r.git", Ref: "a..b"}, wantErr: "is not a valid ref name"},
		{name: "ref with space", git: Git{URL: "https://h/r.git", Ref: "a b"}, wantErr: "contains a character not allowed"},
		{name: "absolute path", git: Git{URL: "https://h/r.git", Path: "/etc"}, wantErr: `path "/etc" must be relative`},
		{name: "escaping path", git: Git{URL: "https://h/r.git", Path: "envs/../../x"}, wantErr: `path "envs/../../x" must be relative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.git.validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), secret)

			// Checkout reports the same error, before touching anything.
			_, _, err = tt.git.Checkout(t.Context(), t.TempDir(), t.TempDir())
			require.ErrorContains(t, err, tt.wantErr)
			require.NotContains(t, err.Error(), secret)
		})
	}
}
