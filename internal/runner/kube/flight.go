package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// resultGrace is how long a Complete Job's result may trail the Job's
// status: the pod posts before it exits, so it is normally there already.
const resultGrace = 10 * time.Second

// flight is one awaited Job, shared by every caller waiting for it. Its
// loop is the only place an outcome is decided: the delivered result once
// its pod has succeeded, the Job's failure (from the informers), a
// conflicting second result, the Job's disappearance, or the end of its
// context (all waiters gone: delete the Job; Watch stopped: leave it).
//
// A delivered result is held, not taken, until the pod has succeeded (or
// the Job completed): the reporter container exits 0 only once its own
// post was accepted, which the Receiver does only for the first result or
// an identical one. So a result someone else posted first with a leaked
// token is never the verdict: the reporter's post of the real one gets 409,
// the Receiver reports the conflict, the reporter fails the pod, and the
// run errors. The cost is the pod's exit, a second or two.
type flight struct {
	r         *Runner
	name      string
	kind      string // KindDetect or KindRemediate
	uid       types.UID
	workspace string
	runID     string
	createdAt time.Time
	expires   time.Time // zero if unknown
	memLimit  string
	results   <-chan remote.Delivery // nil if the Receiver could not be armed
	kick      chan struct{}
	ctx       context.Context
	cancel    context.CancelCauseFunc
	log       *slog.Logger

	mu       sync.Mutex
	waiters  int
	finished bool
	pod      podState

	seen bool // the Job was in the informer cache once (loop only)
	// held is the delivered result, until the pod is known to have
	// succeeded (loop only).
	held *remote.Result

	done chan struct{} // closed after res, outcome and err are set
	res  runner.Result
	// outcome is what a remediation Job's pod delivered (nil if none).
	outcome *engine.Outcome
	err     error
}

// podState is what the pods of a Job told about its failure.
type podState struct {
	// fatal is a reason the pod will never start (image pull, container
	// config): the Job would only fail at its deadline, so the run ends now.
	fatal string
	// failure describes the last failed pod (exit code, OOM, eviction).
	failure string
	// succeeded: a pod of the Job succeeded (both containers exited 0).
	succeeded bool
}

type admission int

const (
	admitJoined admission = iota
	admitBusy
	admitFinishing
)

// admit lets a caller for runID wait on f.
func (f *flight) admit(runID string) admission {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.finished:
		return admitFinishing
	case f.runID != runID:
		return admitBusy
	}
	f.waiters++
	return admitJoined
}

// join adds a waiter whatever the run id (Adopted.Wait).
func (f *flight) join() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.finished {
		return false
	}
	f.waiters++
	return true
}

func (f *flight) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// wait returns the flight's outcome, or leaves when ctx ends (see await).
func (f *flight) wait(ctx context.Context) (runner.Result, error) {
	if err := f.await(ctx); err != nil {
		return runner.Result{}, err
	}
	return f.res, f.err
}

// await returns nil once the flight is decided (res, outcome and err are
// set), or the error of a waiter whose ctx ended first; the last waiter to
// leave an unfinished flight deletes its Job (and waits for that).
func (f *flight) await(ctx context.Context) error {
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-f.done: // decided meanwhile: take it
		return nil
	default:
	}
	cause := context.Cause(ctx)
	f.mu.Lock()
	f.waiters--
	last := f.waiters == 0 && !f.finished
	f.mu.Unlock()
	if last {
		f.cancel(fmt.Errorf("%w: %w", errAbandoned, cause))
		<-f.done
	}
	return &terraform.Error{Phase: "job", Reason: cause.Error(), Err: cause}
}

// deliver ends the flight with what its pod delivered: a plan, or a
// remediation Job's outcome.
func (f *flight) deliver(res remote.Result) {
	if f.kind == KindRemediate {
		out, err := res.UnpackOutcome()
		f.outcome = &out
		f.finish(runner.Result{}, err)
		return
	}
	out, err := res.Unpack()
	f.finish(out, err)
}

