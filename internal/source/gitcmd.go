package source

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// stderrLimit bounds how much git output an error carries.
	stderrLimit = 2048
	// waitDelay is how long git gets to exit after SIGTERM on cancellation
	// (it removes its lock files on SIGTERM) before it is killed.
	waitDelay = 5 * time.Second
	// redacted replaces every secret in git output.
	redacted = "[REDACTED]"
)

// basicAuth is the content of a credentials file.
type basicAuth struct {
	user, token string
}

// readCredentials reads a token, or "user:token", from path. Its errors never
// include the file's content.
func readCredentials(path string) (*basicAuth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	return parseCredentials(string(b), path)
}

func parseCredentials(content, path string) (*basicAuth, error) {
	content = strings.TrimSpace(content)
	if content == "" {
		return nil, fmt.Errorf("credentials file %s is empty", path)
	}
	user, token, found := strings.Cut(content, ":")
	if !found {
		user, token = defaultUser, content
	}
	if user == "" {
		user = defaultUser
	}
	if token == "" {
		return nil, fmt.Errorf("credentials file %s: token after %q is empty", path, user+":")
	}
	if strings.ContainsFunc(content, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return nil, fmt.Errorf("credentials file %s: token contains a control character", path)
	}
	return &basicAuth{user: user, token: token}, nil
}

// header returns the value of the Authorization header.
func (a *basicAuth) header() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(a.user+":"+a.token))
}

// secrets lists every form in which the token could show up in git output:
// raw, as user:token, and base64-encoded with and without padding.
func (a *basicAuth) secrets() []string {
	if a == nil {
		return nil
	}
	out := []string{a.token, a.user + ":" + a.token, a.header()}
	for _, plain := range []string{a.token, a.user + ":" + a.token} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString([]byte(plain)))
		}
	}
	return out
}

// extraHeader is an http.<scope>.extraHeader setting.
type extraHeader struct {
	scope string // scheme://host/ the header is limited to
	value string // "Authorization: Basic …"
}

func authHeader(scope string, a *basicAuth) *extraHeader {
	if a == nil || scope == "" {
		return nil
	}
	return &extraHeader{scope: scope, value: "Authorization: " + a.header()}
}

// inheritedEnv lists the only variables git inherits from driftwatch: the
// search path, proxies and CA locations. Everything else (GIT_DIR,
// GIT_TRACE*, GIT_CURL_VERBOSE, GIT_ASKPASS, XDG_CONFIG_HOME, …) is dropped.
var inheritedEnv = []string{
	"PATH", "TMPDIR",
	"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH",
}

