//go:build linux

package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/kubetest"
	"github.com/driftwatch/driftwatch/internal/planparse"
	"github.com/driftwatch/driftwatch/internal/remediate"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
)

// daemon is the daemon's side of a test: a Receiver behind an HTTP server
// on 127.0.0.1 (the callback URL every run pod gets) and a Runner. restart
// replaces both, keeping the address, as a restarted daemon behind its
// Service would.
type daemon struct {
	t    *testing.T
	cs   kubernetes.Interface
	cfg  Config
	srv  *httptest.Server
	recv atomic.Pointer[remote.Receiver]

	runner *Runner
	stop   context.CancelFunc
	done   chan struct{}
}

func newDaemon(t *testing.T, cs kubernetes.Interface, ns string) *daemon {
	d := &daemon{t: t, cs: cs}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux := http.NewServeMux()
		mux.Handle(remote.Route, d.recv.Load())
		mux.Handle(remote.ProceedRoute, d.recv.Load().ProceedHandler())
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(d.srv.Close)
	d.cfg = Config{
		Namespace:   ns,
		Image:       "driftwatch:test",
		CallbackURL: d.srv.URL,
		// Tight deadlines for the deadline test; the others do not need
		// more than their timeout.
		StartupAllowance: time.Second,
		Events:           true,
	}
	d.start()
	return d
}