// take handles a Delivery: a result is held until the pod is known to
// have succeeded; a conflict ends the flight. It reports whether the
// flight is finished.
func (f *flight) take(d remote.Delivery) bool {
	if d.Conflict != nil {
		f.log.Error("a second, different result was posted for this run with its token: neither is taken",
			"err", d.Conflict)
		f.finish(runner.Result{}, &terraform.Error{Phase: "result", Reason: d.Conflict.Error(), Err: d.Conflict})
		return true
	}
	if f.held == nil {
		res := d.Result
		f.held = &res
		f.log.Debug("run result received; awaiting the pod's success")
	}
	return false
}

// drain takes the deliveries already there, without waiting.
func (f *flight) drain() bool {
	for {
		select {
		case d := <-f.results:
			if f.take(d) {
				return true
			}
		default:
			return false
		}
	}
}

func (f *flight) loop() {
	var grace <-chan time.Time
	var safety <-chan time.Time
	if !f.expires.IsZero() {
		// The Job's deadline fails it before this; this covers a Job
		// controller that is down.
		t := time.NewTimer(time.Until(f.expires.Add(time.Minute)))
		defer t.Stop()
		safety = t.C
	}
	for {
		select {
		case d := <-f.results:
			if f.take(d) || f.evaluate(&grace) {
				return
			}
		case <-f.kick:
			if f.evaluate(&grace) {
				return
			}
		case <-grace:
			f.finish(runner.Result{}, &terraform.Error{Phase: "job",
				Reason: "job completed without delivering a result (was it delivered to another daemon?)"})
			return
		case <-safety:
			f.r.deleteJob(f.name, f.uid)
			f.finish(runner.Result{}, &terraform.Error{Phase: "job",
				Reason: "no result and no job outcome by the run's deadline; job deleted", Err: terraform.ErrTimeout})
			return
		case <-f.ctx.Done():
			cause := context.Cause(f.ctx)
			if errors.Is(cause, ErrStopped) && !f.drain() && f.held != nil {
				// The daemon is stopping with the result in hand, before
				// the pod ended: a restarted daemon could not get it again
				// (the pod posts once), so take it unconfirmed.
				f.log.Warn("daemon stopping: taking the run's result before its pod finished")
				f.deliver(*f.held)
				return
			}
			if f.finishedNow() {
				return
			}
			if errors.Is(cause, errAbandoned) {
				f.r.deleteJob(f.name, f.uid)
			}
			f.finish(runner.Result{}, &terraform.Error{Phase: "job", Reason: cause.Error(), Err: cause})
			return
		}
	}
}

// finishedNow reports whether the flight was finished (by drain).
func (f *flight) finishedNow() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.finished
}

// evaluate looks at the Job and its pods in the informer caches and
// decides, if it can. It arms grace when the Job completed but its result
// has not arrived yet.
func (f *flight) evaluate(grace *<-chan time.Time) bool {
	ns := f.r.cfg.Namespace
	job, err := f.r.jobs.Jobs(ns).Get(f.name)
	if err == nil && f.uid != "" && job.UID != f.uid {
		err = apierrors.NewNotFound(batchv1.Resource("jobs"), f.name) // a namesake, not ours
	}
	if err != nil {
		if apierrors.IsNotFound(err) && f.seen {
			f.finish(runner.Result{}, &terraform.Error{Phase: "job",
				Reason: fmt.Sprintf("job %s was deleted before its pod delivered a result", f.name)})
			return true
		}
		return false // not in the cache yet
	}
	f.seen = true
	if f.uid == "" {
		f.uid = job.UID
	}
	for _, p := range f.r.podsOf(f.name) {
		f.notePod(p)
	}
	f.mu.Lock()
	st := f.pod
	f.mu.Unlock()

	done, cond := jobFinished(job)
	if done || st.fatal != "" || st.succeeded || st.failure != "" {
		// A result (or a conflict) racing the pod's end is judged with it.
		if f.drain() {
			return true
		}
	}
	if f.held != nil {
		switch {
		case st.succeeded || (done && cond.Type == batchv1.JobComplete):
			// The reporter's own post was accepted: the held result is
			// the one the runner handed it.
			f.deliver(*f.held)
			return true
		case st.failure != "":
			f.finish(runner.Result{}, &terraform.Error{Phase: "job",
				Reason: st.failure + " (after a result was posted for the run; it is not taken)"})
			return true
		}
	}
	if !done {
		if st.fatal != "" {
			f.r.deleteJob(f.name, f.uid)
			f.finish(runner.Result{}, &terraform.Error{Phase: "job", Reason: st.fatal})
			return true
		}
		return false
	}
	if cond.Type == batchv1.JobComplete {
		if *grace == nil {
			*grace = time.After(resultGrace)
		}
		return false
	}
	f.finish(runner.Result{}, jobFailure(job, cond, st))
	return true
}

