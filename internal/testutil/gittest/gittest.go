package gittest

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Run runs git with args in dir, isolated from the machine's
// configuration (HOME is dir), with a fixed author and committer, and
// returns its output, trimmed; it fails the test if git does.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=driftwatch", "GIT_AUTHOR_EMAIL=test@driftwatch.invalid",
		"GIT_COMMITTER_NAME=driftwatch", "GIT_COMMITTER_EMAIL=test@driftwatch.invalid",
		"LC_ALL=C",
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// Backend is git http-backend serving the repositories under root (every
// one exported; pushes too, for a repository whose http.receivepack is
// true).
func Backend(t testing.TB, root string) *cgi.Handler {
	t.Helper()
	return &cgi.Handler{
		Path: filepath.Join(Run(t, root, "--exec-path"), "git-http-backend"),
		Dir:  root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"HOME=" + root,
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
		},
	}
}

// Server serves the bare repositories under a directory over HTTP on
// 127.0.0.1, to clients whose Basic auth password is Token; pushes are
// allowed.
type Server struct {
	*httptest.Server
	// Root holds the repositories.
	Root string
	// Token is the only password accepted.
	Token string

	mu   sync.Mutex
	urls []string
}

// NewServer serves a new, empty directory of repositories until the test
// ends; only token is accepted.
func NewServer(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{Root: t.TempDir(), Token: token}
	backend := Backend(t, s.Root)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.urls = append(s.urls, r.URL.RequestURI())
		s.mu.Unlock()
		if _, pw, ok := r.BasicAuth(); !ok || pw != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Publish creates the bare repository name (e.g. "acme/infra.git") with
// branch main holding files (slash paths), committed once, and returns
// its clone URL and the commit.
func (s *Server) Publish(t testing.TB, name string, files map[string]string) (url, commit string) {
	t.Helper()
	bare := filepath.Join(s.Root, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(bare, 0o755))
	Run(t, bare, "init", "--quiet", "--bare", "--initial-branch=main")
	Run(t, bare, "config", "http.receivepack", "true")
	work := t.TempDir()
	Run(t, work, "init", "--quiet", "--initial-branch=main")
	for p, content := range files {
		f := filepath.Join(work, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, []byte(content), 0o644))
	}
	Run(t, work, "add", "--all")
	Run(t, work, "commit", "--quiet", "-m", "initial")
	Run(t, work, "push", "--quiet", bare, "main")
	return s.URL + "/" + name, Run(t, work, "rev-parse", "HEAD")
}

// Bare is the directory of repository name.
func (s *Server) Bare(name string) string { return filepath.Join(s.Root, filepath.FromSlash(name)) }

// URLs are the request URIs received, in order.
func (s *Server) URLs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.urls...)
}
