package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

var _ runner.Runner = (*Runner)(nil)

// Options are the Runner's dependencies.
type Options struct {
	// Client talks to the cluster (RBAC in Config.Namespace: jobs create,
	// get, list, watch, delete; pods get, list, watch; secrets create;
	// events create if Config.Events).
	Client kubernetes.Interface
	// Receiver is the daemon's result endpoint (mounted by the app on
	// remote.Route); the Runner arms it for each run.
	Receiver *remote.Receiver
	Config   Config
	Logger   *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Runner runs each workspace run as a Job; see the package doc.
type Runner struct {
	cfg  Config
	cs   kubernetes.Interface
	recv *remote.Receiver
	log  *slog.Logger
	now  func() time.Time

	synced  chan struct{} // closed once Watch's caches have synced
	stopped chan struct{} // closed when Watch returns
	// The informers' caches (Watch): Jobs by name and by workspace, pods
	// by Job (index.go).
	jobs     batchlisters.JobLister
	jobIndex cache.Indexer
	podIndex cache.Indexer

	mu       sync.Mutex
	watched  bool
	stopping bool               // Watch is returning: new flights end at once
	byJob    map[string]*flight // job name -> its flight
	byWS     map[string]*flight // workspace -> its flight
	wsLocks  map[string]*sync.Mutex
	// consumed holds the Jobs whose outcome this daemon has taken (until
	// when to remember them): such a Job may still look active for a
	// moment (its pod exits after delivering) but is never adopted.
	consumed map[string]time.Time
}

// ErrBusy is matched (errors.Is) by a *BusyError.
var ErrBusy = errors.New("workspace already has an active run")

// BusyError refuses a run of a workspace while this daemon awaits another
// run of it: at most one active Job per workspace.
type BusyError struct {
	Workspace, RunID, Job string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("workspace %q already has an active run %s (job %s); at most one run per workspace at a time",
		e.Workspace, e.RunID, e.Job)
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// ErrStopped is in the error of every run still awaited when Watch
// returns: the run was interrupted, not failed, and its Job is left running
// for the next daemon to adopt.
var ErrStopped = errors.New("kubernetes runner stopped")

// errAbandoned ends a run whose every waiter left (its context ended); its
// Job is deleted.
var errAbandoned = errors.New("run abandoned")

// New validates the configuration and returns a Runner. Call Watch before
// (or while) running.
func New(o Options) (*Runner, error) {
	switch {
	case o.Client == nil:
		return nil, errors.New("driftwatch/runner/kube: Options.Client is required")
	case o.Receiver == nil:
		return nil, errors.New("driftwatch/runner/kube: Options.Receiver is required")
	case o.Logger == nil:
		return nil, errors.New("driftwatch/runner/kube: Options.Logger is required")
	}
	if err := o.Config.Validate(); err != nil {
		return nil, fmt.Errorf("kubernetes runner: %w", err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Runner{
		cfg:      o.Config.withDefaults(),
		cs:       o.Client,
		recv:     o.Receiver,
		log:      o.Logger,
		now:      o.Now,
		synced:   make(chan struct{}),
		stopped:  make(chan struct{}),
		byJob:    map[string]*flight{},
		byWS:     map[string]*flight{},
		wsLocks:  map[string]*sync.Mutex{},
		consumed: map[string]time.Time{},
	}, nil
}

// Watch runs the Job and Pod informers of Config.Namespace (one list and one
// watch each, filtered by the managed-by label: no per-Job polling) until
// ctx ends. Runs wait for its caches. When it returns, runs still awaited
// end with an error and their Jobs are left running for the next daemon to
// adopt. Call it once.
func (r *Runner) Watch(ctx context.Context) error {
	r.mu.Lock()
	if r.watched {
		r.mu.Unlock()
		return errors.New("kubernetes runner: Watch called twice")
	}
	r.watched = true
	r.mu.Unlock()
	defer close(r.stopped)

	factory := informers.NewSharedInformerFactoryWithOptions(r.cs, 0,
		informers.WithNamespace(r.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ManagedSelector() }))
	jobInf := factory.Batch().V1().Jobs()
	podInf := factory.Core().V1().Pods()
	if _, err := jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.onJob(obj) },
		UpdateFunc: func(_, obj any) { r.onJob(obj) },
		DeleteFunc: func(obj any) { r.onJob(obj) },
	}); err != nil {
		return fmt.Errorf("kubernetes runner: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.onPod(obj) },
		UpdateFunc: func(_, obj any) { r.onPod(obj) },
		DeleteFunc: func(obj any) { r.onPod(obj) },
	}); err != nil {
		return fmt.Errorf("kubernetes runner: %w", err)
	}
	if err := jobInf.Informer().AddIndexers(cache.Indexers{indexWorkspace: labelIndex(LabelWorkspace)}); err != nil {
		return fmt.Errorf("kubernetes runner: %w", err)
	}
	if err := podInf.Informer().AddIndexers(cache.Indexers{indexJobName: labelIndex(batchv1.JobNameLabel)}); err != nil {
		return fmt.Errorf("kubernetes runner: %w", err)
	}
	r.jobs, r.jobIndex, r.podIndex = jobInf.Lister(), jobInf.Informer().GetIndexer(), podInf.Informer().GetIndexer()
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		if ctx.Err() != nil {
			r.stopFlights()
			return nil
		}
		return fmt.Errorf("kubernetes runner: sync caches: %w", err)
	}
	close(r.synced)
	r.log.Info("kubernetes runner watching", "namespace", r.cfg.Namespace)
	<-ctx.Done()
	r.stopFlights()
	return nil
}

