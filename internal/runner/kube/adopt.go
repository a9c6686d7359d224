package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// Adopted is a run whose Job was already running when Adopt looked: started
// by a previous daemon (or earlier by this one). Its pod holds the result
// token; the Receiver was re-armed with the hash from the Job's annotation.
type Adopted struct {
	Workspace string
	// RunID is the run the Job was started for: the app records the
	// outcome under it (the store has it as running).
	RunID   string
	Job     string
	Created time.Time
	// Remediation marks a remediation Job (LabelKind=KindRemediate): its
	// pod may be applying. Await it with WaitOutcome rather than deleting
	// it: stopping an apply half way leaves the infrastructure half
	// reverted, while letting it finish ends in a known outcome. RunID is
	// then the apply's run id (the remediation's apply_run_id).
	Remediation bool
	f           *flight
}

// Wait awaits the adopted run's outcome, as Run would. When ctx ends and
// no one else awaits it, its Job is deleted. For a Remediation Job it
// returns an error (the Job delivers an outcome, not a plan): use
// WaitOutcome.
func (a *Adopted) Wait(ctx context.Context) (runner.Result, error) {
	if a.Remediation {
		return runner.Result{}, &terraform.Error{Phase: "job", Reason: fmt.Sprintf("job %s is a remediation: it delivers an outcome, not a plan", a.Job)}
	}
	if err := a.await(ctx); err != nil {
		return runner.Result{}, err
	}
	return a.f.res, a.f.err
}

// WaitOutcome awaits an adopted Remediation Job's outcome, as Remediate
// would.
func (a *Adopted) WaitOutcome(ctx context.Context) (engine.Outcome, error) {
	if !a.Remediation {
		err := &terraform.Error{Phase: "job", Reason: fmt.Sprintf("job %s is a detection: it delivers a plan, not an outcome", a.Job)}
		return failedOutcome(err, false)
	}
	if err := a.await(ctx); err != nil {
		return failedOutcome(err, true)
	}
	if a.f.outcome != nil {
		return *a.f.outcome, a.f.err
	}
	return failedOutcome(a.f.err, true)
}

// OutcomeRecorder records an adopted remediation Job's outcome on the
// remediation it applies (remediation.Controller.RecordAdopted).
type OutcomeRecorder interface {
	RecordAdopted(ctx context.Context, workspace, runID string, out engine.Outcome)
}

// AwaitRemediation awaits an adopted Remediation Job (one a previous
// daemon left applying) and hands its outcome to rec. Only this daemon
// stopping (ErrStopped) ends the wait, and is returned: the Job then
// stays for the next daemon. A cancel of ctx does not: a cancel request
// must not delete a Job half way through its apply (it cancels the
// verification detection that follows instead).
func (a *Adopted) AwaitRemediation(ctx context.Context, rec OutcomeRecorder) error {
	a.f.log.Info("awaiting the remediation job a previous daemon left running")
	wctx := context.WithoutCancel(ctx)
	out, err := a.WaitOutcome(wctx)
	if errors.Is(err, ErrStopped) {
		return err
	}
	rec.RecordAdopted(wctx, a.Workspace, a.RunID, out)
	return nil
}

func (a *Adopted) await(ctx context.Context) error {
	if !a.f.join() {
		<-a.f.done
		return nil
	}
	return a.f.await(ctx)
}

