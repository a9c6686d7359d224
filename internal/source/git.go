package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

const (
	// defaultRef is what an empty Git.Ref means: the remote's default branch.
	defaultRef = "HEAD"
	// defaultUser is the Basic auth username sent with a bare token. GitHub
	// documents it for installation tokens; GitLab and Gitea ignore the
	// username when the password is a token.
	defaultUser = "x-access-token"
)

// ErrAuthFailed is wrapped by Checkout errors caused by the server rejecting
// (or demanding) credentials. Retrying will not help until the credentials
// file changes.
var ErrAuthFailed = errors.New("authentication failed")

// Git describes a remote repository.
type Git struct {
	// URL is https://host/org/repo.git (http:// only for loopback hosts when
	// credentials are set, file:// or a local path for tests). It must not
	// contain userinfo or a query.
	URL string
	// Ref is a branch, tag or full commit SHA; "" means "HEAD", the remote's
	// default branch. Abbreviated SHAs are not supported: a server can only
	// be asked for full object names.
	Ref string
	// Path is the subdirectory, slash-separated, holding the root module;
	// "" means the repository root.
	Path string
	// CredentialsFile optionally names a file holding the token (surrounding
	// whitespace trimmed). The form "user:token" sets the Basic auth
	// username; a bare token is sent with the username "x-access-token". The
	// file is read on every Checkout, so rotating it needs no restart.
	CredentialsFile string
}

// execObserver sees the argv and environment of every git process just before
// it starts. It is nil outside tests.
type execObserver func(args, env []string)

// Checkout fetches g into a cache under cacheDir and materialises the tree
// of Ref into dst, an existing empty directory, without .git. It returns the
// absolute module directory (dst/Path) and the resolved commit SHA.
//
// The cache holds one bare repository per URL, named by a hash of the URL,
// and is reused across calls and processes: each fetch is shallow, and a SHA
// already in the cache is not fetched again. Calls for the same URL are
// serialised by an flock on a file next to that repository, so daemons may
// share cacheDir. Cancelling ctx stops git (its whole process group) and the
// returned error then satisfies errors.Is with ctx.Err(). Errors caused by
// the server rejecting the credentials wrap ErrAuthFailed.
//
// The checkout fails, naming the entry, if the tree holds a symlink that is
// absolute or leads outside dst (checkTree), so that every file under dst
// is the repository's own. On error dst may hold part of the tree; the
// caller discards it.
func (g Git) Checkout(ctx context.Context, cacheDir, dst string) (moduleDir, commit string, err error) {
	return g.checkout(ctx, cacheDir, dst, nil)
}

func (g Git) checkout(ctx context.Context, cacheDir, dst string, observe execObserver) (string, string, error) {
	spec, err := g.validate()
	if err != nil {
		return "", "", err
	}
	moduleDir, commit, err := spec.checkout(ctx, g.CredentialsFile, cacheDir, dst, observe)
	if err != nil {
		// spec.url is free of credentials: validate rejected userinfo.
		return "", "", fmt.Errorf("git source %s (ref %q): %w", spec.url, spec.ref, err)
	}
	return moduleDir, commit, nil
}

// gitSpec is a validated Git: an absolute URL or path, a ref and a local,
// cleaned path.
type gitSpec struct {
	url   string
	ref   string
	isSHA bool
	path  string // OS-separated, "" for the repository root
	// authScope is the scheme://host/ prefix the Authorization header is
	// limited to through http.<url>.extraHeader; "" for local repositories,
	// which never get credentials.
	authScope string
}