// jobFailure explains a Failed Job: the deadline, else what its pod said,
// else the Job's condition.
func jobFailure(job *batchv1.Job, cond *batchv1.JobCondition, st podState) error {
	if cond.Reason == batchv1.JobReasonDeadlineExceeded {
		deadline := ""
		if d := job.Spec.ActiveDeadlineSeconds; d != nil {
			deadline = " after " + (time.Duration(*d) * time.Second).String()
		}
		return &terraform.Error{Phase: "job", Reason: "run timed out: job deadline exceeded" + deadline,
			Err: errors.Join(terraform.ErrTimeout, errors.New(cond.Message))}
	}
	if st.failure != "" {
		return &terraform.Error{Phase: "job", Reason: st.failure, Err: fmt.Errorf("job failed: %s", cond.Reason)}
	}
	return &terraform.Error{Phase: "job", Reason: oneLine(fmt.Sprintf("job failed: %s: %s", cond.Reason, cond.Message), 300)}
}

// fatalWaiting are container waiting reasons that will not resolve by
// themselves in a run's lifetime.
var fatalWaiting = map[string]string{
	"ErrImagePull":               "image pull failed",
	"ImagePullBackOff":           "image pull failed",
	"InvalidImageName":           "invalid image name",
	"ErrImageNeverPull":          "image not present and pull policy is Never",
	"CreateContainerConfigError": "container configuration error",
}

