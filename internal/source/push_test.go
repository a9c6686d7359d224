package source

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/gittest"
)

// pushServer serves f with pushes allowed (git http-backend refuses
// receive-pack by default without REMOTE_USER).
func pushServer(t *testing.T, f *fixture) (*gitServer, Git) {
	t.Helper()
	gittest.Run(t, f.bare(), "config", "http.receivepack", "true")
	srv := newGitServer(t, f, nil)
	return srv, Git{URL: srv.repoURL(), Ref: "main", CredentialsFile: writeCredentials(t, canaryToken+"\n")}
}

var bot = Identity{Name: "driftwatch", Email: "driftwatch@localhost"}

func pushReq(f *fixture, branch string) PushRequest {
	return PushRequest{
		Base:   f.c2,
		Branch: branch,
		Files: map[string][]byte{
			"envs/prod/main.tf":  []byte("# prod, accepted\n"),
			"scripts/run.sh":     []byte("#!/bin/sh\nexit 0\n"),
			"envs/prod/extra.tf": []byte("# new\n"),
		},
		Message: "driftwatch: accept drift\n\nbody",
		Author:  bot,
	}
}

// branchTree checks branch out (with Checkout, as a workspace would) and
// returns its tree and commit.
func branchTree(t *testing.T, g Git, branch string) (map[string]string, string) {
	t.Helper()
	g.Ref = branch
	dst := t.TempDir()
	dir, commit, err := g.Checkout(t.Context(), t.TempDir(), dst)
	require.NoError(t, err)
	return readTree(t, dir, false), commit
}

func TestPush(t *testing.T) {
	f := newFixture(t)
	_, g := pushServer(t, f)
	req := pushReq(f, "driftwatch/accept/prod-0123456789")

	var argv, env [][]string
	var mu sync.Mutex
	res, err := g.push(t.Context(), t.TempDir(), req, func(a, e []string) {
		mu.Lock()
		defer mu.Unlock()
		argv, env = append(argv, a), append(env, e)
	})
	require.NoError(t, err)
	require.True(t, res.Created)
	require.Len(t, res.Commit, 40)

	want := mainTree()
	want["envs/prod/main.tf"] = "file # prod, accepted\n"
	want["envs/prod/extra.tf"] = "file # new\n"
	want["scripts/run.sh"] = "exec #!/bin/sh\nexit 0\n" // keeps its mode
	tree, commit := branchTree(t, g, req.Branch)
	require.Equal(t, want, tree)
	require.Equal(t, res.Commit, commit)

	// One commit on the base, by the author, dated as the base.
	log := gittest.Run(t, f.root, "--git-dir="+f.bare(), "log", "--format=%P|%an <%ae>|%cn <%ce>|%ct|%B", "-1", res.Commit)
	baseDate := gittest.Run(t, f.root, "--git-dir="+f.bare(), "log", "--format=%ct", "-1", f.c2)
	require.Equal(t, f.c2+"|driftwatch <driftwatch@localhost>|driftwatch <driftwatch@localhost>|"+baseDate+"|driftwatch: accept drift\n\nbody", log)

	// The token is never an argument; only the header variable carries it.
	require.NotEmpty(t, argv)
	for _, a := range argv {
		requireNoSecret(t, strings.Join(a, " "), canaryToken)
	}
	for _, e := range env {
		for _, kv := range e {
			if !strings.HasPrefix(kv, "GIT_CONFIG_VALUE_") || !strings.Contains(kv, "Authorization: Basic ") {
				requireNoSecret(t, kv, canaryToken)
			}
		}
	}

	// Again, from another cache: the same commit, nothing created.
	again, err := g.Push(t.Context(), t.TempDir(), req)
	require.NoError(t, err)
	require.Equal(t, PushResult{Commit: res.Commit}, again)
}

func TestPushConcurrent(t *testing.T) {
	f := newFixture(t)
	_, g := pushServer(t, f)
	req := pushReq(f, "driftwatch/accept/race")
	shared := t.TempDir()

	const n = 10
	results := make([]PushResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cache := shared // half share a cache (its lock serialises them) ...
		if i%2 == 1 {
			cache = t.TempDir() // ... half race at the server
		}
		wg.Go(func() { results[i], errs[i] = g.Push(t.Context(), cache, req) })
	}
	wg.Wait()
	created := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, results[0].Commit, results[i].Commit)
		if results[i].Created {
			created++
		}
	}
	require.Equal(t, 1, created)
	_, commit := branchTree(t, g, req.Branch)
	require.Equal(t, results[0].Commit, commit)
}

func TestPushMovesItsOwnBranchOnly(t *testing.T) {
	f := newFixture(t)
	_, g := pushServer(t, f)
	cache := t.TempDir()

	// A branch of an earlier push, on an older base: moved to the new commit.
	old := pushReq(f, "driftwatch/accept/prod")
	old.Base = f.c1
	first, err := g.Push(t.Context(), cache, old)
	require.NoError(t, err)
	second, err := g.Push(t.Context(), cache, pushReq(f, "driftwatch/accept/prod"))
	require.NoError(t, err)
	require.True(t, second.Created)
	require.NotEqual(t, first.Commit, second.Commit)
	_, tip := branchTree(t, g, "driftwatch/accept/prod")
	require.Equal(t, second.Commit, tip)

	// A branch someone else committed to: refused, left as it is.
	gittest.Run(t, f.work, "checkout", "--quiet", "-b", "driftwatch/accept/theirs")
	f.write(t, "theirs.tf", "# theirs\n", 0o644)
	theirs := f.commit(t, "theirs")
	f.publish(t)
	_, err = g.Push(t.Context(), cache, pushReq(f, "driftwatch/accept/theirs"))
	require.ErrorContains(t, err, `branch "driftwatch/accept/theirs"`)
	require.ErrorContains(t, err, "exists with commits driftwatch did not make")
	_, tip = branchTree(t, g, "driftwatch/accept/theirs")
	require.Equal(t, theirs, tip)

	// Another identity is not driftwatch either.
	other := pushReq(f, "driftwatch/accept/prod")
	other.Author = Identity{Name: "someone", Email: "someone@example.com"}
	_, err = g.Push(t.Context(), cache, other)
	require.ErrorContains(t, err, "exists with commits driftwatch did not make")
}

