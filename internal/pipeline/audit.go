package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/backend"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Target is one workspace ready to run.
type Target struct {
	Name    string
	Labels  map[string]string
	Owner   string
	Request terraform.Request
	Rules   policy.Rules
	// Attribution is the workspace's attribution command (nil: none),
	// asked about drift findings first seen (attribute.go).
	Attribution *config.AttributionCommand
	// Prior is what the caller recorded of the workspace before this run
	// (nil: nothing; the one-shot audit), which dates its drift.
	Prior *Prior
	// Scan is set for a scans: entry (Request.Query set): its result is
	// the comparison of what it listed with the fleet's states (scan.go).
	Scan *Scan
}

// SourceDir is where the target's findings are located in a report
// (report.Workspace.SourceDir): its root module's directory, or, for a
// module in a git repository, its path in the repository (relative to the
// report's SourceRoot).
func (t Target) SourceDir() string {
	if g := t.Request.Source.Git; g != nil {
		return filepath.FromSlash(g.Path)
	}
	return t.Request.Source.Path
}

// Observer is told when a workspace starts and finishes (progress display,
// metrics). Calls may come from several goroutines.
type Observer interface {
	Started(name string)
	Finished(r drift.Result)
}

// Auditor runs targets through the pipeline.
type Auditor struct {
	Runner runner.Runner
	Logger *slog.Logger
	Now    func() time.Time
	// Fleet gives scans every workspace's managed instances (the daemon:
	// the store's workspace states). Nil: RunAll's own workspace results
	// (the one-shot audit), and a scan checked alone errors.
	Fleet Fleet
}

// Check runs one target end to end. It never returns an error: a failed run
// is a result with status errored and a one-line, secret-free reason.
func (a *Auditor) Check(ctx context.Context, t Target) drift.Result {
	res, _ := a.CheckPlan(ctx, t)
	return res
}

// CheckPlan is Check that also returns the run's value-free plan (nil
// when the run errored), for callers that evaluate it further (the
// daemon's remediation envelope).
func (a *Auditor) CheckPlan(ctx context.Context, t Target) (drift.Result, *planparse.Plan) {
	now := a.Now
	if now == nil {
		now = time.Now
	}
	res := drift.Result{Workspace: t.Name, Labels: t.Labels, Started: now()}
	log := a.Logger.With("workspace", t.Name, "run_id", t.Request.RunID)
	out, err := a.Runner.Run(ctx, t.Request)
	res.Duration = now().Sub(res.Started)
	res.Tool, res.Providers = out.Tool, out.Providers
	res.Phases = out.Phases
	if err != nil {
		res.Status = drift.StatusErrored
		res.Error = reason(err, append(backend.ConfigSecrets(t.Request.BackendConfig, nil), t.Request.Redact...))
		res.Findings = out.Backend // static, still true when Terraform fails
		log.Warn("run errored", "err", res.Error, "duration", res.Duration)
		return res, nil
	}
	if t.Scan != nil {
		a.scanned(ctx, log, t, out.Listed, &res, now)
		return res, nil
	}
	if out.Plan.Errored {
		res.Status = drift.StatusErrored
		res.Error = "plan: terraform reported an errored plan"
		return res, nil
	}
	classifyStart := now()
	res.Managed = out.Plan.Managed
	res.Findings = policy.Classify(out.Plan, t.Rules)
	res.Phases = append(res.Phases, drift.Phase{Name: "classify", Duration: now().Sub(classifyStart)})
	res.Status = drift.StatusOf(res.Findings)
	// Hygiene findings are listed but never change the status.
	res.Findings = append(res.Findings, out.Backend...)
	drift.SortFindings(res.Findings)
	checked := now()
	fresh := windows(t.Prior, res.Findings, checked)
	attribute(ctx, log, t, out.Plan, res.Findings, fresh, checked)
	commits(ctx, log, t, out.Commit, res.Findings)
	c := drift.CountFindings(res.Findings)
	log.Info("run finished", "status", res.Status, "drift", c.Drift, "pending", c.Pending,
		"forbidden", c.Forbidden, "exit_code", out.ExitCode, "duration", res.Duration)
	return res, out.Plan
}

// reason turns a run error into the one line shown to users (the
// workspace's error, the status page, alerts, the daemon's log). Runners
// redact their reasons; this is the last pass over whatever any runner
// (or a wrapped error's text) returned: the known secrets, and the user
// info and query string of every URL (sandbox.Redactor).
func reason(err error, secrets []string) string {
	var re *terraform.Error
	msg := ""
	if errors.As(err, &re) {
		msg = re.Error()
	} else {
		msg = err.Error()
	}
	return sandbox.NewRedactor(secrets).Apply(msg)
}

// RunAll checks every target with at most concurrency runs at once and
// returns the results in target order.
func (a *Auditor) RunAll(ctx context.Context, targets []Target, concurrency int, obs Observer) []drift.Result {
	if concurrency < 1 {
		concurrency = 1
	}
	results := make([]drift.Result, len(targets))
	// Scans compare with the workspaces' states: without a Fleet, with
	// those of this very batch, so workspaces run first.
	var plans, scans []int
	for i, t := range targets {
		if t.Scan != nil {
			scans = append(scans, i)
		} else {
			plans = append(plans, i)
		}
	}
	b := *a
	b.runBatch(ctx, targets, plans, results, concurrency, obs)
	if len(scans) > 0 && b.Fleet == nil {
		b.Fleet = batchFleet(targets, results)
	}
	b.runBatch(ctx, targets, scans, results, concurrency, obs)
	return results
}

// runBatch checks targets[i] for every i of which into results[i].
func (a *Auditor) runBatch(ctx context.Context, targets []Target, which []int, results []drift.Result, concurrency int, obs Observer) {
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for _, i := range which {
		t := targets[i]
		// Acquire in order so workspaces start in inventory order.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			results[i] = drift.Result{Workspace: t.Name, Labels: t.Labels, Started: time.Now(),
				Status: drift.StatusErrored, Error: "cancelled before it started"}
			if obs != nil {
				obs.Finished(results[i])
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if obs != nil {
				obs.Started(t.Name)
			}
			results[i] = a.Check(ctx, t)
			if obs != nil {
				obs.Finished(results[i])
			}
		}()
	}
	wg.Wait()
}