// notePod records what pod p says about the run: its failure, or its
// success. Of a pod's two containers, the runner's failure explains more
// than the reporter's (which then only says that no result came).
func (f *flight) notePod(p *corev1.Pod) {
	var fatal, failure, reporterFailure string
	disrupted := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			disrupted = true // replaced by the Job controller, not a failure
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil {
			if what, ok := fatalWaiting[w.Reason]; ok {
				fatal = oneLine(fmt.Sprintf("pod %s: %s (%s): %s", p.Name, what, w.Reason, w.Message), 300)
			}
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 && !disrupted {
			if cs.Name == ReporterContainerName {
				reporterFailure = describeTermination(p.Name, cs.Name, t, "")
			} else {
				failure = describeTermination(p.Name, cs.Name, t, f.memLimit)
			}
		}
	}
	if failure == "" {
		failure = reporterFailure
	}
	if failure == "" && !disrupted && p.Status.Phase == corev1.PodFailed && p.Status.Reason != "" {
		failure = oneLine(fmt.Sprintf("pod %s failed: %s: %s", p.Name, p.Status.Reason, p.Status.Message), 300)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fatal != "" {
		f.pod.fatal = fatal
	}
	if failure != "" {
		f.pod.failure = failure
	}
	if p.Status.Phase == corev1.PodSucceeded {
		f.pod.succeeded = true
	}
}

// describeTermination explains a container's non-zero exit; the
// reporter's is named, the runner's (the run itself) is the pod's.
func describeTermination(pod, container string, t *corev1.ContainerStateTerminated, memLimit string) string {
	who := "pod " + pod
	if container == ReporterContainerName {
		who += " (" + container + " container)"
	}
	if t.Reason == "OOMKilled" {
		s := fmt.Sprintf("%s OOMKilled (exit code %d): the run exceeded its memory limit", who, t.ExitCode)
		if container == ReporterContainerName {
			s = fmt.Sprintf("%s OOMKilled (exit code %d)", who, t.ExitCode)
		}
		if memLimit != "" && memLimit != "0" {
			s += " of " + memLimit
		}
		return s
	}
	s := fmt.Sprintf("%s failed: exit code %d", who, t.ExitCode)
	if t.Reason != "" && t.Reason != "Error" {
		s += " (" + t.Reason + ")"
	}
	if msg := lastLine(t.Message); msg != "" {
		s += ": " + msg
	}
	return oneLine(s, 400)
}

// lastLine is the last non-empty line of a termination message (with
// FallbackToLogsOnError, the tail of the log: main's error comes last).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}

// attachLog makes the run's pod's log, as its reporter posts it, go into
// req.Log (if set), redacted of the daemon's secrets (req.Redact) the pod
// does not know: what a local run writes there, the pod writes, so the
// stored and streamed log read the same. The run is f's: a Job adopted for
// req may carry another run id.
func (f *flight) attachLog(req terraform.Request) {
	if req.Log != nil && f.results != nil {
		f.r.recv.AttachLog(f.runID, req.Log, req.Redact)
	}
}

// finish records the outcome, stops awaiting the result and wakes waiters.
func (f *flight) finish(res runner.Result, err error) {
	// Untrack (and mark the Job consumed) before refusing new waiters, so
	// a Run racing this either joins the flight or never sees its Job as
	// adoptable.
	f.r.untrack(f, !errors.Is(err, ErrStopped))
	f.mu.Lock()
	f.finished = true
	f.mu.Unlock()
	f.res, f.err = res, err
	if f.results != nil {
		f.r.recv.Forget(f.runID)
	}
	f.cancel(nil)
	switch {
	case err != nil:
		f.log.Warn("run job failed", "kind", f.kind, "err", err)
	case f.outcome != nil:
		f.log.Info("remediation outcome received", "result", f.outcome.Result)
	default:
		f.log.Info("run result received", "exit_code", res.ExitCode)
	}
	f.r.event(f, err)
	close(f.done)
}

// event records the outcome on the Job, if configured. Best effort: an
// Event is for people running kubectl describe, never for driftwatch.
func (r *Runner) event(f *flight, runErr error) {
	if !r.cfg.Events || f.uid == "" {
		return
	}
	typ, reason, msg := corev1.EventTypeNormal, "RunSucceeded", "result delivered"
	if runErr != nil {
		typ, reason, msg = corev1.EventTypeWarning, "RunFailed", oneLine(runErr.Error(), 1000)
		if errors.Is(runErr, errAbandoned) || errors.Is(runErr, context.Canceled) {
			reason = "RunCanceled"
		}
	}
	now := metav1.NewTime(r.now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      f.name + "." + strconv.FormatInt(now.UnixNano(), 16),
			Namespace: r.cfg.Namespace,
			Labels:    map[string]string{LabelManagedBy: ManagedBy},
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: "batch/v1", Kind: "Job", Namespace: r.cfg.Namespace, Name: f.name, UID: f.uid,
		},
		Reason:              reason,
		Message:             msg,
		Type:                typ,
		Source:              corev1.EventSource{Component: "driftwatch"},
		ReportingController: "driftwatch.io/runner",
		ReportingInstance:   "driftwatch",
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.cs.CoreV1().Events(r.cfg.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		r.log.Debug("record run event", "job", f.name, "err", err)
	}
}