func (r *Runner) stopFlights() {
	r.mu.Lock()
	r.stopping = true
	fs := make([]*flight, 0, len(r.byJob))
	for _, f := range r.byJob {
		fs = append(fs, f)
	}
	r.mu.Unlock()
	for _, f := range fs {
		f.cancel(ErrStopped)
	}
	for _, f := range fs {
		<-f.done
	}
}

func (r *Runner) waitSynced(ctx context.Context) error {
	select {
	case <-r.synced:
		return nil
	case <-r.stopped:
		return ErrStopped
	case <-ctx.Done():
		return fmt.Errorf("waiting for the kubernetes runner's caches: %w", context.Cause(ctx))
	}
}

// Run runs req as a Job and returns its result: the one its pod delivers,
// or an error for a Job that fails (deadline, OOM, image pull, pod exit)
// or is deleted. If this daemon already awaits a run of the workspace, a
// Run for the same run id joins it and any other is refused with a
// *BusyError. A Job of the workspace left running by a previous daemon is
// adopted: awaited instead of starting another. When ctx ends before the
// outcome and no one else awaits the run, its Job is deleted (background
// propagation, so its pod goes too).
func (r *Runner) Run(ctx context.Context, req terraform.Request) (runner.Result, error) {
	if err := r.waitSynced(ctx); err != nil {
		return runner.Result{}, &terraform.Error{Phase: "submit", Reason: err.Error(), Err: err}
	}
	f, err := r.start(ctx, req, nil)
	if err != nil {
		return runner.Result{}, err
	}
	f.attachLog(req)
	return f.wait(ctx)
}

// Remediate applies approved to req's workspace in a Job, as a.Apply would
// in the daemon's process: the Job (labelled LabelKind=KindRemediate) runs
// `driftwatch runner` on a spec carrying the approved change set and a's
// rules, envelope and lock timeout; its pod runs engine.Applier.Apply in
// the same sandbox as a detection and delivers the Outcome through the
// Receiver with the run's one-time token. a's kill switch (Paused) is not
// consulted here: the caller checks it before calling, and the pod asks
// the Receiver's proceed check (remote.ProceedRoute, answered by
// ReceiverOptions.Proceed) right before `terraform apply`, applying
// nothing unless the daemon answers that it may.
//
// Everything Run does holds: one Job per workspace (another run's Job of
// the workspace makes this a *BusyError: an apply never adopts a Job it
// did not start; and Run refuses a workspace whose remediation Job is
// active), deadline, OOM and pod failures, cancellation
// (ctx ends: the Job is deleted; Terraform gets SIGTERM's SIGINT and
// stops), ErrStopped when Watch returns (the Job is left running: a
// restarted daemon adopts and awaits it, see Adopted.Remediation), then
// wrapped in engine.ErrLeftRunning, which tells the remediation
// controller to record nothing (so the runner is its Applier as it is).
//
// The returned error is non-nil exactly when the outcome is failed: the
// pod's *terraform.Error, or one with phase setup, submit or job when no
// outcome was delivered. In that last case Outcome.ApplyStarted is set
// unless the Job was never created: the apply may have begun.
func (r *Runner) Remediate(ctx context.Context, a *engine.Applier, req terraform.Request, approved engine.ChangeSet) (_ engine.Outcome, err error) {
	defer func() {
		if errors.Is(err, ErrStopped) {
			// The Job goes on applying: the controller leaves it to the
			// next daemon.
			err = fmt.Errorf("%w: %w", engine.ErrLeftRunning, err)
		}
	}()
	if err := r.waitSynced(ctx); err != nil {
		return failedOutcome(&terraform.Error{Phase: "submit", Reason: err.Error(), Err: err}, false)
	}
	f, err := r.start(ctx, req, remote.RemediationOf(a, approved))
	if err != nil {
		return failedOutcome(err, false)
	}
	f.attachLog(req)
	if err := f.await(ctx); err != nil {
		return failedOutcome(err, true)
	}
	if f.outcome != nil {
		return *f.outcome, f.err
	}
	return failedOutcome(f.err, true)
}

