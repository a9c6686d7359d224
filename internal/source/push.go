package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Identity is a commit's author and committer.
type Identity struct{ Name, Email string }

// PushRequest is one commit to push: Files on top of Base.
type PushRequest struct {
	// Base is the full SHA the change is made on (what Checkout returned).
	Base string
	// Branch is the branch to push to (no refs/heads/ prefix).
	Branch string
	// Files maps repository-relative slash paths to their new content;
	// every other file keeps Base's.
	Files   map[string][]byte
	Message string
	Author  Identity
}

// PushResult is what a Push came to.
type PushResult struct {
	// Commit is the pushed commit.
	Commit string
	// Created is false when the branch already pointed at this very
	// commit (a repeated or concurrent push of the same change).
	Created bool
}

// Git modes of the entries a push may write.
const (
	modeFile = "100644"
	modeExec = "100755"
)

// Push commits req.Files on top of req.Base and pushes the commit to
// req.Branch of g's remote, with g's credentials (as Checkout fetches:
// the token only in the environment, never in an argument, a URL or an
// error).
//
// The commit is built with plumbing in the cache repository, under its
// lock, in a private index, and is deterministic: its author and
// committer are req.Author and its dates Base's committer date, so the
// same change on the same base is the same commit, and repeated or
// concurrent pushes of it give one branch (Created false for all but
// one). A branch that exists at another commit is moved (a lease on the
// tip seen) only when that tip is a commit of req.Author's, with one
// parent: a commit of an earlier push. A branch holding anything else
// is refused, naming the branch. Each file keeps its mode in Base (new
// files are 100644); a path that is a symlink, a submodule or a
// directory in Base is refused.
func (g Git) Push(ctx context.Context, cacheDir string, req PushRequest) (PushResult, error) {
	return g.push(ctx, cacheDir, req, nil)
}

func (g Git) push(ctx context.Context, cacheDir string, req PushRequest, observe execObserver) (PushResult, error) {
	spec, err := g.validate()
	if err == nil {
		err = req.check()
	}
	if err != nil {
		return PushResult{}, err
	}
	res, err := spec.push(ctx, g.CredentialsFile, cacheDir, req, observe)
	if err != nil {
		return PushResult{}, fmt.Errorf("git source %s: push to branch %q: %w", spec.url, req.Branch, err)
	}
	return res, nil
}

// check validates req without touching git.
func (req PushRequest) check() error {
	var errs []error
	if !isFullSHA(req.Base) {
		errs = append(errs, fmt.Errorf("push: base %q is not a full lower-case commit SHA", req.Base))
	}
	if err := checkBranch(req.Branch); err != nil {
		errs = append(errs, fmt.Errorf("push: branch %q: %w", req.Branch, err))
	}
	if len(req.Files) == 0 {
		errs = append(errs, errors.New("push: no files to commit"))
	}
	for _, p := range slices.Sorted(maps.Keys(req.Files)) {
		if err := checkRepoPath(p); err != nil {
			errs = append(errs, fmt.Errorf("push: file %q: %w", p, err))
		}
	}
	if strings.TrimSpace(req.Message) == "" {
		errs = append(errs, errors.New("push: the commit message is empty"))
	}
	for _, v := range []string{req.Author.Name, req.Author.Email} {
		if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "<>\n\r\x00") {
			errs = append(errs, errors.New("push: the author needs a name and an e-mail without <, > or line breaks"))
			break
		}
	}
	return errors.Join(errs...)
}

// checkBranch applies git check-ref-format's rules to refs/heads/name.
func checkBranch(name string) error {
	if name == "" {
		return errors.New("is empty")
	}
	if strings.HasPrefix(name, "refs/") || name == "HEAD" || name == "@" {
		return errors.New("want a branch name without refs/heads/")
	}
	if err := checkRef(name); err != nil {
		return err
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return errors.New("is not a valid branch name")
		}
	}
	if strings.HasSuffix(name, ".") {
		return errors.New("is not a valid branch name")
	}
	return nil
}

// checkRepoPath accepts a clean, relative slash path that stays inside
// the repository and touches no .git entry.
func checkRepoPath(p string) error {
	switch {
	case p == "" || strings.HasPrefix(p, "/"):
		return errors.New("want a relative path")
	case strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\\' }):
		return errors.New("contains a control character or a backslash")
	case path.Clean(p) != p:
		return errors.New("is not a clean slash path")
	}
	for part := range strings.SplitSeq(p, "/") {
		if part == ".." || part == "." {
			return errors.New("leaves the repository")
		}
		if strings.EqualFold(part, ".git") {
			return errors.New("names a .git entry")
		}
	}
	return nil
}

