package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/internal/source"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// MarkerEnv tags every process of a run so a sweep can find providers and
// provisioners that outlive Terraform, whatever process group they moved to.
const MarkerEnv = "DRIFTWATCH_RUN_MARKER"

// OwnerEnv tags every process of a run with its owner (terraform.Request.Owner).
const OwnerEnv = "DRIFTWATCH_RUN_OWNER"

// InitLockName is the file under the plugin cache dir that serialises cold
// `terraform init`s across processes: concurrent inits tear cache entries.
const InitLockName = ".driftwatch-init.lock"

// DefaultKillGrace is how long Terraform gets to stop after SIGINT.
const DefaultKillGrace = 10 * time.Second

// socketPathMax bounds the run directory's path. Providers (go-plugin)
// listen on a unix socket in TMPDIR, which is the run directory, and Linux
// limits a socket path to 108 bytes: past it the provider exits and
// Terraform says only "Unrecognized remote plugin message". go-plugin names
// its socket TMPDIR/plugin<digits>: 20 bytes are kept for that.
const socketPathMax = 88

// Name prefixes of run directories: a detection's and a remediation's
// apply's. The jail's launcher directory shares its run directory's name.
const (
	DetectDirPrefix = "dw-"
	ApplyDirPrefix  = "dwr-"
)

// RunDirPrefixes are the name prefixes of run directories.
var RunDirPrefixes = []string{DetectDirPrefix, ApplyDirPrefix}

// ownerTag is the part of a run directory's name that names its owner
// (terraform.Request.Owner), so that a restarted daemon finds its killed
// predecessor's directories (SweepOwnedDirs): 8 hex digits of its hash.
func ownerTag(owner string) string {
	if owner == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:4]) + "-"
}

// NewDir makes a fresh 0700 run directory under base (the OS temp dir if
// empty), named prefix (one of RunDirPrefixes), the owner's tag and random
// characters. Its name is short on purpose (see socketPathMax); the
// workspace is in the logs, not the path.
func NewDir(base, prefix, owner string) (string, error) {
	prefix += ownerTag(owner)
	if base != "" {
		if err := os.MkdirAll(base, 0o700); err != nil {
			return "", err
		}
	}
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return "", err
	}
	if len(dir) > socketPathMax {
		os.RemoveAll(dir)
		return "", fmt.Errorf("work dir %q is too long (%d bytes; providers' unix sockets need it under %d): set terraform.work_dir to a shorter path", dir, len(dir), socketPathMax)
	}
	return dir, nil
}

// SweepOwnedDirs removes the run directories under base (the OS temp dir
// if empty) of owner's runs: at a daemon's start, what its predecessor,
// killed with SIGKILL, left on disk. They hold a copy of the code and the
// generated var file, the workspace's vars (secrets among them). It
// removes owner's kept directories too (RemoveKeptDirs), without counting
// them: a daemon stopped gracefully removed its own. Call it holding the
// store's lock, after KillOwned: nothing of owner runs.
func SweepOwnedDirs(base, owner string) (removed int) {
	RemoveKeptDirs(base, owner)
	for _, p := range RunDirPrefixes {
		removed += removeOwned(base, p, owner)
	}
	return removed
}

// RemoveKeptDirs removes owner's kept directories (KeptDir) under base:
// what init wrote for each workspace, the backend's configuration among
// it, is not left behind by a daemon that stops.
func RemoveKeptDirs(base, owner string) {
	removeOwned(base, KeptDirPrefix, owner)
}

// removeOwned removes the directories under base named prefix and
// owner's tag.
func removeOwned(base, prefix, owner string) (removed int) {
	if owner == "" {
		return 0
	}
	if base == "" {
		base = os.TempDir()
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return 0
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix+ownerTag(owner)) {
			if os.RemoveAll(filepath.Join(base, e.Name())) == nil {
				removed++
			}
		}
	}
	return removed
}

// BuildEnv returns the child's whole environment: PATH, HOME and TMPDIR
// inside the run directory, CHECKPOINT_DISABLE, the run marker,
// TF_CLI_CONFIG_FILE (the configured one, else driftwatch's own), and the
// workspace's env and secrets; nothing else of the daemon's environment.
// The secret values are returned for redaction.
func BuildEnv(req terraform.Request, dir, marker string) (env map[string]string, secrets []string, err error) {
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return nil, nil, err
	}
	env = map[string]string{}
	for k, v := range req.Env {
		env[k] = v
	}
	for _, k := range sortedKeys(req.SecretEnvFiles) {
		b, err := os.ReadFile(req.SecretEnvFiles[k])
		if err != nil {
			// Name the variable, never the content.
			return nil, nil, fmt.Errorf("secret_env_files %s: %w", k, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		env[k] = v
		secrets = append(secrets, v)
	}
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env["PATH"] = path
	env["HOME"] = home
	env["TMPDIR"] = dir
	env["CHECKPOINT_DISABLE"] = "1"
	env[MarkerEnv] = marker
	if req.Owner != "" {
		env[OwnerEnv] = req.Owner
	}
	cliConfig := req.CLIConfigFile
	if cliConfig == "" {
		cliConfig = os.Getenv("TF_CLI_CONFIG_FILE")
	}
	if cliConfig != "" {
		env["TF_CLI_CONFIG_FILE"] = cliConfig
	}
	return env, secrets, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// EnvList turns env into exec.Cmd.Env form, sorted, with TF_IN_AUTOMATION
// set as tfexec sets it for the commands it runs.
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env)+1)
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return append(out, "TF_IN_AUTOMATION=1")
}