// Adopt lists the namespace's active run Jobs and awaits each, so their
// results are received instead of duplicated: call it once at start (after
// Watch has begun, before scheduling) and Wait on each, recording the
// outcome under Adopted.RunID. Until an Adopted run ends, a Run for its
// workspace with another run id is refused with a *BusyError. Calling
// Adopt again returns the runs still awaited, adopting any new ones.
func (r *Runner) Adopt(ctx context.Context) ([]*Adopted, error) {
	if err := r.waitSynced(ctx); err != nil {
		return nil, err
	}
	list, err := r.cs.BatchV1().Jobs(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector()})
	if err != nil {
		return nil, fmt.Errorf("adopt: list jobs: %w", err)
	}
	byWS := map[string]bool{}
	var out []*Adopted
	for i := range list.Items {
		j := &list.Items[i]
		ws := j.Annotations[AnnotationWorkspace]
		if ws == "" || byWS[ws] {
			continue
		}
		active := activeJobs(list.Items, ws, r.isConsumed)
		if len(active) == 0 {
			continue
		}
		byWS[ws] = true
		// Two active Jobs for one workspace come from a detection whose pod
		// is still exiting after delivering (then the other is its
		// remediation, awaited first) or from outside this daemon's rules
		// (e.g. two daemons without leader election): await the first
		// (activeJobs' order); the others finish on their own.
		for _, extra := range active[1:] {
			r.log.Warn("more than one active job for a workspace; awaiting one",
				"workspace", ws, "job", extra.Name, "awaited", active[0].Name)
		}
		f := r.adoptJob(ws, active[0])
		out = append(out, &Adopted{Workspace: ws, RunID: f.runID, Job: f.name, Created: f.createdAt,
			Remediation: f.kind == KindRemediate, f: f})
	}
	return out, nil
}

// adoptJob returns the flight for j, tracking it if this daemon does not yet.
func (r *Runner) adoptJob(ws string, j *batchv1.Job) *flight {
	l := r.wsLock(ws)
	l.Lock()
	defer l.Unlock()
	r.mu.Lock()
	f := r.byJob[j.Name]
	r.mu.Unlock()
	if f != nil {
		return f
	}
	r.log.Info("adopting running job", "workspace", ws, "run_id", j.Annotations[AnnotationRunID], "job", j.Name)
	return r.track(j, 0)
}

// Jobs is r as the run lifecycle's Lead sees it (run.Jobs): it watches
// r's Jobs, and hands over the adopted ones as runner.Adopted runs joined
// to rec, which records an adopted apply's outcome (the remediation
// controller).
func (r *Runner) Jobs(rec OutcomeRecorder) Jobs { return Jobs{r: r, rec: rec} }

// Jobs is Runner.Jobs.
type Jobs struct {
	r   *Runner
	rec OutcomeRecorder
}

// Watch is Runner.Watch.
func (j Jobs) Watch(ctx context.Context) error { return j.r.Watch(ctx) }

// Adopt is Runner.Adopt, each run joined to the recorder (Adopted.Runner).
func (j Jobs) Adopt(ctx context.Context) ([]runner.Adopted, error) {
	found, err := j.r.Adopt(ctx)
	adopted := make([]runner.Adopted, 0, len(found))
	for _, a := range found {
		adopted = append(adopted, runner.Adopted{Workspace: a.Workspace, RunID: a.RunID, Job: a.Job, Remediation: a.Remediation,
			Runner: a.Runner(j.rec, j.r)})
	}
	return adopted, err
}

// Runner is a runner.Runner whose one run is a: the auditor classifies its
// result like any other run's. An adopted remediation Job is awaited
// (never deleted: stopping an apply half way is worse than letting it
// end), its outcome handed to rec, and the run is then a fresh detection
// Job of r: the verification that a local apply is followed by.
func (a *Adopted) Runner(rec OutcomeRecorder, r *Runner) runner.Runner {
	return adoptedRunner{a: a, rec: rec, runner: r}
}

type adoptedRunner struct {
	a      *Adopted
	rec    OutcomeRecorder
	runner *Runner
}

func (r adoptedRunner) Run(ctx context.Context, req terraform.Request) (runner.Result, error) {
	if !r.a.Remediation {
		r.a.f.attachLog(req)
		return r.a.Wait(ctx)
	}
	if err := r.a.AwaitRemediation(ctx, r.rec); err != nil {
		return runner.Result{}, err
	}
	return r.runner.Run(ctx, req)
}