func (s gitSpec) push(ctx context.Context, credentialsFile, cacheDir string, req PushRequest, observe execObserver) (PushResult, error) {
	c, err := s.openCache(ctx, credentialsFile, cacheDir, observe)
	if err != nil {
		return PushResult{}, err
	}
	defer c.close()
	if _, err := fetch(ctx, c.r, c.repo, req.Base, true); err != nil {
		return PushResult{}, fmt.Errorf("base %s: %w", req.Base, err)
	}
	commit, err := c.commit(ctx, req)
	if err != nil {
		return PushResult{}, err
	}
	ref := "refs/heads/" + req.Branch
	tip, err := c.remoteRef(ctx, ref)
	if err != nil {
		return PushResult{}, err
	}
	switch tip {
	case commit:
		return PushResult{Commit: commit}, nil
	case "":
	default:
		if err := c.checkOurs(ctx, tip, req.Author); err != nil {
			return PushResult{}, err
		}
	}
	out, pushErr := c.r.run(ctx, nil, "--git-dir="+c.repo, "push", "--porcelain", "--no-verify",
		"--force-with-lease="+ref+":"+tip, "origin", commit+":"+ref)
	if pushErr == nil {
		// "=": another push got there first with this very commit (git
		// checks the lease only for a ref it has to change).
		return PushResult{Commit: commit, Created: !strings.Contains(out, "=\t"+commit+":"+ref+"\t")}, nil
	}
	if ctx.Err() != nil || errors.Is(pushErr, ErrAuthFailed) {
		return PushResult{}, pushErr
	}
	// Another push won the race: fine if it pushed this very commit.
	if now, err := c.remoteRef(ctx, ref); err == nil && now == commit {
		return PushResult{Commit: commit}, nil
	}
	return PushResult{}, pushErr
}

// commit writes req's commit into the cache repository, without moving
// any of its refs, and returns its SHA.
func (c *cacheRepo) commit(ctx context.Context, req PushRequest) (string, error) {
	git := func(env []string, args ...string) (string, error) {
		out, err := c.r.run(ctx, env, append([]string{"--git-dir=" + c.repo}, args...)...)
		return strings.TrimSpace(out), err
	}
	date, err := git(nil, "show", "--no-patch", "--format=%ct", req.Base)
	if err != nil {
		return "", err
	}
	if _, err := strconv.ParseInt(date, 10, 64); err != nil {
		return "", fmt.Errorf("base %s: unreadable committer date %q", req.Base, date)
	}
	paths := slices.Sorted(maps.Keys(req.Files))
	modes, err := c.modes(ctx, req.Base, paths)
	if err != nil {
		return "", err
	}
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(c.home, "push-index")}
	if _, err := git(index, "read-tree", req.Base); err != nil {
		return "", err
	}
	for i, p := range paths {
		blob := filepath.Join(c.home, "blob-"+strconv.Itoa(i))
		if err := os.WriteFile(blob, req.Files[p], 0o600); err != nil {
			return "", fmt.Errorf("file %q: %w", p, err)
		}
		sha, err := git(nil, "hash-object", "-w", "--no-filters", "--", blob)
		if err != nil {
			return "", err
		}
		if _, err := git(index, "update-index", "--add", "--cacheinfo", modes[p]+","+sha+","+p); err != nil {
			return "", err
		}
	}
	tree, err := git(index, "write-tree")
	if err != nil {
		return "", err
	}
	if baseTree, err := git(nil, "rev-parse", "--verify", "--end-of-options", req.Base+"^{tree}"); err != nil {
		return "", err
	} else if baseTree == tree {
		return "", errors.New("the files are as the base has them: nothing to commit")
	}
	stamp := date + " +0000"
	who := []string{
		"GIT_AUTHOR_NAME=" + req.Author.Name, "GIT_AUTHOR_EMAIL=" + req.Author.Email, "GIT_AUTHOR_DATE=" + stamp,
		"GIT_COMMITTER_NAME=" + req.Author.Name, "GIT_COMMITTER_EMAIL=" + req.Author.Email, "GIT_COMMITTER_DATE=" + stamp,
	}
	return git(who, "commit-tree", "--no-gpg-sign", "-p", req.Base, "-m", req.Message, tree)
}

