// Package local runs a workspace as a sandboxed local subprocess: a fresh
// 0700 work directory, a copy of the code (Terraform never writes into the
// user's directory), a scrubbed environment, its own process group, a timeout
// that sends SIGINT and then kills, and a sweep that leaves no Terraform or
// provider process behind. It is the only importer of terraform-exec.
package local

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/internal/backend"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/planparse"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/source"
)

// DefaultKillGrace is how long Terraform gets to stop after SIGINT.
const DefaultKillGrace = 10 * time.Second

// markerEnv tags every process of a run so the sweep can find providers and
// provisioners that outlive Terraform.
const markerEnv = "DRIFTWATCH_RUN_MARKER"

// Runner is the local runner.
type Runner struct {
	Logger *slog.Logger
	// initMu serialises init per plugin cache dir within this process; a
	// file lock covers other processes.
	initMu sync.Mutex
	// versions caches "terraform 1.11.4" per binary path.
	versions sync.Map
}

// New returns a local runner.
func New(logger *slog.Logger) *Runner { return &Runner{Logger: logger} }

// Run executes init, plan and show for req.
func (r *Runner) Run(ctx context.Context, req runner.Request) (res runner.Result, err error) {
	grace := req.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, req.Timeout, runner.ErrTimeout)
		defer cancel()
	}
	marker := randomHex(16)
	stopSweep := sweepOnDone(ctx, marker, grace+2*time.Second)
	defer func() {
		stopSweep()
		killMarked(marker) // nothing of this run may outlive it
		if ce := context.Cause(ctx); err != nil && ce != nil {
			// Report timeouts and cancellation as such, whatever Terraform printed.
			var re *runner.Error
			if errors.As(err, &re) && !errors.Is(re.Err, ce) {
				re.Reason = fmt.Sprintf("%v after %s", ce, req.Timeout)
				if !errors.Is(ce, runner.ErrTimeout) {
					re.Reason = ce.Error()
				}
				re.Err = errors.Join(ce, re.Err)
			}
		}
	}()

	base := req.WorkDir
	if base != "" {
		if err := os.MkdirAll(base, 0o700); err != nil {
			return res, &runner.Error{Phase: "setup", Err: err}
		}
	}
	tmp, err := os.MkdirTemp(base, "driftwatch-"+req.Workspace+"-")
	if err != nil {
		return res, &runner.Error{Phase: "setup", Err: err}
	}
	defer os.RemoveAll(tmp)

	secrets, env, err := buildEnv(req, tmp, marker)
	if err != nil {
		return res, &runner.Error{Phase: "setup", Err: err}
	}
	red := newRedactor(secrets)

	start := time.Now()
	phase := func(name string) {
		res.Phases = append(res.Phases, drift.Phase{Name: name, Duration: time.Since(start)})
		start = time.Now()
	}

	moduleDir, commit, err := prepareSource(ctx, req, tmp)
	if err != nil {
		return res, &runner.Error{Phase: "source", Reason: red.apply(err.Error()), Err: err}
	}
	res.Commit = commit
	// A static read, before Terraform writes anything into the copy. An
	// unreadable backend block is left to init, which reports it properly.
	if fs, err := backend.Check(moduleDir, req.BackendConfig, req.Backend); err == nil {
		res.Backend = fs
	} else {
		r.Logger.Debug("backend check skipped", "workspace", req.Workspace, "err", red.apply(err.Error()))
	}
	phase("source")

	bin, err := resolveBinary(req.Binary, env["PATH"])
	if err != nil {
		return res, &runner.Error{Phase: "setup", Reason: err.Error(), Err: err}
	}
	stderr := newTail(16 << 10)
	c := &command{bin: bin, dir: moduleDir, env: envList(env), grace: grace, stderr: stderr}
	c.env = append(c.env, "TF_IN_AUTOMATION=1")
	fail := func(name string, err error) (runner.Result, error) {
		return res, &runner.Error{Phase: name, Reason: red.apply(diagnosticReason(stderr.String(), err)), Err: errors.New(red.apply(firstLine(err.Error())))}
	}
	if err := r.init(ctx, c, req); err != nil {
		return fail("init", err)
	}
	res.Tool = r.toolVersion(ctx, c)
	phase("init")

	tf, err := tfexec.NewTerraform(moduleDir, bin)
	if err != nil {
		return res, &runner.Error{Phase: "setup", Err: err}
	}
	if err := tf.SetEnv(env); err != nil {
		return res, &runner.Error{Phase: "setup", Err: err}
	}
	tf.SetStdout(io.Discard)
	tf.SetStderr(stderr)
	tf.SetWaitDelay(grace)

	if req.TFWorkspace != "" && req.TFWorkspace != "default" {
		if err := tf.WorkspaceSelect(ctx, req.TFWorkspace); err != nil {
			return fail("workspace", err)
		}
	}

	planFile := filepath.Join(tmp, "driftwatch.tfplan")
	opts := []tfexec.PlanOption{tfexec.Out(planFile), tfexec.Lock(false), tfexec.Refresh(true)}
	for _, f := range req.VarFiles {
		if !filepath.IsAbs(f) {
			f = filepath.Join(moduleDir, f)
		}
		opts = append(opts, tfexec.VarFile(f))
	}
	if len(req.Vars) > 0 {
		// Variables go through a file, never -var: tfexec logs argv, and
		// argv is visible to every user of the machine.
		f := filepath.Join(tmp, "driftwatch-vars.tfvars.json")
		b, _ := json.Marshal(req.Vars)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return res, &runner.Error{Phase: "setup", Err: err}
		}
		opts = append(opts, tfexec.VarFile(f))
	}
	changed, err := tf.Plan(ctx, opts...)
	if err != nil {
		return fail("plan", err)
	}
	if changed {
		res.ExitCode = 2
	}
	phase("plan")

	plan, err := showJSON(ctx, c, planFile)
	if err != nil {
		return fail("show", err)
	}
	res.Plan = plan
	phase("show")
	return res, nil
}