func TestPushRefusesWhatItCannotWrite(t *testing.T) {
	f := newFixture(t)
	_, g := pushServer(t, f)

	// Checked before git runs.
	bad := []struct {
		name   string
		change func(*PushRequest)
		want   string
	}{
		{"dot-dot", func(r *PushRequest) { r.Files["../outside.tf"] = nil }, "leaves the repository"},
		{"inner dot-dot", func(r *PushRequest) { r.Files["envs/../../x.tf"] = nil }, "not a clean slash path"},
		{"absolute", func(r *PushRequest) { r.Files["/etc/passwd"] = nil }, "want a relative path"},
		{".git", func(r *PushRequest) { r.Files[".git/config"] = nil }, "names a .git entry"},
		{".GIT below", func(r *PushRequest) { r.Files["envs/.GIT/hooks/x"] = nil }, "names a .git entry"},
		{"backslash", func(r *PushRequest) { r.Files[`envs\x.tf`] = nil }, "backslash"},
		{"empty path", func(r *PushRequest) { r.Files[""] = nil }, "want a relative path"},
		{"no files", func(r *PushRequest) { r.Files = nil }, "no files"},
		{"refs prefix", func(r *PushRequest) { r.Branch = "refs/heads/x" }, "without refs/heads/"},
		{"option", func(r *PushRequest) { r.Branch = "-x" }, "must not start with"},
		{"dot-dot branch", func(r *PushRequest) { r.Branch = "a..b" }, "not a valid ref name"},
		{"lock", func(r *PushRequest) { r.Branch = "a/b.lock" }, "not a valid"},
		{"hidden part", func(r *PushRequest) { r.Branch = "a/.b" }, "not a valid branch name"},
		{"space", func(r *PushRequest) { r.Branch = "a b" }, "character not allowed"},
		{"short base", func(r *PushRequest) { r.Base = f.c2[:12] }, "not a full lower-case commit SHA"},
		{"no author", func(r *PushRequest) { r.Author = Identity{} }, "needs a name and an e-mail"},
		{"author injection", func(r *PushRequest) { r.Author.Email = "a@b>\ncommitter x" }, "needs a name and an e-mail"},
		{"no message", func(r *PushRequest) { r.Message = " " }, "message is empty"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			req := pushReq(f, "driftwatch/accept/x")
			tt.change(&req)
			ran := false
			_, err := g.push(t.Context(), t.TempDir(), req, func(_, _ []string) { ran = true })
			require.ErrorContains(t, err, tt.want)
			require.False(t, ran, "git ran")
		})
	}

	// Checked against the base.
	for name, tt := range map[string]struct {
		files map[string][]byte
		want  string
	}{
		"directory":  {map[string][]byte{"envs/prod": []byte("x")}, `file "envs/prod": a directory in the base`},
		"no change":  {map[string][]byte{"main.tf": []byte("# two\n")}, "nothing to commit"},
		"under file": {map[string][]byte{"main.tf/x.tf": []byte("x")}, "update-index"},
	} {
		t.Run(name, func(t *testing.T) {
			req := pushReq(f, "driftwatch/accept/x")
			req.Files = tt.files
			_, err := g.Push(t.Context(), t.TempDir(), req)
			require.ErrorContains(t, err, tt.want)
			requireNoSecret(t, err.Error(), canaryToken)
		})
	}
	require.Empty(t, gittest.Run(t, f.root, "--git-dir="+f.bare(), "branch", "--list", "driftwatch/*"))
}

func TestPushWithWrongToken(t *testing.T) {
	f := newFixture(t)
	_, g := pushServer(t, f)
	cache := t.TempDir()
	_, _, err := g.Checkout(t.Context(), cache, t.TempDir()) // the base is in the cache
	require.NoError(t, err)
	const wrong = "ghp_WRONG_TOKEN_0123456789abcdef"
	g.CredentialsFile = writeCredentials(t, wrong)
	_, err = g.Push(t.Context(), cache, pushReq(f, "driftwatch/accept/x"))
	require.ErrorIs(t, err, ErrAuthFailed)
	requireNoSecret(t, err.Error(), canaryToken, wrong)
}

func TestBaseBranch(t *testing.T) {
	f := newFixture(t)
	srv := newGitServer(t, f, nil)
	creds := writeCredentials(t, canaryToken)
	cache := t.TempDir()
	for ref, want := range map[string]string{
		"":                   "main",
		"HEAD":               "main",
		"main":               "main",
		"feature":            "feature",
		"refs/heads/feature": "feature",
		"v1.0.0":             "main", // a tag
		"refs/tags/v1.0.0":   "main",
		"light":              "main",
		f.c3:                 "main", // a commit
		"no-such-branch":     "main",
	} {
		t.Run(ref, func(t *testing.T) {
			got, err := Git{URL: srv.repoURL(), Ref: ref, CredentialsFile: creds}.BaseBranch(t.Context(), cache)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}

	// The remote's default branch is what its HEAD names.
	gittest.Run(t, f.bare(), "symbolic-ref", "HEAD", "refs/heads/feature")
	got, err := Git{URL: srv.repoURL(), CredentialsFile: creds}.BaseBranch(t.Context(), cache)
	require.NoError(t, err)
	require.Equal(t, "feature", got)
}