// failedOutcome is the outcome of a remediation Job that delivered none.
func failedOutcome(err error, mayHaveStarted bool) (engine.Outcome, error) {
	return engine.Outcome{Result: engine.ResultFailed, Reason: err.Error(), ApplyStarted: mayHaveStarted}, err
}

func (r *Runner) wsLock(ws string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.wsLocks[ws]
	if !ok {
		l = &sync.Mutex{}
		r.wsLocks[ws] = l
	}
	return l
}

// start finds or creates the run's flight (with this caller as a waiter).
// The per-workspace lock makes "check, then create" atomic in this daemon;
// leader election makes this daemon the only one creating.
func (r *Runner) start(ctx context.Context, req terraform.Request, rem *remote.Remediation) (*flight, error) {
	submitErr := func(what string, err error) error {
		return &terraform.Error{Phase: "submit", Reason: fmt.Sprintf("%s: %v", what, err), Err: err}
	}
	cfg := r.cfg
	ca, err := ReadCallbackCA(cfg.CallbackCAFile)
	if err != nil {
		err = fmt.Errorf("callback CA: %w", err)
		return nil, &terraform.Error{Phase: "setup", Reason: err.Error(), Err: err}
	}
	cfg.CallbackCA = ca
	p, err := prepare(cfg, req, r.now())
	if err != nil {
		return nil, &terraform.Error{Phase: "setup", Reason: err.Error(), Err: err}
	}
	if rem != nil {
		p.remediate(r.cfg, rem)
	}
	l := r.wsLock(req.Workspace)
	l.Lock()
	defer l.Unlock()

	r.mu.Lock()
	f := r.byWS[req.Workspace]
	r.mu.Unlock()
	if f != nil {
		switch f.admit(req.RunID) {
		case admitJoined:
			return f, nil
		case admitBusy:
			busy := &BusyError{Workspace: req.Workspace, RunID: f.runID, Job: f.name}
			return nil, &terraform.Error{Phase: "submit", Reason: busy.Error(), Err: busy}
		case admitFinishing: // its Job is done: this run may start
		}
	}

	// The workspace's Jobs from the informer's cache, not a List of the
	// API: one request less per run, which the client's rate limit and the
	// apiserver pay for at thousands of runs an hour. The cache is synced
	// (waitSynced) and holds every Job this daemon created; another
	// daemon's were adopted at start (Adopt lists the API).
	items, err := r.workspaceJobs(req.Workspace)
	if err != nil {
		return nil, submitErr("list jobs", err)
	}
	jobs := r.cs.BatchV1().Jobs(r.cfg.Namespace)
	if active := activeJobs(items, req.Workspace, r.isConsumed); len(active) > 0 {
		j := active[0]
		if jobKind(j) != specKind(p.spec) || (rem != nil && j.Annotations[AnnotationRunID] != req.RunID) {
			// A detection cannot take an apply's outcome for its plan,
			// nor an apply a plan for its outcome, nor an apply another
			// apply's (its change set may differ): wait for it to end.
			busy := &BusyError{Workspace: req.Workspace, RunID: j.Annotations[AnnotationRunID], Job: j.Name}
			return nil, &terraform.Error{Phase: "submit", Reason: busy.Error(), Err: busy}
		}
		r.log.Warn("adopting the workspace's running job instead of starting another",
			"workspace", req.Workspace, "run_id", req.RunID, "job", j.Name, "job_run_id", j.Annotations[AnnotationRunID])
		return r.track(j, 1), nil
	}

	token, hash := remote.NewToken()
	results, err := r.recv.Expect(req.RunID, hash, p.spec.ExpiresAt)
	if err != nil {
		return nil, submitErr("arm result receiver", err)
	}
	created, err := jobs.Create(ctx, buildJob(r.cfg, p, hash), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// The same run was submitted before (a retry, a restart): adopt
		// that Job; its pod holds that submission's token.
		r.recv.Forget(req.RunID)
		if r.isConsumed(p.name) {
			err := fmt.Errorf("run %s already finished (job %s)", req.RunID, p.name)
			return nil, &terraform.Error{Phase: "submit", Reason: err.Error(), Err: err}
		}
		existing, gerr := jobs.Get(ctx, p.name, metav1.GetOptions{})
		if gerr != nil {
			return nil, submitErr("get existing job", gerr)
		}
		r.log.Info("job of this run exists already; adopting it", "workspace", req.Workspace, "run_id", req.RunID, "job", p.name)
		return r.track(existing, 1), nil
	}
	if err != nil {
		r.recv.Forget(req.RunID)
		if ctx.Err() != nil {
			// The request may have reached the server: a Job without its
			// Secret would wait for it until its deadline.
			r.discard(p.name, "", p.spec.ExpiresAt)
		}
		return nil, submitErr("create job", err)
	}
	secret, err := buildSecret(created, p.spec, token)
	if err == nil {
		_, err = r.cs.CoreV1().Secrets(r.cfg.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	}
	if err != nil {
		r.recv.Forget(req.RunID)
		r.discard(created.Name, created.UID, p.spec.ExpiresAt)
		return nil, submitErr("create run secret", err)
	}
	r.log.Info("job created", "workspace", req.Workspace, "run_id", req.RunID, "job", created.Name,
		"deadline", p.deadline)
	return r.trackArmed(created, results, 1), nil
}

// activeJobs returns the workspace's unfinished Jobs, leaving out those
// whose outcome was consumed already: remediation Jobs first, then oldest
// first. A remediation Job is the one to await: it may be applying, and it
// is only created once the workspace's detection has delivered (whose Job
// may still look active while its pod exits; a restarted daemon no longer
// knows it consumed that).
func activeJobs(items []batchv1.Job, workspace string, consumed func(name string) bool) []*batchv1.Job {
	var out []*batchv1.Job
	for i := range items {
		j := &items[i]
		if j.Annotations[AnnotationWorkspace] != workspace || j.DeletionTimestamp != nil || consumed(j.Name) {
			continue
		}
		if done, _ := jobFinished(j); done {
			continue
		}
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool {
		if ra, rb := jobKind(out[a]) == KindRemediate, jobKind(out[b]) == KindRemediate; ra != rb {
			return ra
		}
		ta, tb := out[a].CreationTimestamp, out[b].CreationTimestamp
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return out[a].Name < out[b].Name
	})
	return out
}

// jobFinished reports whether the Job has a true Complete or Failed
// condition, and which.
func jobFinished(j *batchv1.Job) (bool, *batchv1.JobCondition) {
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c
		}
	}
	return false, nil
}