// validate checks g without touching the network or the file system, except
// for making a local repository path absolute. Its errors never quote the URL,
// which may carry a password.
func (g Git) validate() (gitSpec, error) {
	spec := gitSpec{ref: g.Ref}
	if spec.ref == "" {
		spec.ref = defaultRef
	}
	raw := strings.TrimSpace(g.URL)
	var errs []error
	switch {
	case raw == "":
		errs = append(errs, errors.New("git source: url is required"))
	case strings.Contains(raw, "://"):
		u, err := parseRemoteURL(raw, g.CredentialsFile != "")
		if err != nil {
			errs = append(errs, err)
			break
		}
		spec.url = u.String()
		if u.Scheme != "file" {
			spec.authScope = u.Scheme + "://" + u.Host + "/"
		}
	case isSCPLike(raw):
		// Also catches transport helpers such as "ext::sh -c …".
		errs = append(errs, errors.New("git source: url: ssh, scp-style and transport-helper urls are not supported; use https://"))
	default:
		abs, err := filepath.Abs(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("git source: url: %w", err))
			break
		}
		spec.url = abs
	}
	if err := checkRef(spec.ref); err != nil {
		errs = append(errs, fmt.Errorf("git source: ref %q: %w", spec.ref, err))
	}
	if lower := strings.ToLower(spec.ref); isFullSHA(lower) {
		spec.ref, spec.isSHA = lower, true
	}
	if g.Path != "" {
		p := filepath.Clean(filepath.FromSlash(g.Path))
		if !filepath.IsLocal(p) {
			errs = append(errs, fmt.Errorf("git source: path %q must be relative and stay inside the repository", g.Path))
		} else if p != "." {
			spec.path = p
		}
	}
	return spec, errors.Join(errs...)
}

// parseRemoteURL parses a scheme URL. None of its errors include raw or the
// parse error, since both could echo a password.
func parseRemoteURL(raw string, withCredentials bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("git source: url is not a valid URL")
	}
	if u.User != nil {
		return nil, errors.New("git source: url must not contain credentials (userinfo); put the token in credentials_file")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, errors.New("git source: url must not contain a query or fragment")
	}
	switch u.Scheme {
	case "https", "file":
	case "http":
		if withCredentials && !isLoopback(u.Hostname()) {
			return nil, fmt.Errorf("git source: url: refusing to send credentials over plain http to %q; use https", u.Host)
		}
	default:
		return nil, fmt.Errorf("git source: url scheme %q is not supported; use https", u.Scheme)
	}
	if u.Scheme != "file" && u.Host == "" {
		return nil, errors.New("git source: url has no host")
	}
	return u, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isSCPLike mirrors git's own rule: a colon before the first slash makes
// "host:path" an ssh location rather than a local path.
func isSCPLike(s string) bool {
	before, _, _ := strings.Cut(s, "/")
	return strings.Contains(before, ":")
}