// gitEnv builds the whole environment of a git process from parent (as
// os.Environ returns it). The token travels only in the value of a
// GIT_CONFIG_VALUE_n variable, scoped to the repository's host.
func gitEnv(parent []string, home string, h *extraHeader) []string {
	env := make([]string, 0, 32)
	hasPath := false
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(inheritedEnv, k) {
			env = append(env, kv)
			hasPath = hasPath || k == "PATH"
		}
	}
	if !hasPath {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	env = append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		// Never prompt: no terminal prompt, and no askpass program to run.
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GCM_INTERACTIVE=never",
		// ext:: and other transports can run commands.
		"GIT_ALLOW_PROTOCOL=https:http:file",
		// Stable, English messages for authentication detection.
		"LC_ALL=C",
		"LANG=C",
	)
	config := [][2]string{
		{"credential.helper", ""}, // an empty value resets the helper list
		{"core.hooksPath", "/dev/null"},
		{"gc.autoDetach", "false"}, // a detached gc would outlive our lock
		{"advice.detachedHead", "false"},
	}
	if h != nil {
		config = append(config, [2]string{"http." + h.scope + ".extraHeader", h.value})
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(config)))
	for i, kv := range config {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

type fetchMode int

const (
	fetchShallow fetchMode = iota // --depth=1 of one ref
	fetchAll                      // every branch and tag, full history
)

// initArgs creates the bare cache repository for url at dir.
func initArgs(dir, url string) [][]string {
	return [][]string{
		{"init", "--bare", "--quiet", dir},
		{"--git-dir=" + dir, "config", "remote.origin.url", url},
	}
}

// fetchArgs fetches into repo from its origin. Refs are validated by
// checkRef, so none can be read as an option or a refspec with a
// destination.
func fetchArgs(repo, ref string, mode fetchMode, unshallow bool) []string {
	args := []string{"--git-dir=" + repo, "fetch", "--quiet", "--no-progress"}
	switch mode {
	case fetchShallow:
		return append(args, "--no-tags", "--depth=1", "origin", ref)
	default:
		if unshallow {
			args = append(args, "--unshallow")
		}
		return append(args, "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*")
	}
}

// revParseArgs resolves rev to a commit, failing quietly if it is missing.
func revParseArgs(repo, rev string) []string {
	return []string{"--git-dir=" + repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"}
}

// checkoutArgs writes the tree of commit into dst. Run with GIT_INDEX_FILE
// set to a private file: the cache repository is bare and shared.
func checkoutArgs(repo, dst, commit string) []string {
	return []string{"--git-dir=" + repo, "--work-tree=" + dst, "checkout", "--quiet", "--force", commit, "--", "."}
}

// gitRunner runs git with a fixed environment.
type gitRunner struct {
	dir     string
	env     []string
	redact  redactor
	observe execObserver
}

// run runs git with args and returns its stdout. On failure the error holds
// the redacted tail of stderr; on cancellation it wraps ctx.Err().
func (r *gitRunner) run(ctx context.Context, extraEnv []string, args ...string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", ctxError(ctx, subcommand(args), err)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(slices.Clip(r.env), extraEnv...)
	stdout := newTailBuffer(64 << 10)
	stderr := newTailBuffer(stderrLimit + r.redact.maxLen())
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	configureProcess(cmd)
	if r.observe != nil {
		r.observe(slices.Clone(cmd.Args), slices.Clone(cmd.Env))
	}
	err := cmd.Run()
	if cmd.Process != nil && ctx.Err() != nil {
		// git-remote-http and index-pack share git's process group and may
		// outlive it; make sure nothing keeps running.
		killProcessGroup(cmd.Process.Pid)
	}
	if err == nil {
		return stdout.String(), nil
	}
	if ctx.Err() != nil {
		return "", ctxError(ctx, subcommand(args), ctx.Err())
	}
	msg := r.redact.tail(stderr, stderrLimit)
	if isAuthFailure(msg) {
		return "", fmt.Errorf("git %s: %w: %w: %s", subcommand(args), ErrAuthFailed, err, msg)
	}
	if msg == "" {
		return "", fmt.Errorf("git %s: %w", subcommand(args), err)
	}
	return "", fmt.Errorf("git %s: %w: %s", subcommand(args), err, msg)
}

// ctxError wraps ctx's error, and its cause when that says more.
func ctxError(ctx context.Context, sub string, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
		return fmt.Errorf("git %s: %w: %w", sub, err, cause)
	}
	return fmt.Errorf("git %s: %w", sub, err)
}

// subcommand returns the first argument that is not an option.
func subcommand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// isAuthFailure recognises git's messages (under LC_ALL=C) for a server
// that rejected or demanded credentials.
func isAuthFailure(stderr string) bool {
	for _, s := range []string{
		"Authentication failed",
		"could not read Username",
		"could not read Password",
		"The requested URL returned error: 401",
		"The requested URL returned error: 403",
	} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// redactor replaces secrets, longest first so that a secret containing
// another is replaced whole.
type redactor []string

func newRedactor(secrets ...string) redactor {
	r := make(redactor, 0, len(secrets))
	for _, s := range secrets {
		if s != "" && !slices.Contains(r, s) {
			r = append(r, s)
		}
	}
	slices.SortFunc(r, func(a, b string) int { return len(b) - len(a) })
	return r
}

func (r redactor) maxLen() int {
	if len(r) == 0 {
		return 0
	}
	return len(r[0])
}

func (r redactor) replace(s string) string {
	for _, secret := range r {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	return s
}

// tail returns at most limit bytes from the end of b, redacted. When b
// dropped output, a secret may have been cut in half at its start, where no
// replacement can match it; that prefix (shorter than the longest secret) is
// dropped after redacting, before the result is bounded.
func (r redactor) tail(b *tailBuffer, limit int) string {
	s := r.replace(string(b.Bytes()))
	truncated := b.Truncated()
	if truncated && r.maxLen() > 0 {
		s = s[min(r.maxLen(), len(s)):]
	}
	if len(s) > limit {
		s = s[len(s)-limit:]
		truncated = true
	}
	s = strings.TrimSpace(strings.ToValidUTF8(s, ""))
	if truncated {
		s = "…" + s
	}
	return s
}

// tailBuffer is an io.Writer keeping the last limit bytes written to it.
type tailBuffer struct {
	limit     int
	buf       []byte
	truncated bool
}

func newTailBuffer(limit int) *tailBuffer { return &tailBuffer{limit: limit} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.limit {
		p = p[len(p)-t.limit:]
		t.truncated = true
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.truncated = true
	}
	return n, nil
}

// Bytes returns the retained output.
func (t *tailBuffer) Bytes() []byte { return t.buf }

// Truncated reports whether output was dropped from the front.
func (t *tailBuffer) Truncated() bool { return t.truncated }

// String returns the retained output.
func (t *tailBuffer) String() string { return string(t.buf) }