// modes is the mode each path gets: Base's for a regular file, 100644
// for a new one. A path that is anything else in Base is refused.
func (c *cacheRepo) modes(ctx context.Context, base string, paths []string) (map[string]string, error) {
	out, err := c.r.run(ctx, nil, append([]string{"--git-dir=" + c.repo, "ls-tree", "-r", "-z", "--full-tree", base, "--"}, paths...)...)
	if err != nil {
		return nil, err
	}
	modes := map[string]string{}
	for _, p := range paths {
		modes[p] = modeFile
	}
	for entry := range strings.SplitSeq(strings.TrimSuffix(out, "\x00"), "\x00") {
		meta, p, ok := strings.Cut(entry, "\t")
		if !ok {
			continue
		}
		mode, _, _ := strings.Cut(meta, " ")
		if _, asked := modes[p]; !asked {
			for _, q := range paths {
				if strings.HasPrefix(p, q+"/") {
					return nil, fmt.Errorf("file %q: a directory in the base", q)
				}
			}
			continue
		}
		switch mode {
		case modeFile, modeExec:
			modes[p] = mode
		default:
			return nil, fmt.Errorf("file %q: not a regular file in the base (mode %s)", p, mode)
		}
	}
	return modes, nil
}

// remoteRef is ref's commit on the remote ("": no such ref).
func (c *cacheRepo) remoteRef(ctx context.Context, ref string) (string, error) {
	out, err := c.r.run(ctx, nil, "--git-dir="+c.repo, "ls-remote", "--refs", "origin", ref)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(out) {
		sha, name, _ := strings.Cut(strings.TrimSpace(line), "\t")
		if name == ref {
			return sha, nil
		}
	}
	return "", nil
}

// checkOurs fetches the branch's tip and fails unless it is a commit of
// author's with one parent: what an earlier push made.
func (c *cacheRepo) checkOurs(ctx context.Context, tip string, author Identity) error {
	if have, err := hasCommit(ctx, c.r, c.repo, tip); err != nil {
		return err
	} else if !have {
		if _, err := c.r.run(ctx, nil, fetchArgs(c.repo, tip, fetchShallow, false)...); err != nil {
			return err
		}
	}
	// The raw object: a shallow fetch hides the parents from log and show.
	out, err := c.r.run(ctx, nil, "--git-dir="+c.repo, "cat-file", "commit", tip)
	if err != nil {
		return err
	}
	header, _, _ := strings.Cut(out, "\n\n")
	parents, ours := 0, 0
	me := author.Name + " <" + author.Email + "> "
	for line := range strings.Lines(header) {
		key, val, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		switch key {
		case "parent":
			parents++
		case "author", "committer":
			if strings.HasPrefix(val, me) {
				ours++
			}
		}
	}
	if parents != 1 || ours != 2 {
		return fmt.Errorf("the branch exists with commits driftwatch did not make (tip %s); delete or rename it", tip)
	}
	return nil
}

// BaseBranch is the branch a change to g is proposed into: g.Ref when it
// names a branch of the remote (with or without refs/heads/), else the
// remote's default branch (the branch its HEAD names).
func (g Git) BaseBranch(ctx context.Context, cacheDir string) (string, error) {
	spec, err := g.validate()
	if err != nil {
		return "", err
	}
	branch, err := spec.baseBranch(ctx, g.CredentialsFile, cacheDir)
	if err != nil {
		return "", fmt.Errorf("git source %s (ref %q): base branch: %w", spec.url, spec.ref, err)
	}
	return branch, nil
}

func (s gitSpec) baseBranch(ctx context.Context, credentialsFile, cacheDir string) (string, error) {
	c, err := s.openCache(ctx, credentialsFile, cacheDir, nil)
	if err != nil {
		return "", err
	}
	defer c.close()
	args := []string{"--git-dir=" + c.repo, "ls-remote", "--symref", "origin", defaultRef}
	want := ""
	if name, ok := strings.CutPrefix(s.ref, "refs/heads/"); ok || (!s.isSHA && s.ref != defaultRef && !strings.HasPrefix(s.ref, "refs/")) {
		want = "refs/heads/" + name
		args = append(args, want)
	}
	out, err := c.r.run(ctx, nil, args...)
	if err != nil {
		return "", err
	}
	head := ""
	for line := range strings.Lines(out) {
		left, name, _ := strings.Cut(strings.TrimSpace(line), "\t")
		switch {
		case want != "" && name == want && !strings.HasPrefix(left, "ref: "):
			return strings.TrimPrefix(want, "refs/heads/"), nil
		case name == defaultRef && strings.HasPrefix(left, "ref: refs/heads/"):
			head = strings.TrimPrefix(left, "ref: refs/heads/")
		}
	}
	if head == "" {
		return "", errors.New("the remote names no default branch (HEAD)")
	}
	return head, nil
}