func (d *daemon) start() {
	// Every apply may proceed (the kill switch is the app's).
	recv := remote.NewReceiver(remote.ReceiverOptions{Proceed: func(context.Context, string) *remediate.Refusal { return nil }})
	d.recv.Store(recv)
	r, err := New(Options{Client: d.cs, Receiver: recv, Config: d.cfg, Logger: slog.New(slog.NewTextHandler(testWriter{d.t}, nil))})
	require.NoError(d.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	d.runner, d.stop, d.done = r, cancel, make(chan struct{})
	go func() {
		defer close(d.done)
		if err := r.Watch(ctx); err != nil {
			d.t.Errorf("watch: %v", err)
		}
	}()
	d.t.Cleanup(d.shutdown)
}

func (d *daemon) shutdown() {
	d.stop()
	<-d.done
}

// restart stops the daemon (its Jobs keep running) and starts a fresh one
// with an empty Receiver at the same address.
func (d *daemon) restart() {
	d.shutdown()
	d.start()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// canned is what the played runner delivers for a run.
func canned(runID string) remote.Result {
	return remote.ResultOf(runID, runner.Result{
		Plan: &planparse.Plan{
			FormatVersion: "1.2", TerraformVersion: "1.11.4",
			Drift: []planparse.Change{{Address: "aws_s3_bucket.logs", Mode: "managed", Type: "aws_s3_bucket",
				Actions: []string{"update"}, Attributes: []string{"tags.owner"}}},
			RelevantAttributes: map[string][]string{},
		},
		ExitCode: 2,
		Tool:     "terraform 1.11.4",
		Phases:   []drift.Phase{{Name: "plan", Duration: time.Second}},
	}, nil)
}

// readRun does what the pod's mounts would: the spec and token from the
// pod's run Secret (which is created right after the Job, so it may trail
// the pod by a moment, as a real kubelet would retry the mount).
func readRun(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) (*remote.Spec, string, error) {
	var name string
	for _, v := range pod.Spec.Volumes {
		if v.Name == "run" && v.Secret != nil {
			name = v.Secret.SecretName
		}
	}
	for {
		sec, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			spec, err := remote.DecodeSpec(bytes.NewReader(sec.Data["spec.json"]))
			return spec, string(sec.Data["token"]), err
		}
		if !apierrors.IsNotFound(err) {
			return nil, "", err
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kubelet dispatches the played kubelet by the pod's workspace.
type kubelet struct {
	mu    sync.Mutex
	plays map[string]kubetest.ContainersFunc
}

// set plays the workspace's pods with f, every container ending as f says.
func (k *kubelet) set(ws string, f kubetest.PodFunc) {
	k.setContainers(ws, func(ctx context.Context, pod *corev1.Pod) map[string]kubetest.ContainerExit {
		code, msg := f(ctx, pod)
		return map[string]kubetest.ContainerExit{
			ContainerName:         {ExitCode: code, Message: msg},
			ReporterContainerName: {ExitCode: code, Message: msg},
		}
	})
}

func (k *kubelet) setContainers(ws string, f kubetest.ContainersFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.plays[ws] = f
}

func (k *kubelet) run(ctx context.Context, pod *corev1.Pod) map[string]kubetest.ContainerExit {
	k.mu.Lock()
	f := k.plays[pod.Annotations[AnnotationWorkspace]]
	k.mu.Unlock()
	if f == nil {
		return map[string]kubetest.ContainerExit{
			ContainerName:         {ExitCode: 1, Message: "no play for this workspace"},
			ReporterContainerName: {ExitCode: 1, Message: "no play for this workspace"},
		}
	}
	return f(ctx, pod)
}

// realPod plays a run pod's two containers with their real code, in this
// process: the reporter (remote.Reporter) and the runner (remote.RunInPod,
// with local as its runner and apply as its ApplyFunc), each seeing only its
// own mounts (kubetest.Processes), talking over the handoff socket in the
// emptyDir they share. It checks, before they start, that the runner
// container cannot see the token (no mount of it holds the token, and the
// spec's token file is not among its paths) while the reporter can.
func realPod(t *testing.T, cs kubernetes.Interface, local runner.Runner, apply remote.ApplyFunc) kubetest.ContainersFunc {
	p := &kubetest.Processes{
		Client:  cs,
		Logf:    t.Logf,
		Rewrite: rewriteSpec,
		Check:   checkTokenOnlyInReporter(cs),
		Exec: func(ctx context.Context, c *kubetest.Container) kubetest.ContainerExit {
			spec, _ := c.Path(SpecPath)
			sock, _ := c.Path(HandoffSocket)
			var err error
			switch c.Name {
			case ContainerName:
				if want := []string{"driftwatch", "runner", "--spec", spec, "--socket", sock}; !slices.Equal(c.Argv, want) {
					return kubetest.ContainerExit{ExitCode: 2, Message: fmt.Sprintf("runner argv %q, want %q", c.Argv, want)}
				}
				err = remote.RunInPod(ctx, spec, sock, local, apply)
			case ReporterContainerName:
				if want := []string{"driftwatch", "runner", "report", "--spec", spec, "--socket", sock}; !slices.Equal(c.Argv, want) {
					return kubetest.ContainerExit{ExitCode: 2, Message: fmt.Sprintf("reporter argv %q, want %q", c.Argv, want)}
				}
				rp := &remote.Reporter{
					Poster:  &remote.Poster{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond},
					Checker: &remote.Checker{Backoff: 50 * time.Millisecond},
					Logger:  slog.New(slog.NewTextHandler(testWriter{t}, nil)),
				}
				err = rp.Report(ctx, spec, sock)
			default:
				err = fmt.Errorf("unexpected container %s", c.Name)
			}
			if err != nil {
				return kubetest.ContainerExit{ExitCode: 1, Message: err.Error()}
			}
			return kubetest.ContainerExit{}
		},
	}
	return p.Run
}

// rewriteSpec maps the in-pod paths of a run spec through the played
// container's mounts (the token file only exists for the reporter).
func rewriteSpec(c *kubetest.Container, volume, file string, data []byte) ([]byte, error) {
	if volume != "run" || file != "spec.json" {
		return data, nil
	}
	spec, err := remote.DecodeSpec(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	mapPath := func(p *string) {
		if host, ok := c.Path(*p); ok {
			*p = host
		}
	}
	mapPath(&spec.TokenFile)
	mapPath(&spec.WorkDir)
	mapPath(&spec.GitCacheDir)
	for k, v := range spec.SecretEnvFiles {
		mapPath(&v)
		spec.SecretEnvFiles[k] = v
	}
	return spec.Encode()
}

// checkTokenOnlyInReporter is a kubetest.Processes Check: the runner
// container (Terraform's) has no path to the run's token, the reporter
// has.
func checkTokenOnlyInReporter(cs kubernetes.Interface) func(*corev1.Pod, []*kubetest.Container) error {
	return func(pod *corev1.Pod, containers []*kubetest.Container) error {
		_, token, err := readRun(context.Background(), cs, pod)
		if err != nil {
			return err
		}
		for _, c := range containers {
			host, mounted := c.Path(TokenPath)
			var seen []string
			for _, m := range c.Mounts {
				_ = filepath.WalkDir(m.HostPath, func(p string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						if b, _ := os.ReadFile(p); strings.Contains(string(b), token) {
							seen = append(seen, strings.TrimPrefix(p, m.HostPath))
						}
					}
					return nil
				})
			}
			switch c.Name {
			case ReporterContainerName:
				b, err := os.ReadFile(host)
				if !mounted || err != nil || string(b) != token {
					return fmt.Errorf("the reporter cannot read the token at %s: %v", TokenPath, err)
				}
			default:
				if mounted || len(seen) > 0 {
					return fmt.Errorf("container %s can see the token (%s mounted: %v; files holding it: %v)", c.Name, TokenPath, mounted, seen)
				}
				if _, err := os.Stat(host); err == nil {
					return fmt.Errorf("container %s can see %s", c.Name, TokenPath)
				}
			}
		}
		return nil
	}
}

// deliver plays a pod whose runner succeeds: it posts the canned result
// with the token from the run Secret, then exits 0, after release (if
// non-nil) is closed.
func deliver(t *testing.T, cs kubernetes.Interface, release <-chan struct{}) kubetest.PodFunc {
	return func(ctx context.Context, pod *corev1.Pod) (int, string) {
		spec, token, err := readRun(ctx, cs, pod)
		if err != nil {
			t.Errorf("pod %s: %v", pod.Name, err)
			return 1, err.Error()
		}
		if release != nil {
			select {
			case <-release:
			case <-ctx.Done():
				return 137, ""
			}
		}
		p := &remote.Poster{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
		if err := p.Post(ctx, spec.CallbackURL, token, canned(spec.RunID)); err != nil {
			return 1, "runner: " + err.Error()
		}
		return 0, ""
	}
}

func jobsOf(t *testing.T, cs kubernetes.Interface, ns, ws string) []batchv1.Job {
	l, err := cs.BatchV1().Jobs(ns).List(t.Context(), metav1.ListOptions{LabelSelector: WorkspaceSelector(ws)})
	require.NoError(t, err)
	return l.Items
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRunnerAgainstAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	const ns = "runs"
	// The restricted Pod Security level is enforced: a run pod that breaks
	// it is refused when the Job controller creates it.
	require.NoError(t, c.CreateNamespace(t.Context(), ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}))
	k := &kubelet{plays: map[string]kubetest.ContainersFunc{}}
	c.PlayKubeletContainers(t, ns, k.run)
	d := newDaemon(t, cs, ns)

	t.Run("result delivered", func(t *testing.T) {
		// The pod's real code: the runner hands the result to the
		// reporter, which alone has the token and posts it.
		k.setContainers("ok", realPod(t, cs, runnerFunc(func(context.Context, runner.Request) (runner.Result, error) {
			return canned("run-ok").Unpack()
		}), nil))
		res, err := d.runner.Run(t.Context(), request("ok", "run-ok"))
		require.NoError(t, err)
		want, _ := canned("run-ok").Unpack()
		if diff := cmp.Diff(want, res); diff != "" {
			t.Fatalf("result (-want +got):\n%s", diff)
		}
		jobs := jobsOf(t, cs, ns, "ok")
		require.Len(t, jobs, 1)
		job := jobs[0]
		require.Equal(t, JobName("ok", "run-ok"), job.Name)
		require.Equal(t, map[string]string{
			"app.kubernetes.io/managed-by": "driftwatch", "app.kubernetes.io/name": "driftwatch",
			"app.kubernetes.io/component": "runner", "driftwatch.io/workspace": "ok", "driftwatch.io/run-id": "run-ok",
			"driftwatch.io/kind": "detect",
		}, job.Labels)
		// The server kept every sandbox field (and defaulted nothing away),
		// and admitted the pod (restricted Pod Security) with its two
		// containers: the runner without the token, as another user than
		// the reporter.
		ps := job.Spec.Template.Spec
		require.False(t, *ps.AutomountServiceAccountToken)
		require.Len(t, ps.Containers, 2)
		for _, c := range ps.Containers {
			require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem, c.Name)
			require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop, c.Name)
		}
		runnerC, reporterC := ps.Containers[0], ps.Containers[1]
		require.Equal(t, []string{ContainerName, ReporterContainerName}, []string{runnerC.Name, reporterC.Name})
		for _, m := range runnerC.VolumeMounts {
			require.NotEqual(t, "token", m.Name, "the runner container mounts the token")
			require.NotEqual(t, TokenDir, m.MountPath)
		}
		require.Contains(t, reporterC.VolumeMounts, corev1.VolumeMount{Name: "token", MountPath: TokenDir, ReadOnly: true})
		require.NotEqual(t, *runnerC.SecurityContext.RunAsUser, *reporterC.SecurityContext.RunAsUser)
		pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1)
		require.Equal(t, corev1.PodSucceeded, pods.Items[0].Status.Phase, "the result was taken once the pod succeeded")
		require.Equal(t, int32(0), *job.Spec.BackoffLimit)
		require.Len(t, job.Spec.PodFailurePolicy.Rules, 2)
		// The Secret is owned by the Job, for the garbage collector.
		sec, err := cs.CoreV1().Secrets(ns).Get(t.Context(), job.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, sec.OwnerReferences, 1)
		require.Equal(t, job.UID, sec.OwnerReferences[0].UID)
		// The real Job controller completes the Job; an Event records
		// the outcome.
		eventually(t, "job complete", func() bool {
			j, err := cs.BatchV1().Jobs(ns).Get(t.Context(), job.Name, metav1.GetOptions{})
			done, cond := false, (*batchv1.JobCondition)(nil)
			if err == nil {
				done, cond = jobFinished(j)
			}
			return done && cond.Type == batchv1.JobComplete
		})
		evs, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + job.Name})
		require.NoError(t, err)
		var reasons []string
		for _, e := range evs.Items {
			reasons = append(reasons, e.Reason)
		}
		require.Contains(t, reasons, "RunSucceeded")
	})

	t.Run("failing pod", func(t *testing.T) {
		k.set("fail", func(context.Context, *corev1.Pod) (int, string) {
			return 1, "time=... level=INFO msg=starting\nrunner: run run-fail: deliver result: result refused: 403 Forbidden: invalid token"
		})
		_, err := d.runner.Run(t.Context(), request("fail", "run-fail"))
		var re *runner.Error
		require.ErrorAs(t, err, &re)
		require.Equal(t, "job", re.Phase)
		require.Regexp(t, `^pod driftwatch-fail-[0-9a-f]{10}-\w+ failed: exit code 1: runner: run run-fail: deliver result: result refused: 403 Forbidden: invalid token$`, re.Reason)
		require.NotErrorIs(t, err, runner.ErrTimeout)
	})

	t.Run("deadline exceeded", func(t *testing.T) {
		k.set("slow", func(ctx context.Context, _ *corev1.Pod) (int, string) {
			<-ctx.Done() // until the Job controller deletes the pod
			return 137, ""
		})
		req := request("slow", "run-slow")
		req.Timeout, req.KillGrace = time.Second, time.Second // deadline 3 s
		start := time.Now()
		_, err := d.runner.Run(t.Context(), req)
		var re *runner.Error
		require.ErrorAs(t, err, &re)
		require.ErrorIs(t, err, runner.ErrTimeout)
		require.Equal(t, "run timed out: job deadline exceeded after 3s", re.Reason)
		require.GreaterOrEqual(t, time.Since(start), 3*time.Second)
	})

	t.Run("one active job per workspace", func(t *testing.T) {
		release := make(chan struct{})
		k.set("busy", deliver(t, cs, release))
		type outcome struct {
			runID string
			res   runner.Result
			err   error
		}
		out := make(chan outcome, 8)
		var wg sync.WaitGroup
		run := func(id string) {
			wg.Go(func() {
				res, err := d.runner.Run(t.Context(), request("busy", id))
				out <- outcome{id, res, err}
			})
		}
		// Five triggers at once, each its own run: one Job, four refused.
		for _, id := range []string{"b1", "b2", "b3", "b4", "b5"} {
			run(id)
		}
		var winner string
		for range 4 {
			o := <-out
			require.ErrorIs(t, o.err, ErrBusy, "run %s", o.runID)
			var be *BusyError
			require.ErrorAs(t, o.err, &be)
			require.NotEqual(t, o.runID, be.RunID)
			require.Contains(t, o.err.Error(), "at most one run per workspace")
			if winner != "" {
				require.Equal(t, winner, be.RunID)
			}
			winner = be.RunID
		}
		jobs := jobsOf(t, cs, ns, "busy")
		require.Len(t, jobs, 1)
		require.Equal(t, JobName("busy", winner), jobs[0].Name)
		// The same run submitted twice more (a retried trigger) joins the
		// running Job instead of refusing or duplicating it.
		run(winner)
		run(winner)
		time.Sleep(200 * time.Millisecond)
		require.Len(t, jobsOf(t, cs, ns, "busy"), 1)
		close(release)
		wg.Wait()
		close(out)
		n := 0
		for o := range out {
			require.NoError(t, o.err, o.runID)
			require.Equal(t, winner, o.runID)
			require.Equal(t, "terraform 1.11.4", o.res.Tool)
			n++
		}
		require.Equal(t, 3, n)
		// Once the result is taken (its pod succeeded), the workspace is
		// free at once, even while the Job is not yet marked complete: the
		// next run gets a new Job.
		k.set("busy", deliver(t, cs, nil))
		_, err := d.runner.Run(t.Context(), request("busy", "b6"))
		require.NoError(t, err)
		require.Len(t, jobsOf(t, cs, ns, "busy"), 2)
	})

	t.Run("cancel deletes the job and its pod", func(t *testing.T) {
		running := make(chan string, 1)
		podEnded := make(chan struct{})
		k.set("cancel", func(ctx context.Context, pod *corev1.Pod) (int, string) {
			running <- pod.Name
			<-ctx.Done() // the pod is deleted
			close(podEnded)
			return 137, ""
		})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(ctx, request("cancel", "run-cancel"))
			errc <- err
		}()
		pod := <-running
		name := JobName("cancel", "run-cancel")
		cancel()
		err := <-errc
		require.ErrorIs(t, err, context.Canceled)
		// Run returns after the delete was issued: the Job is gone (or
		// going), and the garbage collector removes its pod and Secret
		// because the deletion propagates in the background.
		j, err := cs.BatchV1().Jobs(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err) || (err == nil && j.DeletionTimestamp != nil), "job still there: %v", err)
		eventually(t, "pod deleted", func() bool {
			_, err := cs.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		<-podEnded
		eventually(t, "secret collected", func() bool {
			_, err := cs.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})

	t.Run("adopt after restart", func(t *testing.T) {
		release := make(chan struct{})
		k.set("adopt", deliver(t, cs, release))
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(t.Context(), request("adopt", "run-adopt"))
			errc <- err
		}()
		eventually(t, "job created", func() bool { return len(jobsOf(t, cs, ns, "adopt")) == 1 })

		// The daemon stops (a crash, a new leader): its Run ends, the Job
		// stays, and its pod finishes meanwhile, retrying its delivery
		// against a daemon that does not know the run yet (404).
		d.restart()
		require.ErrorIs(t, <-errc, ErrStopped)
		require.Len(t, jobsOf(t, cs, ns, "adopt"), 1)
		close(release)
		time.Sleep(300 * time.Millisecond)

		adopted, err := d.runner.Adopt(t.Context())
		require.NoError(t, err)
		var a *Adopted
		for _, x := range adopted {
			if x.Workspace == "adopt" {
				a = x
			}
		}
		require.NotNil(t, a, "adopted: %v", adopted)
		require.Equal(t, "run-adopt", a.RunID)
		require.Equal(t, JobName("adopt", "run-adopt"), a.Job)
		res, err := a.Wait(t.Context())
		require.NoError(t, err)
		require.Equal(t, "terraform 1.11.4", res.Tool)
		require.Len(t, jobsOf(t, cs, ns, "adopt"), 1, "adopted, not duplicated")
	})

	t.Run("run adopts an orphaned job", func(t *testing.T) {
		release := make(chan struct{})
		k.set("orphan", deliver(t, cs, release))
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(t.Context(), request("orphan", "run-first"))
			errc <- err
		}()
		eventually(t, "job created", func() bool { return len(jobsOf(t, cs, ns, "orphan")) == 1 })
		d.restart()
		require.ErrorIs(t, <-errc, ErrStopped)
		// The restarted daemon re-runs the interrupted run under a new id
		// without calling Adopt: the running Job is awaited, not doubled.
		done := make(chan error, 1)
		go func() {
			res, err := d.runner.Run(t.Context(), request("orphan", "run-second"))
			if err == nil && res.Tool != "terraform 1.11.4" {
				err = fmt.Errorf("unexpected result %+v", res)
			}
			done <- err
		}()
		time.Sleep(300 * time.Millisecond)
		close(release)
		require.NoError(t, <-done)
		require.Len(t, jobsOf(t, cs, ns, "orphan"), 1)
	})

	t.Run("replayed and forged tokens", func(t *testing.T) {
		var spec *remote.Spec
		var token string
		k.set("replay", func(ctx context.Context, pod *corev1.Pod) (int, string) {
			s, tok, err := readRun(ctx, cs, pod)
			if err != nil {
				return 1, err.Error()
			}
			forged, _ := remote.NewToken()
			ctx403, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			var se *remote.StatusError
			if err := remote.Post(ctx403, s.CallbackURL, forged, canned(s.RunID)); !errors.As(err, &se) || se.Code != http.StatusForbidden {
				t.Errorf("forged token: %v", err)
			}
			spec, token = s, tok
			if err := remote.Post(ctx, s.CallbackURL, tok, canned(s.RunID)); err != nil {
				return 1, err.Error()
			}
			return 0, ""
		})
		_, err := d.runner.Run(t.Context(), request("replay", "run-replay"))
		require.NoError(t, err)
		post := func(url, tok string, res remote.Result) (int, string) {
			b, err := json.Marshal(res)
			require.NoError(t, err)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(b))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		// The same result again (a retry): idempotent. Another one with
		// the token: a conflict. A forged token and an unknown run: one
		// answer, which tells nothing about which runs exist.
		code, _ := post(spec.CallbackURL, token, canned(spec.RunID))
		require.Equal(t, http.StatusNoContent, code)
		other := canned(spec.RunID)
		other.Result.Plan.Drift = nil
		code, _ = post(spec.CallbackURL, token, other)
		require.Equal(t, http.StatusConflict, code)
		forgedCode, forgedBody := post(spec.CallbackURL, "forged", canned(spec.RunID))
		require.Equal(t, http.StatusForbidden, forgedCode)
		unknownURL := strings.Replace(spec.CallbackURL, "run-replay", "no-such-run", 1)
		unknownCode, unknownBody := post(unknownURL, token, canned("no-such-run"))
		require.Equal(t, forgedCode, unknownCode)
		require.Equal(t, forgedBody, unknownBody)
	})

	t.Run("a forged result posted first is not the verdict", func(t *testing.T) {
		// The token leaked (a module of an older pod shape could read it):
		// a "clean" result is posted while the plan runs. The real code
		// of the pod then posts the real result, gets 409, and fails the
		// pod; the daemon reports the conflict. The run errors.
		local := runnerFunc(func(ctx context.Context, req runner.Request) (runner.Result, error) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{
				Name: "run", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: JobName(req.Workspace, req.RunID)}}}}}}
			s, tok, err := readRun(ctx, cs, pod)
			if err != nil {
				return runner.Result{}, err
			}
			clean := canned(req.RunID)
			clean.Result.Plan.Drift, clean.Result.ExitCode = nil, 0
			if err := remote.Post(ctx, s.CallbackURL, tok, clean); err != nil {
				t.Errorf("forged post: %v", err)
			}
			return canned(req.RunID).Unpack()
		})
		exits := make(chan map[string]kubetest.ContainerExit, 1)
		play := realPod(t, cs, local, nil)
		k.setContainers("forged", func(ctx context.Context, pod *corev1.Pod) map[string]kubetest.ContainerExit {
			out := play(ctx, pod)
			exits <- out
			return out
		})
		res, err := d.runner.Run(t.Context(), request("forged", "run-forged"))
		var re *runner.Error
		require.ErrorAs(t, err, &re, "the forged result was taken: %+v", res)
		require.ErrorIs(t, err, remote.ErrConflictingResults)
		require.Equal(t, "result: conflicting results posted: possible forgery", err.Error())
		e := <-exits
		require.Equal(t, 0, e[ContainerName].ExitCode, e[ContainerName].Message)
		require.Equal(t, 1, e[ReporterContainerName].ExitCode)
		require.Contains(t, e[ReporterContainerName].Message, "suspicious")
		require.Contains(t, e[ReporterContainerName].Message, "409 Conflict on attempt 1")
	})

	t.Run("a result posted before the pod failed is not the verdict", func(t *testing.T) {
		// Someone with the token posts, and the runner is killed before it
		// hands anything over: no conflicting post comes, but the pod
		// fails, so the held result is dropped.
		k.set("killed", func(ctx context.Context, pod *corev1.Pod) (int, string) {
			s, tok, err := readRun(ctx, cs, pod)
			if err != nil {
				return 1, err.Error()
			}
			if err := remote.Post(ctx, s.CallbackURL, tok, canned(s.RunID)); err != nil {
				return 1, err.Error()
			}
			return 1, "reporter: run run-killed: the runner closed the handoff without a result (did the runner container fail?)"
		})
		_, err := d.runner.Run(t.Context(), request("killed", "run-killed"))
		var re *runner.Error
		require.ErrorAs(t, err, &re)
		require.Equal(t, "job", re.Phase)
		require.Contains(t, re.Reason, "after a result was posted for the run; it is not taken")
	})
}