// track starts awaiting an existing Job, re-arming the Receiver with the
// token hash from its annotation.
func (r *Runner) track(j *batchv1.Job, waiters int) *flight {
	runID := j.Annotations[AnnotationRunID]
	var results <-chan remote.Delivery
	hash, herr := remote.ParseHash(j.Annotations[AnnotationTokenHash])
	expires, terr := time.Parse(time.RFC3339, j.Annotations[AnnotationExpiresAt])
	switch {
	case runID == "" || herr != nil || terr != nil:
		r.log.Warn("job lacks driftwatch's run annotations; only its failure can be observed",
			"job", j.Name, "err", errors.Join(herr, terr))
	default:
		ch, err := r.recv.Expect(runID, hash, expires)
		if err != nil {
			r.log.Warn("cannot arm the result receiver for an adopted job", "job", j.Name, "err", err)
		}
		results = ch
	}
	return r.trackArmed(j, results, waiters)
}

// trackArmed registers and starts a flight; the caller holds the
// workspace's lock.
func (r *Runner) trackArmed(j *batchv1.Job, results <-chan remote.Delivery, waiters int) *flight {
	ctx, cancel := context.WithCancelCause(context.Background())
	f := &flight{
		r:         r,
		name:      j.Name,
		kind:      jobKind(j),
		uid:       j.UID,
		workspace: j.Annotations[AnnotationWorkspace],
		runID:     j.Annotations[AnnotationRunID],
		createdAt: j.CreationTimestamp.Time,
		results:   results,
		kick:      make(chan struct{}, 1),
		ctx:       ctx,
		cancel:    cancel,
		waiters:   waiters,
		done:      make(chan struct{}),
		log:       r.log.With("workspace", j.Annotations[AnnotationWorkspace], "run_id", j.Annotations[AnnotationRunID], "job", j.Name),
	}
	if f.workspace == "" {
		f.workspace = j.Labels[LabelWorkspace]
	}
	if t, err := time.Parse(time.RFC3339, j.Annotations[AnnotationExpiresAt]); err == nil {
		f.expires = t
	}
	for _, c := range j.Spec.Template.Spec.Containers {
		if c.Name == ContainerName {
			f.memLimit = c.Resources.Limits.Memory().String()
		}
	}
	r.mu.Lock()
	r.byJob[f.name] = f
	r.byWS[f.workspace] = f
	if r.stopping {
		// Watch stopped while this run was being submitted: no informer
		// will report on it; leave its Job for the next daemon.
		f.cancel(ErrStopped)
	}
	r.mu.Unlock()
	f.poke()
	go f.loop()
	return f
}