// checkRef rejects refs git would misread as options or refspecs, and the
// characters check-ref-format forbids.
func checkRef(ref string) error {
	switch {
	case strings.HasPrefix(ref, "-"), strings.HasPrefix(ref, "+"):
		return errors.New("must not start with '-' or '+'")
	case strings.Contains(ref, ".."), strings.Contains(ref, "@{"), strings.Contains(ref, "//"),
		strings.HasSuffix(ref, "/"), strings.HasSuffix(ref, ".lock"):
		return errors.New("is not a valid ref name")
	case strings.ContainsFunc(ref, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune(`:~^?*[\`, r)
	}):
		return errors.New("contains a character not allowed in a ref name")
	}
	return nil
}

// isFullSHA reports whether ref is a full SHA-1 or SHA-256 object name.
func isFullSHA(ref string) bool {
	if len(ref) != 40 && len(ref) != 64 {
		return false
	}
	_, err := hex.DecodeString(ref)
	return err == nil && strings.ToLower(ref) == ref
}

// cacheKey names the cache repository of a URL.
func cacheKey(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:])
}

func (s gitSpec) checkout(ctx context.Context, credentialsFile, cacheDir, dst string, observe execObserver) (string, string, error) {
	dst, err := checkEmptyDir(dst)
	if err != nil {
		return "", "", err
	}
	c, err := s.openCache(ctx, credentialsFile, cacheDir, observe)
	if err != nil {
		return "", "", err
	}
	defer c.close()
	commit, err := fetch(ctx, c.r, c.repo, s.ref, s.isSHA)
	if err != nil {
		return "", "", err
	}
	if _, err := c.r.run(ctx, []string{"GIT_INDEX_FILE=" + filepath.Join(c.home, "index")}, checkoutArgs(c.repo, dst, commit)...); err != nil {
		return "", "", err
	}
	// Git stores symlinks to anywhere: one to a named pipe or /dev/zero
	// would hang or exhaust whatever reads it next (driftwatch itself reads
	// .tf files), one to /etc/passwd would hand Terraform a host file.
	if err := checkTree(ctx, dst); err != nil {
		return "", "", fmt.Errorf("commit %s: %w", commit, err)
	}
	moduleDir, err := moduleDirIn(dst, s.path)
	if err != nil {
		return "", "", fmt.Errorf("commit %s: %w", commit, err)
	}
	return moduleDir, commit, nil
}

// cacheRepo is the cache repository of a URL, opened for one operation:
// its lock held, git's runner (environment, credentials, redaction) set
// up, and a private HOME for git's scratch files (an index).
type cacheRepo struct {
	r    *gitRunner
	repo string // the bare repository
	home string // private, removed by close
	done []func()
}

// close releases the lock and removes home.
func (c *cacheRepo) close() {
	for i := len(c.done) - 1; i >= 0; i-- {
		c.done[i]()
	}
}

// openCache reads the credentials, takes the URL's lock and makes sure
// its cache repository exists.
func (s gitSpec) openCache(ctx context.Context, credentialsFile, cacheDir string, observe execObserver) (_ *cacheRepo, err error) {
	var auth *basicAuth
	if credentialsFile != "" && s.authScope != "" {
		if auth, err = readCredentials(credentialsFile); err != nil {
			return nil, err
		}
	}
	if cacheDir == "" {
		return nil, errors.New("cache dir is required")
	}
	cacheDir, err = filepath.Abs(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("cache dir: %w", err)
	}
	gitCache := filepath.Join(cacheDir, "git")
	if err := os.MkdirAll(gitCache, 0o700); err != nil {
		return nil, fmt.Errorf("cache dir: %w", err)
	}
	key := cacheKey(s.url)
	c := &cacheRepo{repo: filepath.Join(gitCache, key+".git")}
	defer func() {
		if err != nil {
			c.close()
		}
	}()

	// HOME and the scratch index live in a private temporary directory, so
	// no user or machine configuration reaches git.
	if c.home, err = os.MkdirTemp("", "driftwatch-git-"); err != nil {
		return nil, fmt.Errorf("git home: %w", err)
	}
	c.done = append(c.done, func() { _ = os.RemoveAll(c.home) })
	c.r = &gitRunner{
		dir:     c.home,
		env:     gitEnv(os.Environ(), c.home, authHeader(s.authScope, auth)),
		redact:  newRedactor(auth.secrets()...),
		observe: observe,
	}

	unlock, err := lockFile(ctx, filepath.Join(gitCache, key+".lock"))
	if err != nil {
		return nil, err
	}
	c.done = append(c.done, unlock)
	if err := ensureRepo(ctx, c.r, gitCache, c.repo, s.url); err != nil {
		return nil, err
	}
	return c, nil
}

// checkEmptyDir returns dst made absolute if it is an existing, empty
// directory.
func checkEmptyDir(dst string) (string, error) {
	if dst == "" {
		return "", errors.New("destination directory is required")
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		return "", fmt.Errorf("destination: %w", err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return "", fmt.Errorf("destination: %w", err)
	}
	if len(entries) > 0 {
		return "", fmt.Errorf("destination %s is not empty", abs)
	}
	return abs, nil
}

// ensureRepo creates the bare cache repository if it is missing. It is built
// under a temporary name and renamed, so a crash never leaves a half-made
// repository at the final path. The caller holds the URL's lock.
func ensureRepo(ctx context.Context, r *gitRunner, gitCache, repo, url string) error {
	if _, err := os.Stat(repo); err == nil {
		// Only a git killed mid-write leaves lock files, and no git can be
		// running on this repository while we hold the lock.
		return removeStaleLocks(repo)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cache repository: %w", err)
	}
	// Leftovers of a crash during a previous creation.
	leftovers, err := filepath.Glob(repo + ".tmp-*")
	if err != nil {
		return fmt.Errorf("cache repository: %w", err)
	}
	for _, dir := range leftovers {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("cache repository: %w", err)
		}
	}
	tmp, err := os.MkdirTemp(gitCache, filepath.Base(repo)+".tmp-")
	if err != nil {
		return fmt.Errorf("cache repository: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	for _, args := range initArgs(tmp, url) {
		if _, err := r.run(ctx, nil, args...); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, repo); err != nil {
		return fmt.Errorf("cache repository: %w", err)
	}
	return nil
}

// removeStaleLocks deletes git's *.lock files (shallow.lock, ref locks, …)
// left behind by a killed git.
func removeStaleLocks(repo string) error {
	return filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == filepath.Join(repo, "objects") {
			return fs.SkipDir // large, and git takes no *.lock files there
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("cache repository: remove stale lock: %w", err)
			}
		}
		return nil
	})
}

// fetch makes ref available in repo and returns its commit. A SHA already in
// the cache is not fetched again (commits are immutable); branches and tags
// are always fetched so that moved refs are picked up.
func fetch(ctx context.Context, r *gitRunner, repo, ref string, isSHA bool) (string, error) {
	if !isSHA {
		if _, err := r.run(ctx, nil, fetchArgs(repo, ref, fetchShallow, false)...); err != nil {
			return "", err
		}
		out, err := r.run(ctx, nil, revParseArgs(repo, "FETCH_HEAD")...)
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			return "", fmt.Errorf("ref %q does not point to a commit: %w", ref, err)
		}
		return strings.TrimSpace(out), nil
	}

	if ok, err := hasCommit(ctx, r, repo, ref); err != nil || ok {
		return ref, err
	}
	shallowErr := func() error {
		_, err := r.run(ctx, nil, fetchArgs(repo, ref, fetchShallow, false)...)
		return err
	}()
	if shallowErr == nil {
		if ok, err := hasCommit(ctx, r, repo, ref); err != nil || ok {
			return ref, err
		}
	}
	if ctx.Err() != nil || errors.Is(shallowErr, ErrAuthFailed) {
		return "", shallowErr
	}
	// The server refused a SHA it does not advertise (protocol v0 without
	// uploadpack.allow*SHA1InWant). Fetch every branch and tag instead, with
	// full history, since the commit may be behind the shallow boundary.
	out, err := r.run(ctx, nil, "--git-dir="+repo, "rev-parse", "--is-shallow-repository")
	if err != nil {
		return "", err
	}
	if _, err := r.run(ctx, nil, fetchArgs(repo, "", fetchAll, strings.TrimSpace(out) == "true")...); err != nil {
		return "", err
	}
	if ok, err := hasCommit(ctx, r, repo, ref); err != nil || ok {
		return ref, err
	}
	return "", fmt.Errorf("commit %s is not reachable from any branch or tag (shallow fetch: %w)", ref, shallowErr)
}

// hasCommit reports whether repo holds commit sha. Shallow fetches bring
// whole trees, so a present commit can be checked out.
func hasCommit(ctx context.Context, r *gitRunner, repo, sha string) (bool, error) {
	out, err := r.run(ctx, nil, revParseArgs(repo, sha)...)
	if err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		return false, nil
	}
	return strings.TrimSpace(out) == sha, nil
}

// moduleDirIn returns dst/path after checking that it is a directory that,
// with symlinks resolved, stays inside dst: a repository could otherwise
// point Path at any directory on the host.
func moduleDirIn(dst, path string) (string, error) {
	dir := filepath.Join(dst, path)
	realDst, err := filepath.EvalSymlinks(dst)
	if err != nil {
		return "", fmt.Errorf("destination: %w", err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", filepath.ToSlash(path), err)
	}
	if !within(realDst, realDir) {
		return "", fmt.Errorf("path %q resolves outside the checkout", filepath.ToSlash(path))
	}
	info, err := os.Stat(realDir)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", filepath.ToSlash(path), err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("path %q is not a directory", filepath.ToSlash(path))
	}
	return dir, nil
}

// within reports whether path is root or lexically below it; both must be
// clean and absolute.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && filepath.IsLocal(rel)
}
