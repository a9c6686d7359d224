package source

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

func TestCheckoutReusesCache(t *testing.T) {
	f := newFixture(t)
	srv := newGitServer(t, f, nil)
	cache := t.TempDir()
	g := Git{URL: srv.repoURL(), Ref: "main", CredentialsFile: writeCredentials(t, canaryToken)}

	_, commit, err := g.Checkout(t.Context(), cache, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, f.c2, commit)

	// One bare repository, named by the URL's hash, plus its lock file.
	repo := filepath.Join(cache, "git", cacheKey(srv.repoURL())+".git")
	entries, err := os.ReadDir(filepath.Join(cache, "git"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{filepath.Base(repo), cacheKey(srv.repoURL()) + ".lock"}, names)
	require.FileExists(t, filepath.Join(repo, "HEAD"))
	// Only what was needed was fetched.
	require.Equal(t, "true", testGit(t, repo, "--git-dir="+repo, "rev-parse", "--is-shallow-repository"))

	// A commit pushed to the branch is picked up by the next checkout.
	f.write(t, "added.tf", "# added\n", 0o644)
	c4 := f.commit(t, "four")
	f.publish(t)
	dst := t.TempDir()
	moduleDir, commit, err := g.Checkout(t.Context(), cache, dst)
	require.NoError(t, err)
	require.Equal(t, c4, commit)
	require.FileExists(t, filepath.Join(moduleDir, "added.tf"))
	require.DirExists(t, repo)

	// A SHA the cache already holds needs no request at all.
	before := len(srv.requests())
	_, commit, err = Git{URL: g.URL, Ref: c4, CredentialsFile: g.CredentialsFile}.Checkout(t.Context(), cache, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, c4, commit)
	require.Len(t, srv.requests(), before)
}

func TestCheckoutSHAFallsBackToFullFetch(t *testing.T) {
	f := newFixture(t)
	// Protocol v0 without allow*SHA1InWant refuses a want for c1, which is
	// no ref's tip.
	testGit(t, f.root, "--git-dir="+f.bare(), "config", "uploadpack.allowReachableSHA1InWant", "false")
	testGit(t, f.root, "--git-dir="+f.bare(), "config", "uploadpack.allowAnySHA1InWant", "false")
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

// TestCheckoutCancel holds git's first request until the context ends, and
// meanwhile reads the command line of every process on the machine.
func TestCheckoutCancel(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func(context.Context) (context.Context, context.CancelFunc)
		cancel  bool // cancel once the request arrives
		wantErr error
	}{
		{name: "cancel", ctx: context.WithCancel, cancel: true, wantErr: context.Canceled},
		{
			name: "deadline",
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 4*time.Second) // long enough for git to start under load
			},
			wantErr: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			arrived := make(chan struct{})
			var once sync.Once
			srv := newGitServer(t, f, func(s *gitServer) {
				s.hook = func(r *http.Request) {
					once.Do(func() { close(arrived) })
					<-r.Context().Done() // until git goes away
				}
			})
			ctx, cancel := tt.ctx(t.Context())
			defer cancel()
			g := Git{URL: srv.repoURL(), Ref: "main", CredentialsFile: writeCredentials(t, canaryToken)}

			done := make(chan error, 1)
			go func() {
				_, _, err := g.Checkout(ctx, t.TempDir(), t.TempDir())
				done <- err
			}()
			select {
			case <-arrived:
			case err := <-done:
				t.Fatalf("checkout returned before its request arrived: %v", err)
			}

			// git and git-remote-http are running now, the latter with the
			// repository URL in its arguments.
			cmdlines := processCmdlines(t)
			var gitProcs int
			for pid, cmdline := range cmdlines {
				requireNoSecret(t, cmdline, canaryToken)
				if strings.Contains(cmdline, srv.URL) {
					gitProcs++
					t.Logf("pid %s: %s", pid, cmdline)
				}
			}
			require.NotZero(t, gitProcs, "no process with the repository URL in its arguments")

			if tt.cancel {
				cancel()
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(waitDelay + 10*time.Second):
				t.Fatal("checkout did not return after the context ended")
			}
			require.ErrorIs(t, err, tt.wantErr)
			requireNoSecret(t, err.Error(), canaryToken)

			// Nothing of git is left running.
			require.Eventually(t, func() bool {
				for _, cmdline := range processCmdlines(t) {
					if strings.Contains(cmdline, srv.URL) {
						return false
					}
				}
				return true
			}, 5*time.Second, 50*time.Millisecond)
		})
	}
}

