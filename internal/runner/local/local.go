package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/driftwatch/driftwatch/internal/backend"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/sandbox"
	"github.com/driftwatch/driftwatch/internal/tfsession"
)

// Runner is the local runner.
type Runner struct {
	Logger *slog.Logger
	// shared serialises cold inits of the plugin cache within this process
	// and caches each binary's version.
	shared tfsession.Shared
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

	tmp, err := sandbox.NewDir(req.WorkDir, "dw-", req.Owner)
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
	phases := tfsession.NewPhases(&res.Phases)

	moduleDir, commit, err := sandbox.PrepareSource(ctx, req, tmp)
	if err != nil {
		return res, &runner.Error{Phase: "source", Reason: red.Apply(err.Error()), Err: err}
	}
	// Values of variables declared sensitive (var files, vars, TF_VAR_)
	// are redacted too: a provider's error message prints them verbatim.
	secrets = append(secrets, sandbox.SensitiveValues(ctx, sandbox.SourceDir(tmp), moduleDir, req.VarFiles, req.Vars, req.Env)...)
	red = sandbox.NewRedactor(secrets)
	res.Commit = commit
	// A static read, before Terraform writes anything into the copy (and,
	// for s3, the bucket policy read with the run's own credentials). An
	// unreadable backend block is left to init, which reports it properly.
	benv := backend.Env{Vars: env, Log: r.Logger.With("workspace", req.Workspace)}
	if fs, err := backend.Check(ctx, sandbox.SourceDir(tmp), moduleDir, req.BackendConfig, req.Backend, benv); err == nil {
		res.Backend = fs
	} else {
		r.Logger.Debug("backend check skipped", "workspace", req.Workspace, "err", red.Apply(err.Error()))
	}
	phases.Mark("source")

	s, err := tfsession.Open(tfsession.Options{
		Request: req, Dir: tmp, ModuleDir: moduleDir, Env: env, Secrets: secrets,
		Grace: grace, Log: req.Log, Shared: &r.shared, Phases: phases,
	})
	if err != nil {
		return res, err
	}
	defer s.Close()

	if err := s.Init(ctx, tfsession.InitOptions{PluginCache: true}); err != nil {
		return res, err
	}
	res.Tool = s.Version(ctx)
	s.Phase("init")

	if err := s.WorkspaceSelect(ctx); err != nil {
		return res, err
	}
	planFile := filepath.Join(tmp, "driftwatch.tfplan")
	changed, err := s.Plan(ctx, tfsession.PlanOptions{Out: planFile, JSON: true})
	if err != nil {
		return res, err
	}
	if changed {
		res.ExitCode = 2
	}
	s.Phase("plan")

	plan, err := s.Show(ctx, planFile)
	if err != nil {
		return res, err
	}
	res.Plan = plan
	s.LogChanges(plan)
	if req.LogPlanText {
		if err := s.ShowText(ctx, planFile); err != nil {
			return res, err
		}
	}
	s.Phase("show")
	return res, nil
}
