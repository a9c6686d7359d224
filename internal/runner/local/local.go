// Package local runs a workspace as a sandboxed local subprocess: a fresh
// 0700 work directory, a copy of the code (Terraform never writes into the
// user's directory), a scrubbed environment, its own process group, a timeout
// that sends SIGINT and then kills, and a sweep that leaves no Terraform or
// provider process behind. It is the only importer of terraform-exec.
package local

import (
	"bufio"
	"context"
	"crypto/rand"
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
		res.Phases = append(res.Phases, runner.Phase{Name: name, Duration: time.Since(start)})
		start = time.Now()
	}

	moduleDir, commit, err := prepareSource(ctx, req, tmp)
	if err != nil {
		return res, &runner.Error{Phase: "source", Reason: red.apply(err.Error()), Err: err}
	}
	res.Commit = commit
	phase("source")

	bin, err := resolveBinary(req.Binary, env["PATH"])
	if err != nil {
		return res, &runner.Error{Phase: "setup", Reason: err.Error(), Err: err}
	}
	stderr := newTail(16 << 10)
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

	fail := func(name string, err error) (runner.Result, error) {
		return res, &runner.Error{Phase: name, Reason: red.apply(diagnosticReason(stderr.String(), err)), Err: errors.New(red.apply(firstLine(err.Error())))}
	}

	if err := r.init(ctx, tf, req); err != nil {
		return fail("init", err)
	}
	if v, _, verr := tf.Version(ctx, false); verr == nil {
		res.Tool = toolName(bin) + " " + v.String()
	}
	phase("init")

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

	plan, err := showJSON(ctx, bin, moduleDir, env, planFile, grace, stderr)
	if err != nil {
		return fail("show", err)
	}
	res.Plan = plan
	phase("show")
	return res, nil
}

// init runs terraform init. With a shared plugin cache, inits are
// serialised (in-process mutex plus a file lock for other processes):
// Terraform's cache is not safe under concurrent init (terraform#31964).
// plan runs stay concurrent.
func (r *Runner) init(ctx context.Context, tf *tfexec.Terraform, req runner.Request) error {
	opts := []tfexec.InitOption{tfexec.Upgrade(false)}
	for _, b := range req.BackendConfig {
		opts = append(opts, tfexec.BackendConfig(b))
	}
	if req.PluginCacheDir == "" {
		return tf.Init(ctx, opts...)
	}
	r.initMu.Lock()
	defer r.initMu.Unlock()
	unlock, err := lockFile(ctx, filepath.Join(req.PluginCacheDir, ".driftwatch-init.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return tf.Init(ctx, opts...)
}

// showJSON streams `show -json` straight into the plan parser: the plan JSON
// is never buffered whole.
func showJSON(ctx context.Context, bin, dir string, env map[string]string, planFile string, grace time.Duration, stderr io.Writer) (*planparse.Plan, error) {
	cmd := exec.CommandContext(ctx, bin, "show", "-json", "-no-color", planFile)
	cmd.Dir = dir
	cmd.Env = envList(env)
	cmd.Env = append(cmd.Env, "TF_IN_AUTOMATION=1")
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = grace
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	plan, perr := planparse.Parse(bufio.NewReaderSize(out, 1<<20))
	if perr != nil {
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	if werr != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, werr
	}
	if perr != nil {
		return nil, fmt.Errorf("parse plan json: %w", perr)
	}
	return plan, nil
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
	if req.PluginCacheDir != "" {
		if err := os.MkdirAll(req.PluginCacheDir, 0o755); err != nil {
			return nil, nil, err
		}
		env["TF_PLUGIN_CACHE_DIR"] = req.PluginCacheDir
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