// runnerFunc adapts a function to runner.Runner.
type runnerFunc func(context.Context, runner.Request) (runner.Result, error)

func (f runnerFunc) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	return f(ctx, req)
}

// TestRunnerPodFailures plays the kubelet by hand to produce what
// PlayKubelet does not: a pod stuck on its image, and an OOM kill.
func TestRunnerPodFailures(t *testing.T) {
	c := kubetest.Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	const ns = "manual"
	require.NoError(t, c.CreateNamespace(t.Context(), ns, nil))
	d := newDaemon(t, cs, ns)

	setStatus := func(t *testing.T, job string, mutate func(*corev1.Pod)) {
		t.Helper()
		var pod string
		eventually(t, "pod of "+job, func() bool {
			l, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
			if err == nil && len(l.Items) > 0 {
				pod = l.Items[0].Name
			}
			return pod != ""
		})
		require.NoError(t, retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			p, err := cs.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(p)
			_, err = cs.CoreV1().Pods(ns).UpdateStatus(t.Context(), p, metav1.UpdateOptions{})
			return err
		}))
	}

	t.Run("image pull back-off", func(t *testing.T) {
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(t.Context(), request("pull", "run-pull"))
			errc <- err
		}()
		job := JobName("pull", "run-pull")
		setStatus(t, job, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Image: "driftwatch:test",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "ImagePullBackOff", Message: `Back-off pulling image "driftwatch:test"`}}}}
		})
		err := <-errc
		var re *runner.Error
		require.ErrorAs(t, err, &re)
		require.Regexp(t, `^pod driftwatch-pull-[0-9a-f]{10}-\w+: image pull failed \(ImagePullBackOff\): Back-off pulling image "driftwatch:test"$`, re.Reason)
		// The Job would only fail at its deadline: it is deleted now.
		_, err = cs.BatchV1().Jobs(ns).Get(t.Context(), job, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "job not deleted: %v", err)
	})

	t.Run("oom killed", func(t *testing.T) {
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(t.Context(), request("oom", "run-oom"))
			errc <- err
		}()
		now := metav1.Now()
		setStatus(t, JobName("oom", "run-oom"), func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.StartTime = &now
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Image: "driftwatch:test",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", StartedAt: now, FinishedAt: now}}}}
		})
		err := <-errc
		var re *runner.Error
		require.ErrorAs(t, err, &re)
		// The real Job controller failed the Job through the
		// podFailurePolicy; the reason comes from the pod.
		require.Regexp(t, `^pod driftwatch-oom-[0-9a-f]{10}-\w+ OOMKilled \(exit code 137\): the run exceeded its memory limit of 2Gi$`, re.Reason)
		j, err := cs.BatchV1().Jobs(ns).Get(t.Context(), JobName("oom", "run-oom"), metav1.GetOptions{})
		require.NoError(t, err)
		done, cond := jobFinished(j)
		require.True(t, done)
		require.Equal(t, batchv1.JobReasonPodFailurePolicy, cond.Reason)
	})
}
