package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/driftwatch/driftwatch/internal/backend"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/terraform/tfsession"
)

// Runner is the local runner.
type Runner struct {
	Logger *slog.Logger
	// KeepWorkDirs keeps each workspace's initialised working state
	// between its runs (sandbox.Kept), beside the run directories
	// (sandbox.KeptDir), and skips init when nothing init depends on
	// changed: the daemon's re-checks, and audit --cache-dir. A request
	// with NoFastPaths never uses it.
	KeepWorkDirs bool
	// shared serialises cold inits of the plugin cache within this process
	// and caches each binary's version.
	shared tfsession.Shared
}

// New returns a local runner.
func New(logger *slog.Logger) *Runner { return &Runner{Logger: logger} }

// Run executes init, plan and show for req (init and query for a scan,
// req.Query).
func (r *Runner) Run(ctx context.Context, req terraform.Request) (res runner.Result, err error) {
	ctx, marker, grace, end := sandbox.Begin(ctx, req)
	defer func() {
		ce := context.Cause(ctx) // before end(), which cancels ctx
		end()
		if err != nil && ce != nil {
			// Report timeouts and cancellation as such, whatever Terraform printed.
			var re *terraform.Error
			if errors.As(err, &re) && !errors.Is(re.Err, ce) {
				re.Reason = fmt.Sprintf("%v after %s", ce, req.Timeout)
				if !errors.Is(ce, terraform.ErrTimeout) {
					re.Reason = ce.Error()
				}
				re.Err = errors.Join(ce, re.Err)
			}
		}
	}()
	kept := r.openKept(req)
	defer kept.Close()
	res, stale, err := r.attempt(ctx, req, marker, grace, kept)
	if stale {
		// The kept state no longer fits (a provider or module gone, the
		// backend changed): once more, from a fresh init.
		r.Logger.Info("kept working directory no longer fits: fresh init", "workspace", req.Workspace, "run_id", req.RunID)
		kept.Discard()
		res, _, err = r.attempt(ctx, req, marker, grace, kept)
	}
	return res, err
}

// openKept takes the workspace's kept directory, or returns nil: kept
// state off, or the directory busy or unusable (the run then inits in a
// fresh directory, as without it).
func (r *Runner) openKept(req terraform.Request) *sandbox.Kept {
	if !r.KeepWorkDirs || req.NoFastPaths {
		return nil
	}
	k, err := sandbox.OpenKept(sandbox.KeptDir(req.WorkDir, req.Owner, req.Workspace))
	if err != nil {
		r.Logger.Debug("kept working directory unavailable", "workspace", req.Workspace, "err", err)
		return nil
	}
	return k
}