// processCmdlines reads /proc/*/cmdline, with arguments joined by spaces.
func processCmdlines(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	require.NotEmpty(t, paths, "/proc is not mounted")
	out := make(map[string]string, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process exited
		}
		out[filepath.Base(filepath.Dir(p))] = strings.ReplaceAll(string(b), "\x00", " ")
	}
	return out
}

func TestCheckoutConcurrent(t *testing.T) {
	f := newFixture(t)
	srv := newGitServer(t, f, nil)
	creds := writeCredentials(t, canaryToken)
	cache := t.TempDir()
	refs := []string{"main", "feature", "v1.0.0", f.c1, "main", "feature", f.c2, ""}

	var wg sync.WaitGroup
	errs := make([]error, len(refs))
	commits := make([]string, len(refs))
	for i, ref := range refs {
		wg.Go(func() {
			_, commits[i], errs[i] = Git{URL: srv.repoURL(), Ref: ref, CredentialsFile: creds}.Checkout(t.Context(), cache, t.TempDir())
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, []string{f.c2, f.c3, f.c1, f.c1, f.c2, f.c3, f.c2, f.c2}, commits)
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
	testGit(t, f.work, "checkout", "--quiet", "-b", "links")
	f.write(t, "file.tf", "#\n", 0o644)
	f.commit(t, "links")
	testGit(t, f.work, "tag", "tree", "HEAD^{tree}")
	testGit(t, f.work, "checkout", "--quiet", "-b", "escape")
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

func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockFile(t.Context(), path)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 3*lockPoll)
	defer cancel()
	_, err = lockFile(ctx, path)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	got := make(chan error, 1)
	go func() {
		unlock2, err := lockFile(t.Context(), path)
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	time.Sleep(2 * lockPoll)
	select {
	case err := <-got:
		t.Fatalf("second lock taken while the first is held: %v", err)
	default:
	}
	unlock()
	require.NoError(t, <-got)
}

func TestCheckoutRecoversFromCrash(t *testing.T) {
	f := newFixture(t)
	cache := t.TempDir()
	g := Git{URL: f.bare()}
	repo := filepath.Join(cache, "git", cacheKey(f.bare())+".git")

	// What a crash while creating the cache repository leaves behind.
	require.NoError(t, os.MkdirAll(repo+".tmp-123/objects", 0o700))
	_, _, err := g.Checkout(t.Context(), cache, t.TempDir())
	require.NoError(t, err)
	require.NoDirExists(t, repo+".tmp-123")

	// What a git killed mid-fetch leaves behind.
	for _, name := range []string{"shallow.lock", "config.lock", "refs/heads/x.lock"} {
		require.NoError(t, os.WriteFile(filepath.Join(repo, name), nil, 0o600))
	}
	_, commit, err := g.Checkout(t.Context(), cache, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, f.c2, commit)
	require.NoFileExists(t, filepath.Join(repo, "shallow.lock"))
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
		testGit(t, f.work, "checkout", "--quiet", "-b", branch, f.c2)
		require.NoError(t, os.Symlink(tc.target, filepath.Join(f.work, filepath.FromSlash(tc.file))))
		f.commit(t, tc.name)
	}
	testGit(t, f.work, "checkout", "--quiet", "main")
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
		testGit(t, f.work, "checkout", "--quiet", "-b", "inside", f.c2)
		require.NoError(t, os.Symlink("../../main.tf", filepath.Join(f.work, "envs/prod/root.tf")))
		require.NoError(t, os.Symlink("envs/prod", filepath.Join(f.work, "prod")))
		require.NoError(t, os.Symlink("missing.tf", filepath.Join(f.work, "dangling.tf")))
		f.commit(t, "inside")
		testGit(t, f.work, "checkout", "--quiet", "main")
		f.publish(t)
		moduleDir, _, err := Git{URL: f.bare(), Ref: "inside", Path: "prod"}.Checkout(t.Context(), cache, t.TempDir())
		require.NoError(t, err)
		b, err := ReadFile(t.Context(), filepath.Dir(moduleDir), filepath.Join(moduleDir, "root.tf"), MaxConfigFileSize)
		require.NoError(t, err)
		require.Equal(t, "# two\n", string(b))
	})
}

// TestCheckTreeStopsWhenCancelled: the walk of a checkout runs under the
// run's context.
func TestCheckTreeStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, 0o644, map[string]string{"a.tf": "#", "m/b.tf": "#"})
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "m", "z.tf")))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := checkTree(ctx, dir)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrEscapes, "stopped before reaching the link")
	require.ErrorIs(t, checkTree(t.Context(), dir), ErrEscapes)
}
