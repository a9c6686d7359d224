//go:build linux

package kube

import (
	"bytes"
	"context"
	"fmt"
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

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
)

// daemon is the daemon's side of a test: a Receiver behind an HTTP server
// on 127.0.0.1 (the callback URL every run pod gets) and a Runner. restart
// replaces both, keeping the address, as a restarted daemon behind its
// Service would.
type daemon struct {
	t    testing.TB
	cs   kubernetes.Interface
	cfg  Config
	srv  *httptest.Server
	recv atomic.Pointer[remote.Receiver]

	runner *Runner
	stop   context.CancelFunc
	done   chan struct{}
}

func newDaemon(t testing.TB, cs kubernetes.Interface, ns string) *daemon {
	return newDaemonWith(t, cs, ns, nil)
}

// newDaemonWith is newDaemon with its Config changed by mod.
func newDaemonWith(t testing.TB, cs kubernetes.Interface, ns string, mod func(*Config)) *daemon {
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
	if mod != nil {
		mod(&d.cfg)
	}
	d.start()
	return d
}

func (d *daemon) start() {
	// Every apply may proceed (the kill switch is the app's).
	recv := remote.NewReceiver(remote.ReceiverOptions{Proceed: func(context.Context, string) *engine.Refusal { return nil }})
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

type testWriter struct{ t testing.TB }

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
func realPod(t testing.TB, cs kubernetes.Interface, local runner.Runner, apply remote.ApplyFunc) kubetest.ContainersFunc {
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
				if !mounted {
					return fmt.Errorf("the reporter cannot read the token at %s: not mounted", TokenPath)
				}
				b, err := os.ReadFile(host)
				if err != nil {
					return fmt.Errorf("the reporter cannot read the token at %s: %w", TokenPath, err)
				}
				if string(b) != token {
					return fmt.Errorf("the reporter cannot read the token at %s: it holds something else", TokenPath)
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
func deliver(t testing.TB, cs kubernetes.Interface, release <-chan struct{}) kubetest.PodFunc {
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
