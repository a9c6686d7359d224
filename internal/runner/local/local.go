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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/internal/backend"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/planparse"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/sandbox"
)

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
	ctx, marker, grace, end := sandbox.Begin(ctx, req)
	defer func() {
		ce := context.Cause(ctx) // before end(), which cancels ctx
		end()
		if err != nil && ce != nil {
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

	tmp, err := sandbox.NewDir(req.WorkDir, "dw-")
	if err != nil {
		return res, &runner.Error{Phase: "setup", Reason: err.Error(), Err: err}
	}
	defer os.RemoveAll(tmp)

	env, secrets, err := sandbox.BuildEnv(req, tmp, marker)
	if err != nil {
		return res, &runner.Error{Phase: "setup", Err: err}
	}
	// Every secret the daemon knows is redacted, not only this workspace's.
	secrets = append(secrets, req.Redact...)
	red := sandbox.NewRedactor(secrets)

	start := time.Now()
	phase := func(name string) {
		res.Phases = append(res.Phases, drift.Phase{Name: name, Duration: time.Since(start)})
		start = time.Now()
	}

	moduleDir, commit, err := sandbox.PrepareSource(ctx, req, tmp)
	if err != nil {
		return res, &runner.Error{Phase: "source", Reason: red.Apply(err.Error()), Err: err}
	}
	// Values of variables declared sensitive (var files, vars, TF_VAR_)
	// are redacted too: a provider's error message prints them verbatim.
	secrets = append(secrets, sandbox.SensitiveValues(ctx, sandbox.SourceDir(tmp), moduleDir, req.VarFiles, req.Vars, req.Env)...)
	red = sandbox.NewRedactor(secrets)
	logs := newRunLog(req.Log, logRedactor(secrets, req.Vars))
	defer logs.flush()
	res.Commit = commit
	// A static read, before Terraform writes anything into the copy. An
	// unreadable backend block is left to init, which reports it properly.
	if fs, err := backend.Check(ctx, sandbox.SourceDir(tmp), moduleDir, req.BackendConfig, req.Backend); err == nil {
		res.Backend = fs
	} else {
		r.Logger.Debug("backend check skipped", "workspace", req.Workspace, "err", red.Apply(err.Error()))
	}
	phase("source")

	bin, err := sandbox.ResolveBinary(req.Binary, env["PATH"])
	if err != nil {
		return res, &runner.Error{Phase: "setup", Reason: err.Error(), Err: err}
	}
	jail, err := sandbox.NewJail(req, tmp, bin)
	if err != nil {
		return res, &runner.Error{Phase: "setup", Reason: err.Error(), Err: err}
	}
	defer jail.Close()
	stderr := sandbox.NewTail(16 << 10)
	c := &sandbox.Command{Bin: bin, Exe: jail.Exe(), Dir: moduleDir, Env: sandbox.EnvList(env), Grace: grace, Stderr: logs.tee(stderr)}
	fail := func(name string, err error) (runner.Result, error) {
		logs.flush()
		return res, &runner.Error{Phase: name, Reason: red.Apply(sandbox.Diagnostic(stderr.String(), err)), Err: errors.New(red.Apply(sandbox.FirstLine(sandbox.ErrorText(err))))}
	}
	logs.header("init")
	if err := r.init(ctx, c, jail, req, logs.stdout()); err != nil {
		return fail("init", err)
	}
	res.Tool = r.toolVersion(ctx, c)
	phase("init")

	tf, err := tfexec.NewTerraform(moduleDir, jail.Exe())
	if err != nil {
		return res, &runner.Error{Phase: "setup", Err: err}
	}
	if err := tf.SetEnv(env); err != nil {
		return res, &runner.Error{Phase: "setup", Err: err}
	}
	tf.SetStdout(logs.stdout())
	tf.SetStderr(logs.tee(stderr))
	tf.SetWaitDelay(grace)

	if req.TFWorkspace != "" && req.TFWorkspace != "default" {
		logs.header("workspace")
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
	logs.header("plan")
	// The machine-readable stream, rendered without values (planLog); its
	// diagnostics are on stdout, so they also give a failure's reason.
	pl := newPlanLog(logs.stdout())
	tf.SetStdout(io.Discard)
	changed, err := tf.PlanJSON(ctx, pl, opts...)
	pl.flush()
	tf.SetStdout(logs.stdout())
	if err != nil {
		if reason := pl.reason(); reason != "" && ctx.Err() == nil {
			logs.flush()
			return res, &runner.Error{Phase: "plan", Reason: red.Apply(reason), Err: errors.New(red.Apply(sandbox.FirstLine(sandbox.ErrorText(err))))}
		}
		return fail("plan", err)
	}
	if changed {
		res.ExitCode = 2
	}
	phase("plan")

	// show's stdout is the plan JSON, with every value: it goes to the
	// parser only; its stderr (diagnostics) goes to the log.
	logs.header("show")
	plan, err := showJSON(ctx, c, planFile)
	if err != nil {
		return fail("show", err)
	}
	res.Plan = plan
	logs.header("changes")
	writeChanges(logs.stdout(), plan)
	if req.LogPlanText {
		logs.header("plan text")
		if err := c.Run(ctx, logs.stdout(), "show", "-no-color", planFile); err != nil {
			return fail("show", err)
		}
	}
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
func (r *Runner) init(ctx context.Context, c *sandbox.Command, jail *sandbox.Jail, req runner.Request, stdout io.Writer) error {
	args := []string{"init", "-no-color", "-input=false", "-upgrade=false"}
	for _, b := range req.BackendConfig {
		args = append(args, "-backend-config="+b)
	}
	lock, err := sandbox.ReadSourceFile(ctx, c.Dir, filepath.Join(c.Dir, ".terraform.lock.hcl"))
	if req.PluginCacheDir == "" || err != nil {
		return c.Run(ctx, stdout, args...)
	}
	if err := os.MkdirAll(req.PluginCacheDir, 0o755); err != nil {
		return err
	}
	cached := *c
	cached.Env = append(append([]string(nil), c.Env...), "TF_PLUGIN_CACHE_DIR="+req.PluginCacheDir)
	sum := sha256.Sum256(append([]byte(c.Bin+"\x00"), lock...))
	warm := filepath.Join(req.PluginCacheDir, ".driftwatch-warm", hex.EncodeToString(sum[:]))
	if _, err := os.Stat(warm); err == nil {
		return cached.Run(ctx, stdout, args...)
	}
	r.initMu.Lock()
	defer r.initMu.Unlock()
	unlock, err := sandbox.LockFile(ctx, filepath.Join(req.PluginCacheDir, sandbox.InitLockName))
	if err != nil {
		return err
	}
	defer unlock()
	// A cold init is the one step that writes the shared cache; it runs no
	// workspace code (providers are installed, not started).
	if err := jail.CacheWritable(true); err != nil {
		return err
	}
	err = cached.Run(ctx, stdout, args...)
	if werr := jail.CacheWritable(false); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if os.MkdirAll(filepath.Dir(warm), 0o755) == nil {
		_ = os.WriteFile(warm, nil, 0o644)
	}
	return nil
}

// showJSON streams `show -json` straight into the plan parser: the plan JSON
// is never buffered whole.
func showJSON(ctx context.Context, c *sandbox.Command, planFile string) (*planparse.Plan, error) {
	pr, pw := io.Pipe()
	cmd, err := c.Start(ctx, pw, "show", "-json", "-no-color", planFile)
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

// toolVersion returns e.g. "terraform 1.11.4", asking each binary once per
// process.
func (r *Runner) toolVersion(ctx context.Context, c *sandbox.Command) string {
	if v, ok := r.versions.Load(c.Bin); ok {
		return v.(string)
	}
	var out bytes.Buffer
	if err := c.Run(ctx, &out, "version", "-json"); err != nil {
		return sandbox.ToolName(c.Bin)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if json.Unmarshal(out.Bytes(), &v) != nil || v.Version == "" {
		return sandbox.ToolName(c.Bin)
	}
	name := sandbox.ToolName(c.Bin) + " " + v.Version
	r.versions.Store(c.Bin, name)
	return name
}