// attempt is one try of the run in a fresh run directory. With kept, it
// reuses the kept state when its key matches (skipping init) and saves
// the state of a successful run; stale reports a failure of a reused
// state that a fresh init may cure.
func (r *Runner) attempt(ctx context.Context, req terraform.Request, marker string, grace time.Duration, kept *sandbox.Kept) (res runner.Result, stale bool, err error) {
	phases := tfsession.NewPhases(&res.Phases)
	p, err := tfsession.Prepare(ctx, tfsession.PrepareOptions{
		Options: tfsession.Options{
			Request: req, Grace: grace, Log: req.Log, Shared: &r.shared, Phases: phases,
		},
		DirPrefix: sandbox.DetectDirPrefix, Marker: marker,
		Sourced: func(p *tfsession.Prepared) {
			res.Commit = p.Commit
			// A static read, before Terraform writes anything into the copy
			// (and, for s3, the bucket policy read with the run's own
			// credentials). An unreadable backend block is left to init,
			// which reports it properly.
			benv := backend.Env{Vars: p.Env, Log: r.Logger.With("workspace", req.Workspace)}
			if fs, err := backend.Check(ctx, sandbox.SourceDir(p.Dir), p.ModuleDir, req.BackendConfig, req.Backend, benv); err == nil {
				res.Backend = fs
			} else {
				r.Logger.Debug("backend check skipped", "workspace", req.Workspace, "err", p.Redactor.Apply(err.Error()))
			}
		},
	})
	if err != nil {
		return res, false, err
	}
	defer p.Close()
	s := p.Session

	var key string
	var initAt time.Time
	reused := false
	if kept != nil {
		if key, err = sandbox.KeptKey(ctx, req, s.Binary(), p.Commit, sandbox.SourceDir(p.Dir)); err != nil {
			r.Logger.Debug("kept working directory: no key", "workspace", req.Workspace, "err", p.Redactor.Apply(err.Error()))
			kept = nil
		} else {
			initAt, reused = kept.Restore(key, p.ModuleDir)
		}
	}
	// A failed run leaves nothing kept: the next one inits afresh.
	defer func() {
		if kept == nil {
			return
		}
		if err != nil {
			kept.Discard()
		} else if serr := kept.Save(key, p.ModuleDir, initAt); serr != nil {
			r.Logger.Debug("kept working directory not saved", "workspace", req.Workspace, "err", p.Redactor.Apply(serr.Error()))
		}
	}()
	// stale: a failure of a reused state that names a missing init.
	staleErr := func(err error) bool {
		var re *terraform.Error
		return reused && ctx.Err() == nil && errors.As(err, &re) && sandbox.InitNeeded(re.Reason+"\n"+s.Stderr())
	}

	if q := req.Query; q != nil && len(q.Lists) > 0 {
		if err := tfsession.WriteLists(p.ModuleDir, q.Lists); err != nil {
			return res, false, &terraform.Error{Phase: "query", Reason: err.Error(), Err: err}
		}
	}
	if !reused {
		if err := s.Init(ctx, tfsession.InitOptions{PluginCache: true}); err != nil {
			return res, false, err
		}
		initAt = time.Now()
	}
	res.Tool = s.Version(ctx)
	res.Providers = tfsession.Providers(p.ModuleDir)
	if reused {
		s.Phase("reuse")
	} else {
		s.Phase("init")
	}

	if req.Query != nil {
		// A scan: the list blocks' answer instead of a plan.
		if res.Listed, err = s.Query(ctx); err != nil {
			return res, staleErr(err), err
		}
		s.Phase("query")
		return res, false, nil
	}
	if err := s.WorkspaceSelect(ctx); err != nil {
		return res, staleErr(err), err
	}
	planFile := filepath.Join(p.Dir, "driftwatch.tfplan")
	changed, err := s.Plan(ctx, tfsession.PlanOptions{Out: planFile, JSON: true})
	if err != nil {
		return res, staleErr(err), err
	}
	if changed {
		res.ExitCode = 2
	}
	s.Phase("plan")

	// The plan is summarised from the plan file itself (a plan that found
	// nothing from its state and configuration snapshot only); show -json
	// runs only for what the file does not tell as well (a failing check,
	// an older tool, fast paths off).
	plan, ok := (*planparse.Plan)(nil), false
	if !req.NoFastPaths {
		if plan, ok = s.Unchanged(planFile); !ok {
			plan, ok = s.Decoded(ctx, planFile)
		}
	}
	if !ok {
		if plan, err = s.Show(ctx, planFile); err != nil {
			return res, false, err
		}
	}
	res.Plan = plan
	s.LogChanges(plan)
	if req.LogPlanText {
		if err := s.ShowText(ctx, planFile); err != nil {
			return res, false, err
		}
	}
	if !ok || req.LogPlanText {
		s.Phase("show")
	}
	return res, false, nil
}

// CheckQuery says why the binary bin cannot run a scan (Terraform before
// 1.14, OpenTofu), or nil: validate asks it of every scan
// (tfsession.CheckQueryBinary).
func CheckQuery(ctx context.Context, bin string) error { return tfsession.CheckQueryBinary(ctx, bin) }
