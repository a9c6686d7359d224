package source

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// blameFixture is a history in which two authors change two resources of
// envs/prod/main.tf, followed by commits that touch neither.
type blameFixture struct {
	*fixture
	alice, bob string // the commits that last changed bucket and queue
	tip        string
}

const blameV1 = `resource "aws_s3_bucket" "logs" {
  bucket = "logs"
}

resource "aws_sqs_queue" "jobs" {
  name = "jobs"
}
`

const blameV2 = `resource "aws_s3_bucket" "logs" {
  bucket = "logs-v2"
}

resource "aws_sqs_queue" "jobs" {
  name = "jobs"
}
`

const blameV3 = `resource "aws_s3_bucket" "logs" {
  bucket = "logs-v2"
}

resource "aws_sqs_queue" "jobs" {
  name       = "jobs"
  fifo_queue = false
}
`

// blameGit runs git in dir for these fixtures through the package's own
// runner and environment (no machine or user configuration), committing as
// driftwatch; authors are given per commit.
func blameGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	r := &gitRunner{dir: dir, env: gitEnv(os.Environ(), t.TempDir(), nil)}
	out, err := r.run(t.Context(), []string{"GIT_COMMITTER_NAME=driftwatch", "GIT_COMMITTER_EMAIL=test@driftwatch.invalid"}, args...)
	require.NoError(t, err)
	return strings.TrimSpace(out)
}

func newBlameFixture(t *testing.T) *blameFixture {
	t.Helper()
	f := &blameFixture{fixture: &fixture{work: t.TempDir(), root: t.TempDir()}}
	blameGit(t, f.work, "init", "--quiet", "--initial-branch=main")
	commitAs := func(who, date, msg string) string {
		blameGit(t, f.work, "add", "--all")
		blameGit(t, f.work, "commit", "--quiet", "--author="+who, "--date="+date, "-m", msg)
		return blameGit(t, f.work, "rev-parse", "HEAD")
	}
	f.write(t, "envs/prod/main.tf", blameV1, 0o644)
	commitAs("Carol <carol@example.com>", "2026-11-01T09:00:00Z", "prod: bucket and queue")
	f.write(t, "envs/prod/main.tf", blameV2, 0o644)
	f.alice = commitAs("Alice <alice@example.com>", "2026-11-02T10:00:00Z", "prod: rename the logs bucket\n\nBecause.")
	f.write(t, "envs/prod/main.tf", blameV3, 0o644)
	f.bob = commitAs("Bob <bob@example.com>", "2026-11-03T11:00:00Z", "prod: jobs is not FIFO")
	// Commits that do not touch the two blocks push them behind a
	// one-commit-deep cache's boundary.
	for i := range 3 {
		f.write(t, "README.md", strings.Repeat("x", i+1), 0o644)
		f.tip = commitAs("Dan <dan@example.com>", "2026-11-04T12:00:00Z", "docs")
	}
	blameGit(t, f.root, "init", "--quiet", "--bare", "--initial-branch=main", "repo.git")
	f.publish(t)
	return f
}

func TestLastChange(t *testing.T) {
	f := newBlameFixture(t)
	srv := newGitServer(t, f.fixture, nil)
	creds := writeCredentials(t, canaryToken)
	cache := t.TempDir()
	g := Git{URL: srv.repoURL(), Ref: "main", Path: "envs/prod", CredentialsFile: creds}

	// Checkout leaves a one-commit-deep cache.
	moduleDir, commit, err := g.Checkout(t.Context(), cache, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, f.tip, commit)
	repo := filepath.Join(cache, "git", cacheKey(srv.repoURL())+".git")
	require.Equal(t, "true", blameGit(t, repo, "--git-dir="+repo, "rev-parse", "--is-shallow-repository"))
	src, err := os.ReadFile(filepath.Join(moduleDir, "main.tf"))
	require.NoError(t, err)

	var (
		mu   sync.Mutex
		argv [][]string
		envs [][]string
	)
	observe := func(a, e []string) {
		mu.Lock()
		defer mu.Unlock()
		argv, envs = append(argv, a), append(envs, e)
	}
	for _, tt := range []struct {
		address string
		want    Change
	}{
		{address: "aws_s3_bucket.logs", want: Change{
			Commit: f.alice, Author: "Alice", Email: "alice@example.com",
			Time: time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), Subject: "prod: rename the logs bucket",
		}},
		{address: "module.x.aws_sqs_queue.jobs[0]", want: Change{
			Commit: f.bob, Author: "Bob", Email: "bob@example.com",
			Time: time.Date(2026, 11, 3, 11, 0, 0, 0, time.UTC), Subject: "prod: jobs is not FIFO",
		}},
	} {
		start, end, found, err := BlockLines("main.tf", src, tt.address)
		require.NoError(t, err)
		require.True(t, found)
		got, err := g.lastChange(t.Context(), cache, commit, "main.tf", start, end, observe)
		require.NoError(t, err, tt.address)
		require.Equal(t, tt.want.Commit, got.Commit, tt.address)
		require.True(t, tt.want.Time.Equal(got.Time), tt.address)
		got.Time = tt.want.Time
		require.Equal(t, tt.want, got, tt.address)
	}

	// The cache was deepened, not unshallowed, by a fetch like Checkout's:
	// the token only in the header's variable, never in an argument.
	var fetches []string
	for _, a := range argv {
		requireNoSecret(t, strings.Join(a, " "), canaryToken)
		if slices.Contains(a, "fetch") {
			fetches = append(fetches, strings.Join(a, " "))
		}
	}
	require.Len(t, fetches, 1)
	require.Contains(t, fetches[0], "--deepen=50")
	for _, e := range envs {
		for _, kv := range e {
			if !strings.Contains(kv, "Authorization") {
				requireNoSecret(t, kv, canaryToken)
			}
		}
	}
	for _, r := range srv.requests() {
		requireNoSecret(t, r.url, canaryToken)
		require.True(t, r.hasAuth)
	}

	// Asked again, the deepened cache answers without a request.
	before := len(srv.requests())
	got, err := g.LastChange(t.Context(), cache, commit, "main.tf", 1, 3)
	require.NoError(t, err)
	require.Equal(t, f.alice, got.Commit)
	require.Len(t, srv.requests(), before)
}