// untrack forgets a finished flight; consumed marks its Job as done with.
func (r *Runner) untrack(f *flight, consumed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for name, until := range r.consumed {
		if now.After(until) {
			delete(r.consumed, name)
		}
	}
	if consumed {
		r.markConsumed(f.name, f.expires, now)
	}
	if r.byJob[f.name] == f {
		delete(r.byJob, f.name)
	}
	if r.byWS[f.workspace] == f {
		delete(r.byWS, f.workspace)
	}
}

// markConsumed marks Job name done with until an hour past expires (its
// deadline; zero: now plus the default timeout), when it has finished or
// been deleted for sure. The caller holds r.mu.
func (r *Runner) markConsumed(name string, expires, now time.Time) {
	if expires.IsZero() {
		expires = now.Add(r.cfg.DefaultTimeout)
	}
	r.consumed[name] = expires.Add(time.Hour)
}

// discard deletes a Job this runner created for a submission that failed,
// and marks it done with: until the informer's cache hears of the delete
// it still shows the Job active, and the workspace's next run would adopt
// it and wait for it until its deadline.
func (r *Runner) discard(name string, uid types.UID, deadline time.Time) {
	r.mu.Lock()
	r.markConsumed(name, deadline, r.now())
	r.mu.Unlock()
	r.deleteJob(name, uid)
}

func (r *Runner) isConsumed(job string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.consumed[job]
	return ok
}

func (r *Runner) flightFor(job string) *flight {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byJob[job]
}

func (r *Runner) onJob(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if j, ok := obj.(*batchv1.Job); ok {
		if f := r.flightFor(j.Name); f != nil {
			f.poke()
		}
	}
}

func (r *Runner) onPod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if f := r.flightFor(p.Labels[batchv1.JobNameLabel]); f != nil {
		// The pod may be gone by the time the flight looks (the Job
		// controller deletes pods past the deadline): note its state now.
		f.notePod(p)
		f.poke()
	}
}

// deleteJob deletes a run's Job and, through background propagation, its
// pod and Secret (batch/v1 Jobs orphan their pods by default).
func (r *Runner) deleteJob(name string, uid types.UID) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	if uid != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(uid))
	}
	err := r.cs.BatchV1().Jobs(r.cfg.Namespace).Delete(ctx, name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.log.Error("delete job", "job", name, "err", err)
	}
}
