package source

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/gittest"
)

// canaryToken is the only password the test server accepts. Every test
// that could leak it looks for it, and for its base64 forms, in errors,
// request URLs and process arguments.
const canaryToken = "ghp_CANARY_TOKEN_d41d8cd98f00b204"

// canaryForms lists the forms in which canaryToken must never leak.
func canaryForms(tokens ...string) []string {
	var out []string
	for _, tok := range tokens {
		for _, plain := range []string{tok, defaultUser + ":" + tok, "bot:" + tok} {
			out = append(out, plain,
				base64.StdEncoding.EncodeToString([]byte(plain)),
				base64.RawStdEncoding.EncodeToString([]byte(plain)),
				base64.URLEncoding.EncodeToString([]byte(plain)))
		}
	}
	return out
}

// requireNoSecret fails if s contains any form of the tokens.
func requireNoSecret(t *testing.T, s string, tokens ...string) {
	t.Helper()
	for _, form := range canaryForms(tokens...) {
		require.NotContains(t, s, form)
	}
}

// fixture is a repository with known commits: a work tree to commit in and
// a bare copy under root, published with push.
type fixture struct {
	work, root string
	// c1 is tagged v1.0.0 (annotated); c2 is main's tip and tagged "light"
	// (lightweight); c3 is the tip of branch feature, forked from c1.
	c1, c2, c3 string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{work: t.TempDir(), root: t.TempDir()}
	gittest.Run(t, f.work, "init", "--quiet", "--initial-branch=main")
	f.write(t, "main.tf", "# one\n", 0o644)
	f.write(t, "envs/prod/main.tf", "# prod\n", 0o644)
	f.write(t, "envs/prod/modules/net/main.tf", "# net\n", 0o600)
	f.write(t, "scripts/run.sh", "#!/bin/sh\n", 0o755)
	f.c1 = f.commit(t, "one")
	gittest.Run(t, f.work, "tag", "-a", "-m", "release", "v1.0.0")
	gittest.Run(t, f.work, "checkout", "--quiet", "-b", "feature")
	f.write(t, "feature.tf", "# feature\n", 0o644)
	f.c3 = f.commit(t, "three")
	gittest.Run(t, f.work, "checkout", "--quiet", "main")
	f.write(t, "main.tf", "# two\n", 0o644)
	f.c2 = f.commit(t, "two")
	gittest.Run(t, f.work, "tag", "light")
	gittest.Run(t, f.root, "init", "--quiet", "--bare", "--initial-branch=main", "repo.git")
	f.publish(t)
	return f
}

func (f *fixture) write(t *testing.T, name, content string, perm os.FileMode) {
	t.Helper()
	p := filepath.Join(f.work, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), perm))
	require.NoError(t, os.Chmod(p, perm))
}

func (f *fixture) commit(t *testing.T, msg string) string {
	t.Helper()
	gittest.Run(t, f.work, "add", "--all")
	gittest.Run(t, f.work, "commit", "--quiet", "-m", msg)
	return gittest.Run(t, f.work, "rev-parse", "HEAD")
}

// publish force-pushes every branch and tag to the served repository.
func (f *fixture) publish(t *testing.T) {
	t.Helper()
	gittest.Run(t, f.work, "push", "--quiet", "--force", f.bare(), "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*")
}

func (f *fixture) bare() string { return filepath.Join(f.root, "repo.git") }

// seenRequest is what the server saw of one request.
type seenRequest struct {
	url        string // path and query as sent
	user, pass string
	hasAuth    bool
}

// gitServer serves fixture repositories over smart HTTP with the real git
// http-backend, behind Basic auth that only accepts canaryToken.
type gitServer struct {
	*httptest.Server
	// hook, when set before the first request, runs before authentication
	// and may block.
	hook func(r *http.Request)
	// protocolV0 hides the client's Git-Protocol header, so that the
	// backend speaks protocol v0, which refuses unadvertised SHAs.
	protocolV0 bool

	mu   sync.Mutex
	seen []seenRequest
}

func newGitServer(t *testing.T, f *fixture, configure func(*gitServer)) *gitServer {
	t.Helper()
	backend := gittest.Backend(t, f.root)
	s := &gitServer{}
	if configure != nil {
		configure(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{url: r.URL.RequestURI(), user: user, pass: pass, hasAuth: ok})
		s.mu.Unlock()
		if s.hook != nil {
			s.hook(r)
		}
		if !ok || pass != canaryToken {
			w.Header().Set("WWW-Authenticate", `Basic realm="driftwatch-test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if s.protocolV0 {
			r.Header.Del("Git-Protocol")
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *gitServer) repoURL() string { return s.URL + "/repo.git" }

func (s *gitServer) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// writeCredentials writes content to a new credentials file.
func writeCredentials(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// readTree maps every entry under dir to a description: "dir" for
// directories, "-> target" for symlinks and "<mode> <content>" for regular
// files. Git only records the executable bit, and the umask decides the rest,
// so with exactPerm false the mode is "exec" or "file".
func readTree(t *testing.T, dir string, exactPerm bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		rel, err := filepath.Rel(dir, p)
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			out[rel] = "-> " + target
		case info.IsDir():
			out[rel] = "dir"
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			mode := info.Mode().Perm().String()
			if !exactPerm {
				mode = "file"
				if info.Mode().Perm()&0o100 != 0 {
					mode = "exec"
				}
			}
			out[rel] = mode + " " + string(b)
		default:
			out[rel] = info.Mode().String()
		}
		return nil
	})
	require.NoError(t, err)
	return out
}
