package propose

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/remediation/accept"
	"github.com/driftwatch/driftwatch/internal/source"
)

// DefaultBranchPrefix starts a branch's name when a Request names no
// prefix.
const DefaultBranchPrefix = "driftwatch/accept"

// A branch name's bounds: the workspace's slug and the change's hash.
const (
	maxSlug = 40
	hashLen = 10
)

// DefaultAuthor is the commit's author and committer where a Request
// leaves the name or the e-mail empty.
var DefaultAuthor = source.Identity{Name: "driftwatch", Email: "driftwatch@localhost"}

// Request is a proven change to propose.
type Request struct {
	Workspace string
	// Git is the workspace's source (URL, Ref, Path, CredentialsFile).
	Git source.Git
	// CacheDir is the git cache the checkout used (terraform.Request.
	// GitCacheDir, or the default sandbox.PrepareSource takes when that
	// is empty); required.
	CacheDir string
	// Commit is the commit accepted against (engine.AcceptOutcome.Commit).
	Commit string
	// Change is the proven change; its Files are relative to Git.Path.
	Change *accept.Result
	// Tool is the Terraform or OpenTofu version that proved it.
	Tool string
	// Link is the workspace's page ("" if none).
	Link string
	// Opener opens the pull or merge request.
	Opener notify.ChangeOpener
	// Repository is the repository path the opener knows ("":
	// RepositoryOf(Git.URL)).
	Repository string
	// BranchPrefix starts the branch's name ("": DefaultBranchPrefix).
	BranchPrefix string
	// Author is the commit's author and committer (DefaultAuthor's name
	// or e-mail where empty).
	Author source.Identity
	Labels []string
}

// Proposal is the pushed branch and the request proposing it.
type Proposal struct {
	// Branch is the pushed branch, Base the branch it is proposed into,
	// Commit the pushed commit.
	Branch, Base, Commit string
	notify.ChangeProposal
}

// Propose pushes req.Change as one commit on req.Commit to a branch named
// after the workspace and the change (Branch), and opens a pull or merge
// request of it into the source's base branch (source.Git.BaseBranch)
// through req.Opener. The same change proposes the same branch, commit
// and request: a repeated Propose finds them (Existing), and concurrent
// ones in this process are serialised per branch, so they give one
// branch and one request.
func Propose(ctx context.Context, req Request) (Proposal, error) {
	files, err := repoFiles(req)
	if err != nil {
		return Proposal{}, fmt.Errorf("propose %s: %w", req.Workspace, err)
	}
	repo := req.Repository
	if repo == "" {
		if repo, err = RepositoryOf(req.Git.URL); err != nil {
			return Proposal{}, fmt.Errorf("propose %s: %w", req.Workspace, err)
		}
	}
	branch := Branch(cmp.Or(req.BranchPrefix, DefaultBranchPrefix), req.Workspace, files)
	unlock, err := lock(ctx, branch)
	if err != nil {
		return Proposal{}, fmt.Errorf("propose %s: %w", req.Workspace, err)
	}
	defer unlock()

	base, err := req.Git.BaseBranch(ctx, req.CacheDir)
	if err != nil {
		return Proposal{}, fmt.Errorf("propose %s: %w", req.Workspace, err)
	}
	author := source.Identity{Name: cmp.Or(req.Author.Name, DefaultAuthor.Name), Email: cmp.Or(req.Author.Email, DefaultAuthor.Email)}
	title := Title(req.Workspace, req.Change)
	pushed, err := req.Git.Push(ctx, req.CacheDir, source.PushRequest{
		Base: req.Commit, Branch: branch, Files: files, Message: commitMessage(title, req), Author: author,
	})
	if err != nil {
		return Proposal{}, fmt.Errorf("propose %s: %w", req.Workspace, err)
	}
	cp, err := req.Opener.OpenChange(ctx, notify.ChangeRequest{
		Repository: repo, Head: branch, Base: base, Title: title, Body: Body(req), Labels: req.Labels,
	})
	if err != nil {
		return Proposal{}, fmt.Errorf("propose %s: branch %s pushed (commit %s): %w", req.Workspace, branch, pushed.Commit, err)
	}
	return Proposal{Branch: branch, Base: base, Commit: pushed.Commit, ChangeProposal: cp}, nil
}