// SourceDir is where PrepareSource puts the code in the run directory dir:
// the root of the tree (the checkout or the copy) that every read of the
// workspace's files (SensitiveValues, backend.Check) is confined to.
func SourceDir(dir string) string { return filepath.Join(dir, "src") }

// PrepareSource copies (a path) or checks out (git) the workspace's code
// into SourceDir(dir), so Terraform never writes into the user's
// directory. Either fails on a symlink that leads outside the tree.
func PrepareSource(ctx context.Context, req terraform.Request, dir string) (moduleDir, commit string, err error) {
	dst := SourceDir(dir)
	if err := os.Mkdir(dst, 0o700); err != nil {
		return "", "", err
	}
	if g := req.Source.Git; g != nil {
		return source.Git{URL: g.URL, Ref: g.Ref, Path: g.Path, CredentialsFile: g.CredentialsFile}.Checkout(ctx, GitCacheDir(req), dst)
	}
	if err := source.CopyTree(ctx, req.Source.Path, dst); err != nil {
		return "", "", err
	}
	return dst, "", nil
}

// GitCacheDir is where req's git source is cached: its GitCacheDir, else
// the user's cache directory's driftwatch/git. A proposal pushes from
// the same cache the run checked out of.
func GitCacheDir(req terraform.Request) string {
	if req.GitCacheDir != "" {
		return req.GitCacheDir
	}
	return filepath.Join(userCacheDir(), "git")
}

// ReadSourceFile reads a file of the workspace's source tree rooted at
// root (the module directory or SourceDir) with source.ReadFile: regular
// files only, symlinks only inside root, never a blocking open, at most
// source.MaxConfigFileSize bytes.
func ReadSourceFile(ctx context.Context, root, name string) ([]byte, error) {
	return source.ReadFile(ctx, root, name, source.MaxConfigFileSize)
}

func userCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "driftwatch")
	}
	return filepath.Join(os.TempDir(), "driftwatch-cache")
}

// ResolveBinary finds the Terraform binary: a path, a name on PATH, or
// terraform then tofu.
func ResolveBinary(b, path string) (string, error) {
	if strings.ContainsRune(b, os.PathSeparator) {
		return b, nil
	}
	names := []string{b}
	if b == "" {
		names = []string{"terraform", "tofu"}
	}
	for _, n := range names {
		for _, d := range filepath.SplitList(path) {
			p := filepath.Join(d, n)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s not found on PATH", strings.Join(names, " or "))
}

// ToolName is "tofu" or "terraform", from the binary's name.
func ToolName(bin string) string {
	if strings.Contains(filepath.Base(bin), "tofu") {
		return "tofu"
	}
	return "terraform"
}

// Command runs the Terraform binary the way tfexec does (own process
// group, Pdeathsig, SIGINT on cancel, then a kill after the grace period),
// for the steps internal/terraform/tfsession runs without tfexec.
type Command struct {
	Bin, Dir string
	// Jail, if active, is the run's jail. Command starts bubblewrap
	// itself, without the launcher process terraform-exec's steps go
	// through (Jail.Exe): that is a start of the daemon's whole binary per
	// Terraform process.
	Jail   *Jail
	Env    []string
	Grace  time.Duration
	Stderr io.Writer
}

// Start starts Terraform with args, its stdout going to stdout.
func (c *Command) Start(ctx context.Context, stdout io.Writer, args ...string) (*exec.Cmd, error) {
	jailed := c.Jail != nil && c.Jail.Active()
	var cmd *exec.Cmd
	if jailed {
		cmd = exec.CommandContext(ctx, c.Jail.spec.Bwrap, bwrapArgv(c.Jail.args(), c.Dir, c.Jail.spec.Bin, args)...)
	} else {
		cmd = exec.CommandContext(ctx, c.Bin, args...)
	}
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdout = stdout
	cmd.Stderr = c.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = c.Grace
	if !jailed {
		return cmd, cmd.Start()
	}
	// bubblewrap dies of SIGINT without passing it on, so the signal goes
	// to Terraform itself, whose PID bubblewrap reports. Until it has,
	// bubblewrap is killed, and the jail with it.
	pid := make(chan int, 1)
	cmd.Cancel = func() error {
		select {
		case p := <-pid:
			if p > 0 {
				return syscall.Kill(p, syscall.SIGINT)
			}
		case <-time.After(time.Second):
		}
		return cmd.Process.Kill()
	}
	if err := startJailed(cmd, c.Jail.spec.Net, pid); err != nil {
		return nil, err
	}
	return cmd, nil
}

// Run runs Terraform with args to completion; a cancelled or timed-out
// context is returned as its cause.
func (c *Command) Run(ctx context.Context, stdout io.Writer, args ...string) error {
	cmd, err := c.Start(ctx, stdout, args...)
	if err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	return nil
}

// RandomHex returns n random bytes, hex encoded (run markers, IDs).
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// FirstLine is the first line of s, trimmed.
func FirstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