// TestLastChangeUnshallows: a server that refuses a commit as a want
// (protocol v0 without allow*SHA1InWant: the commit is no longer a
// branch's tip) gets the whole history fetched.
func TestLastChangeUnshallows(t *testing.T) {
	f := newBlameFixture(t)
	blameGit(t, f.root, "--git-dir="+f.bare(), "config", "uploadpack.allowReachableSHA1InWant", "false")
	blameGit(t, f.root, "--git-dir="+f.bare(), "config", "uploadpack.allowAnySHA1InWant", "false")
	srv := newGitServer(t, f.fixture, func(s *gitServer) { s.protocolV0 = true })
	cache := t.TempDir()
	g := Git{URL: srv.repoURL(), Path: "envs/prod", CredentialsFile: writeCredentials(t, canaryToken)}
	_, commit, err := g.Checkout(t.Context(), cache, t.TempDir())
	require.NoError(t, err)
	f.write(t, "README.md", "moved on", 0o644)
	f.commit(t, "moved on")
	f.publish(t)

	var fetches [][]string
	got, err := g.lastChange(t.Context(), cache, commit, "main.tf", 5, 8, func(a, _ []string) {
		if slices.Contains(a, "fetch") {
			fetches = append(fetches, a)
		}
	})
	require.NoError(t, err)
	require.Equal(t, f.bob, got.Commit)
	require.Equal(t, "Bob", got.Author)
	require.Len(t, fetches, 2)
	require.Contains(t, fetches[0], "--deepen=50")
	require.Contains(t, fetches[1], "--unshallow")
	repo := filepath.Join(cache, "git", cacheKey(srv.repoURL())+".git")
	require.Equal(t, "false", blameGit(t, repo, "--git-dir="+repo, "rev-parse", "--is-shallow-repository"))
}

func TestLastChangeErrors(t *testing.T) {
	f := newBlameFixture(t)
	srv := newGitServer(t, f.fixture, nil)
	creds := writeCredentials(t, canaryToken)
	g := Git{URL: srv.repoURL(), Path: "envs/prod", CredentialsFile: creds}
	cache := t.TempDir()
	tests := []struct {
		name    string
		git     Git
		commit  string
		path    string
		lines   [2]int
		wantErr string
	}{
		{name: "abbreviated commit", git: g, commit: f.tip[:12], path: "main.tf", lines: [2]int{1, 3}, wantErr: "commit must be a full SHA"},
		{name: "empty range", git: g, commit: f.tip, path: "main.tf", lines: [2]int{3, 2}, wantErr: "line range must be 1-based and not empty"},
		{name: "escaping path", git: g, commit: f.tip, path: "../../../etc/passwd", lines: [2]int{1, 1}, wantErr: `path "../../../etc/passwd" must be relative`},
		{name: "missing file", git: g, commit: f.tip, path: "nope.tf", lines: [2]int{1, 1}, wantErr: "git log: exit status 128"},
		{name: "wrong token", git: Git{URL: g.URL, Path: g.Path, CredentialsFile: writeCredentials(t, "ghp_WRONG_TOKEN_0123456789abcdef")}, commit: strings.Repeat("ab", 20), path: "main.tf", lines: [2]int{1, 1}, wantErr: ErrAuthFailed.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.git.LastChange(t.Context(), cache, tt.commit, tt.path, tt.lines[0], tt.lines[1])
			require.ErrorContains(t, err, tt.wantErr)
			requireNoSecret(t, err.Error(), canaryToken, "ghp_WRONG_TOKEN_0123456789abcdef")
		})
	}
}

func TestBlockLines(t *testing.T) {
	src := []byte(`# header
resource "aws_s3_bucket" "logs" {
  bucket = "logs"
  tags = {
    team = "data"
  }
}

data "aws_iam_policy_document" "logs" {
  statement {}
}

resource "aws_s3_bucket" "logs" {
}
`)
	tests := []struct {
		address    string
		start, end int
		found      bool
		wantErr    string
	}{
		{address: "aws_s3_bucket.logs", start: 2, end: 7, found: true},
		{address: `module.a["x.y"].aws_s3_bucket.logs[0]`, start: 2, end: 7, found: true},
		{address: "data.aws_iam_policy_document.logs", start: 9, end: 11, found: true},
		{address: "aws_iam_policy_document.logs"},
		{address: "aws_s3_bucket.other"},
		{address: "module.a", wantErr: `address "module.a" does not name a resource`},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			start, end, found, err := BlockLines("main.tf", src, tt.address)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.found, found)
			require.Equal(t, [2]int{tt.start, tt.end}, [2]int{start, end})
		})
	}
	_, _, _, err := BlockLines("bad.tf", []byte("resource {"), "a.b")
	require.ErrorContains(t, err, "bad.tf:1,")
}