// repoFiles is the change's files by repository path (Git.Path joined to
// each), checked before anything runs.
func repoFiles(req Request) (map[string][]byte, error) {
	switch {
	case strings.TrimSpace(req.Workspace) == "":
		return nil, errors.New("no workspace")
	case req.Opener == nil:
		return nil, errors.New("no pull or merge request opener (a github or gitlab notifier)")
	case req.CacheDir == "":
		return nil, errors.New("no git cache directory: pass the one the checkout used (terraform.Request.GitCacheDir, or the default when that is empty)")
	case req.Commit == "":
		return nil, errors.New("no commit the change was made on (a git source's)")
	case req.Change == nil || len(req.Change.Files) == 0 || len(req.Change.Accepted) == 0:
		return nil, errors.New("no change to propose")
	}
	files := make(map[string][]byte, len(req.Change.Files))
	for _, f := range req.Change.Files {
		p := repoPath(req.Git.Path, f.Path)
		if !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../") {
			files[p] = f.New
			continue
		}
		return nil, fmt.Errorf("file %q is outside the repository", f.Path)
	}
	return files, nil
}

// repoPath is p, relative to the root module in subdirectory dir of the
// repository, as a repository path.
func repoPath(dir, p string) string {
	return path.Join(strings.Trim(dir, "/"), p)
}

// Branch is the branch of a change: prefix, then a slug of the workspace
// and ten hex digits of a SHA-256 over the files' paths and new contents
// in path order: the same change of the same workspace is the same
// branch.
func Branch(prefix, workspace string, files map[string][]byte) string {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(files)) {
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write(files[p])
		h.Write([]byte{0})
	}
	return strings.TrimSuffix(prefix, "/") + "/" + slug(workspace) + "-" + hex.EncodeToString(h.Sum(nil))[:hashLen]
}

// slug is s as a branch name part: its runs of lower-case letters and
// digits joined by dashes, at most maxSlug long ("workspace" if none).
func slug(s string) string {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') })
	out := strings.Join(words, "-")
	if len(out) > maxSlug {
		out = strings.TrimRight(out[:maxSlug], "-")
	}
	return cmp.Or(out, "workspace")
}

// RepositoryOf is the repository path of a git URL, as the forges name
// it: https://host/acme/infra.git is acme/infra, and GitLab's subgroups
// are kept (https://host/group/sub/infra is group/sub/infra).
func RepositoryOf(gitURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(gitURL))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", errors.New("the git source's url is not an http(s) URL, so it names no repository to propose to")
	}
	p := strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	if strings.Count(p, "/") < 1 || slices.Contains(strings.Split(p, "/"), "") {
		return "", errors.New("the git source's url names no owner/name repository path to propose to")
	}
	return p, nil
}

// branchLocks serialise the proposals of one branch in this process.
var branchLocks = struct {
	sync.Mutex
	m map[string]*branchLock
}{m: map[string]*branchLock{}}

type branchLock struct {
	ch    chan struct{}
	users int
}

// lock takes branch's lock, or fails when ctx ends first.
func lock(ctx context.Context, branch string) (unlock func(), err error) {
	branchLocks.Lock()
	l := branchLocks.m[branch]
	if l == nil {
		l = &branchLock{ch: make(chan struct{}, 1)}
		branchLocks.m[branch] = l
	}
	l.users++
	branchLocks.Unlock()
	release := func() {
		branchLocks.Lock()
		if l.users--; l.users == 0 {
			delete(branchLocks.m, branch)
		}
		branchLocks.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, fmt.Errorf("waiting for another proposal of branch %s: %w", branch, context.Cause(ctx))
	}
}
