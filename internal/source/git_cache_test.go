package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/gittest"
)

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
	require.Equal(t, "true", gittest.Run(t, repo, "--git-dir="+repo, "rev-parse", "--is-shallow-repository"))

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