// init runs terraform init. It runs Terraform directly rather than through
// tfexec, whose Init always spends an extra `version -json` process per run
// (~10% of a small workspace's run).
//
// The shared plugin cache is used only for workspaces that commit a
// .terraform.lock.hcl. Without one, Terraform cannot verify a cached
// provider, so it installs from the source and rewrites the cache entry in
// place, while other runs' plans execute that very file through their
// symlinks: a torn binary, "Required plugins are not installed"
// (terraform#31964 and its read/write twin). With a lock file, init only
// writes entries that are absent, so: a workspace whose lock file was
// already installed through the cache (a marker per binary and lock file)
// only reads and runs in parallel; a cold one takes an exclusive lock
// (in-process mutex plus a file lock for other processes). Plans never
// write the cache and always run in parallel.
func (r *Runner) init(ctx context.Context, c *command, req runner.Request) error {
	args := []string{"init", "-no-color", "-input=false", "-upgrade=false"}
	for _, b := range req.BackendConfig {
		args = append(args, "-backend-config="+b)
	}
	lock, err := os.ReadFile(filepath.Join(c.dir, ".terraform.lock.hcl"))
	if req.PluginCacheDir == "" || err != nil {
		return c.run(ctx, io.Discard, args...)
	}
	if err := os.MkdirAll(req.PluginCacheDir, 0o755); err != nil {
		return err
	}
	cached := *c
	cached.env = append(append([]string(nil), c.env...), "TF_PLUGIN_CACHE_DIR="+req.PluginCacheDir)
	sum := sha256.Sum256(append([]byte(c.bin+"\x00"), lock...))
	warm := filepath.Join(req.PluginCacheDir, ".driftwatch-warm", hex.EncodeToString(sum[:]))
	if _, err := os.Stat(warm); err == nil {
		return cached.run(ctx, io.Discard, args...)
	}
	r.initMu.Lock()
	defer r.initMu.Unlock()
	unlock, err := lockFile(ctx, filepath.Join(req.PluginCacheDir, ".driftwatch-init.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if err := cached.run(ctx, io.Discard, args...); err != nil {
		return err
	}
	if os.MkdirAll(filepath.Dir(warm), 0o755) == nil {
		_ = os.WriteFile(warm, nil, 0o644)
	}
	return nil
}

// command runs the Terraform binary the way tfexec does (SIGINT on cancel,
// then kill after the grace period, own process group, Pdeathsig) for the
// steps that do not go through tfexec.
type command struct {
	bin, dir string
	env      []string
	grace    time.Duration
	stderr   io.Writer
}

func (c *command) start(ctx context.Context, stdout io.Writer, args ...string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = c.env
	cmd.Stdout = stdout
	cmd.Stderr = c.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = c.grace
	return cmd, cmd.Start()
}

func (c *command) run(ctx context.Context, stdout io.Writer, args ...string) error {
	cmd, err := c.start(ctx, stdout, args...)
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

// showJSON streams `show -json` straight into the plan parser: the plan JSON
// is never buffered whole.
func showJSON(ctx context.Context, c *command, planFile string) (*planparse.Plan, error) {
	pr, pw := io.Pipe()
	cmd, err := c.start(ctx, pw, "show", "-json", "-no-color", planFile)
	if err != nil {
		return nil, err
	}
	type parsed struct {
		plan *planparse.Plan
		err  error
	}
	done := make(chan parsed, 1)
	go func() {
		p, err := planparse.Parse(bufio.NewReaderSize(pr, 1<<20))
		// Drain whatever is left so show never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, pr)
		done <- parsed{p, err}
	}()
	werr := cmd.Wait()
	pw.Close()
	res := <-done
	if werr != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, werr
	}
	if res.err != nil {
		return nil, fmt.Errorf("parse plan json: %w", res.err)
	}
	return res.plan, nil
}

func prepareSource(ctx context.Context, req runner.Request, tmp string) (moduleDir, commit string, err error) {
	dst := filepath.Join(tmp, "src")
	if err := os.Mkdir(dst, 0o700); err != nil {
		return "", "", err
	}
	if g := req.Source.Git; g != nil {
		cache := req.GitCacheDir
		if cache == "" {
			cache = filepath.Join(userCacheDir(), "git")
		}
		return source.Git{URL: g.URL, Ref: g.Ref, Path: g.Path, CredentialsFile: g.CredentialsFile}.Checkout(ctx, cache, dst)
	}
	if err := source.CopyTree(req.Source.Path, dst); err != nil {
		return "", "", err
	}
	return dst, "", nil
}

// buildEnv returns the child's whole environment: PATH, HOME (inside the
// work dir), what driftwatch sets, and the workspace's env and secrets. The
// secret values are returned for redaction.
func buildEnv(req runner.Request, tmp, marker string) (secrets []string, env map[string]string, err error) {
	home := filepath.Join(tmp, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return nil, nil, err
	}
	env = map[string]string{}
	for k, v := range req.Env {
		env[k] = v
	}
	for k, f := range req.SecretEnvFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			// Name the variable, not the content.
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
	env["TMPDIR"] = filepath.Join(tmp)
	env["CHECKPOINT_DISABLE"] = "1"
	env[markerEnv] = marker
	// Without terraform.cli_config_file, driftwatch's own TF_CLI_CONFIG_FILE
	// is passed on (as Terraform itself would honour it); ~/.terraformrc is
	// never read, since HOME is the sandbox.
	cliConfig := req.CLIConfigFile
	if cliConfig == "" {
		cliConfig = os.Getenv("TF_CLI_CONFIG_FILE")
	}
	if cliConfig != "" {
		env["TF_CLI_CONFIG_FILE"] = cliConfig
	}
	return secrets, env, nil
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// resolveBinary finds the Terraform binary: a path, a name on PATH, or
// terraform then tofu.
func resolveBinary(b, path string) (string, error) {
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

// toolVersion returns e.g. "terraform 1.11.4", asking each binary once per
// process.
func (r *Runner) toolVersion(ctx context.Context, c *command) string {
	if v, ok := r.versions.Load(c.bin); ok {
		return v.(string)
	}
	var out bytes.Buffer
	if err := c.run(ctx, &out, "version", "-json"); err != nil {
		return toolName(c.bin)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if json.Unmarshal(out.Bytes(), &v) != nil || v.Version == "" {
		return toolName(c.bin)
	}
	name := toolName(c.bin) + " " + v.Version
	r.versions.Store(c.bin, name)
	return name
}

func toolName(bin string) string {
	if strings.Contains(filepath.Base(bin), "tofu") {
		return "tofu"
	}
	return "terraform"
}

func userCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "driftwatch")
	}
	return filepath.Join(os.TempDir(), "driftwatch-cache")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
