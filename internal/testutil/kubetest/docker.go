//go:build linux

package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Environment of the container kubelet (make test sets them).
const (
	// EnvDocker is the docker CLI (default "docker" from PATH); DOCKER_HOST
	// names its engine.
	EnvDocker = "DRIFTWATCH_DOCKER"
	// EnvImage is driftwatch's image, built by `make image`.
	EnvImage = "DRIFTWATCH_IMAGE"
)

// Labels on every container the container kubelet starts.
const (
	labelTest = "kubetest.driftwatch.io/test" // one value per PlayKubeletDocker
	labelPod  = "kubetest.driftwatch.io/pod"  // namespace/name
	labelName = "kubetest.driftwatch.io/test-name"
)

// DockerEnv is a docker CLI that reaches an engine holding driftwatch's
// image.
type DockerEnv struct {
	CLI   string // the docker CLI
	Image string // driftwatch's image (DRIFTWATCH_IMAGE)
}

// Docker returns the docker CLI and image from the environment after
// checking that the engine answers and holds the image. Missing, the test
// is skipped, unless DRIFTWATCH_E2E=1 makes that a failure.
func Docker(t testing.TB) DockerEnv {
	t.Helper()
	tftest.Short(t, "docker and the image")
	e := DockerEnv{CLI: os.Getenv(EnvDocker), Image: os.Getenv(EnvImage)}
	if e.Image == "" {
		tftest.Unavailable(t, EnvImage+" not set: run `make image` and export it (make test does)")
	}
	if e.CLI == "" {
		e.CLI = "docker"
	}
	if _, err := exec.LookPath(e.CLI); err != nil {
		tftest.Unavailable(t, "no docker CLI ("+e.CLI+"): `make image-tools` installs Debian's docker.io")
	}
	if out, err := exec.Command(e.CLI, "image", "inspect", "--format", "{{.Id}}", e.Image).CombinedOutput(); err != nil {
		tftest.Unavailable(t, fmt.Sprintf("image %s not found at DOCKER_HOST=%q: %v: %s", e.Image, os.Getenv("DOCKER_HOST"), err, bytes.TrimSpace(out)))
	}
	return e
}

// DockerOptions tune PlayKubeletDocker.
type DockerOptions struct {
	// Logf receives each container's output when it ends (default t.Logf).
	Logf func(format string, args ...any)
	// StartDelay, if set, is how long a pod waits, Running, before its
	// containers start (as a slow image pull or volume mount would).
	StartDelay func(pod *corev1.Pod) time.Duration
}

// DockerKubelet runs the containers of a pod with docker, as a kubelet
// would (see Run): the container kubelet. It honours image, command, args,
// workingDir, env (values, $(VAR) expansion, Secret, ConfigMap and
// downward API metadata.name/namespace/uid), envFrom, the master service's
// env (KUBERNETES_SERVICE_HOST/PORT: the test API server on 127.0.0.1) and
// the namespace's service links; Secret, ConfigMap, emptyDir (medium
// Memory: a directory on /dev/shm) and projected volumes (Secret,
// ConfigMap, a service account token from the TokenRequest API bound to
// the pod, kube-root-ca.crt, downward API) laid out as the kubelet's
// atomic writer does (..data), with their modes and fsGroup ownership;
// the pod's and containers' securityContext (runAsUser/Group, fsGroup,
// supplementalGroups, runAsNonRoot, readOnlyRootFilesystem, capabilities,
// allowPrivilegeEscalation, seccomp RuntimeDefault or Unconfined);
// restartPolicy (with the restart count), terminationGracePeriodSeconds
// (SIGTERM, then SIGKILL), activeDeadlineSeconds (Failed,
// DeadlineExceeded), readiness and liveness probes (httpGet, tcpSocket,
// exec: readiness drives the Ready condition, a failed liveness probe
// restarts the container), the termination message (file, then
// FallbackToLogsOnError). A pod's deletion stops and removes its
// containers. Any other field refuses the pod (check).
//
// Where it differs from a kubelet, knowingly: every container shares the
// host's network (the engine has no bridge), so a pod's ports are the
// host's and two pods cannot listen on one port; there is no cluster DNS
// and Service addresses lead nowhere; images are never pulled (they must
// be in the engine; imagePullPolicy is ignored); a container without a
// readiness probe is ready once the pod runs; resources and emptyDir size
// limits are not enforced; Secret and ConfigMap volumes are not updated
// while the pod runs and the projected token is not rotated; a container
// whose configuration cannot be made (a Secret missing after 30 s, a root
// user with runAsNonRoot) fails the pod instead of waiting.
type DockerKubelet struct {
	t      testing.TB
	env    DockerEnv
	cs     kubernetes.Interface
	server string // the API server's URL
	caPEM  []byte
	id     string // labelTest's value
	logf   func(string, ...any)
	delay  func(*corev1.Pod) time.Duration
	dir    string // pods' volumes live under it
}

// PlayKubeletDocker plays the kubelet of namespace until t ends
// (PlayKubeletContainers) with a DockerKubelet: every pod's containers run
// in docker. When t ends, every container it started is gone (a container
// still there is an error of the test).
func (c *Cluster) PlayKubeletDocker(t testing.TB, namespace string, env DockerEnv, opts DockerOptions) *DockerKubelet {
	t.Helper()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatalf("kubetest: PlayKubeletDocker: %v", err)
	}
	id, err := randomHex(6)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "kubetest-docker-")
	if err != nil {
		t.Fatal(err)
	}
	k := &DockerKubelet{t: t, env: env, cs: cs, server: c.Server, caPEM: c.caPEM, id: id, logf: opts.Logf, delay: opts.StartDelay, dir: dir}
	if k.logf == nil {
		k.logf = t.Logf
	}
	// Registered before PlayKubeletContainers' cleanup, so it runs after
	// it: by then every pod's run has returned and removed its containers.
	t.Cleanup(func() {
		if left := k.containers(); len(left) > 0 {
			t.Errorf("kubetest: docker kubelet left containers behind: %v", left)
			_ = exec.Command(env.CLI, append([]string{"rm", "-f", "-v"}, left...)...).Run()
			if again := k.containers(); len(again) > 0 {
				t.Errorf("kubetest: cannot remove containers %v", again)
			}
		}
		_ = os.RemoveAll(dir)
	})
	c.PlayKubeletContainers(t, namespace, k.Run)
	return k
}

// containers lists the names of this kubelet's containers, running or not.
func (k *DockerKubelet) containers() []string {
	out, err := exec.Command(k.env.CLI, "ps", "-a", "--filter", "label="+labelTest+"="+k.id, "--format", "{{.Names}}").Output()
	if err != nil {
		k.t.Errorf("kubetest: docker ps: %v", err)
		return nil
	}
	return strings.Fields(string(out))
}

// podContainers lists the names of the containers of pod ns/name (only
// the running ones unless all).
func (k *DockerKubelet) podContainers(ns, name string, all bool) []string {
	args := []string{"ps"}
	if all {
		args = append(args, "-a")
	}
	out, err := exec.Command(k.env.CLI, append(args, "--filter", "label="+labelTest+"="+k.id,
		"--filter", "label="+labelPod+"="+ns+"/"+name, "--format", "{{.Names}}")...).Output()
	if err != nil {
		k.t.Errorf("kubetest: docker ps: %v", err)
		return nil
	}
	return strings.Fields(string(out))
}

// dockerContainer is one container of a pod, ready for `docker run`.
type dockerContainer struct {
	spec     corev1.Container
	name     string   // the docker container's name
	args     []string // docker run's arguments
	termFile string   // host file mounted at the termination message path
}

// Run runs pod's containers with docker as a kubelet would and returns how
// each ended; it is a ContainersFunc. Every container starts at once with
// the host's network; volumes are host directories (emptyDir: one per pod,
// on /dev/shm for medium Memory; Secret, ConfigMap and projected: their
// files with the modes asked for, owned by root and, with an fsGroup,
// group-owned by it and group-readable, as the kubelet's volume ownership
// does). A pod it cannot honour fails the test (t.Errorf) and every
// container ends with exit code 1.
func (k *DockerKubelet) Run(ctx context.Context, pod *corev1.Pod) map[string]ContainerExit {
	fail := func(err error) map[string]ContainerExit {
		var r *refusal
		if errors.As(err, &r) {
			k.t.Errorf("kubetest: docker kubelet: pod %s/%s: %v", pod.Namespace, pod.Name, err)
		} else {
			k.logf("kubetest: docker kubelet: pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		out := map[string]ContainerExit{}
		for _, c := range pod.Spec.Containers {
			out[c.Name] = ContainerExit{ExitCode: 1, Message: err.Error()}
		}
		return out
	}
	if err := check(pod); err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp(k.dir, "pod-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	var memDirs []string
	defer func() {
		for _, d := range memDirs {
			_ = os.RemoveAll(d)
		}
	}()
	containers, err := k.prepare(ctx, pod, dir, &memDirs)
	if err != nil {
		return fail(err)
	}

	st := newPodStatus(k, pod)

	// activeDeadlineSeconds counts from the pod's start.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var deadlineHit sync.Once
	hit := false
	if s := pod.Spec.ActiveDeadlineSeconds; s != nil {
		start := time.Now()
		if pod.Status.StartTime != nil {
			start = pod.Status.StartTime.Time
		}
		timer := time.AfterFunc(time.Until(start.Add(time.Duration(*s)*time.Second)), func() {
			deadlineHit.Do(func() { hit = true })
			cancel()
		})
		defer timer.Stop()
	}

	if k.delay != nil {
		select {
		case <-time.After(k.delay(pod)):
		case <-runCtx.Done():
		}
	}
	grace := 30 * time.Second
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	var mu sync.Mutex
	out := map[string]ContainerExit{}
	var wg sync.WaitGroup
	for _, c := range containers {
		if runCtx.Err() != nil { // stopped before it started
			mu.Lock()
			out[c.spec.Name] = ContainerExit{ExitCode: 137, Message: "killed before it started"}
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			e := k.runContainer(runCtx, pod, c, grace, st)
			mu.Lock()
			out[c.spec.Name] = e
			mu.Unlock()
		})
	}
	wg.Wait()
	deadlineHit.Do(func() {})
	if hit {
		const msg = "Pod was active on the node longer than the specified deadline"
		for name, e := range out {
			if e.Message == "" {
				e.Message = "DeadlineExceeded: " + msg
			}
			out[name] = e
		}
		k.setPodReason(pod, "DeadlineExceeded", msg)
	}
	return out
}

// setPodReason writes the pod's status reason and message, as the kubelet
// does for a pod it kills (the played kubelet then writes the phase and
// keeps them).
func (k *DockerKubelet) setPodReason(pod *corev1.Pod, reason, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := k.cs.CoreV1().Pods(pod.Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return nil
		}
		cur.Status.Reason, cur.Status.Message = reason, msg
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		k.logf("kubetest: docker kubelet: pod %s: write reason %s: %v", pod.Name, reason, err)
	}
}

var nameRE = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// runContainer runs c until it exits, restarting it as the pod's
// restartPolicy says, until ctx ends (the pod deleted, its deadline, the
// test's end): then it is stopped (SIGTERM, SIGKILL after grace). Its
// container is always removed.
func (k *DockerKubelet) runContainer(ctx context.Context, pod *corev1.Pod, c *dockerContainer, grace time.Duration, st *podStatus) ContainerExit {
	policy := pod.Spec.RestartPolicy
	for restarts := 0; ; restarts++ {
		e := k.runOnce(ctx, pod, c, grace, st, restarts > 0)
		if ctx.Err() != nil || policy == corev1.RestartPolicyNever || policy == "" ||
			(policy == corev1.RestartPolicyOnFailure && e.ExitCode == 0) {
			return e
		}
		k.logf("kubetest: docker kubelet: pod %s, container %s exited %d; restarting (%d)", pod.Name, c.spec.Name, e.ExitCode, restarts+1)
		select {
		case <-ctx.Done():
			return e
		case <-time.After(time.Second << min(restarts, 4)):
		}
	}
}

func (k *DockerKubelet) runOnce(ctx context.Context, pod *corev1.Pod, c *dockerContainer, grace time.Duration, st *podStatus, restart bool) ContainerExit {
	docker := func(ctx context.Context, args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, k.env.CLI, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("docker %s: %w: %s", args[0], err, bytes.TrimSpace(stderr.Bytes()))
		}
		return strings.TrimSpace(stdout.String()), err
	}
	bg := context.WithoutCancel(ctx)
	// Always removed, even if the start failed half-way.
	defer func() {
		rctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		if _, err := docker(rctx, "rm", "-f", "-v", c.name); err != nil && !strings.Contains(err.Error(), "No such container") {
			k.t.Errorf("kubetest: docker kubelet: remove container %s: %v", c.name, err)
		}
	}()
	_ = os.Truncate(c.termFile, 0)
	if _, err := docker(ctx, c.args...); err != nil {
		return ContainerExit{ExitCode: 128, Message: "RunContainerError: " + err.Error()}
	}
	waited := make(chan struct{})
	var code string
	var waitErr error
	go func() {
		defer close(waited)
		code, waitErr = docker(bg, "wait", c.name)
	}()
	stop := func() {
		sctx, cancel := context.WithTimeout(bg, grace+time.Minute)
		_, _ = docker(sctx, "stop", "-t", strconv.Itoa(int(grace.Seconds())), c.name)
		cancel()
	}
	// Probes, while the container runs: readiness is reported, a failed
	// liveness probe stops the container (restartPolicy decides the rest).
	st.started(c.spec.Name, restart, c.spec.ReadinessProbe != nil)
	pctx, pcancel := context.WithCancel(ctx)
	var probes sync.WaitGroup
	if p := c.spec.ReadinessProbe; p != nil {
		probes.Go(func() { k.probe(pctx, c, p, false, func(ok bool) { st.setReady(c.spec.Name, ok) }) })
	}
	if p := c.spec.LivenessProbe; p != nil {
		probes.Go(func() {
			k.probe(pctx, c, p, true, func(bool) {
				k.logf("kubetest: docker kubelet: pod %s, container %s: liveness probe failed; stopping it", pod.Name, c.spec.Name)
				stop()
			})
		})
	}
	select {
	case <-waited:
	case <-ctx.Done():
		stop()
		<-waited
	}
	pcancel()
	probes.Wait()
	if waitErr != nil {
		return ContainerExit{ExitCode: 1, Message: waitErr.Error()}
	}
	// docker logs writes the container's stderr to its own stderr.
	logs, _ := dockerCombined(bg, k.env.CLI, "logs", c.name)
	n, err := strconv.Atoi(code)
	if err != nil {
		return ContainerExit{ExitCode: 1, Message: fmt.Sprintf("docker wait: %q", code)}
	}
	oom, _ := docker(bg, "inspect", "--format", "{{.State.OOMKilled}}", c.name)
	k.logf("kubetest: docker kubelet: pod %s, container %s exited %d (oom killed: %s); output:\n%s", pod.Name, c.spec.Name, n, oom, logs)
	msg := ""
	if b, err := os.ReadFile(c.termFile); err == nil {
		if len(b) > 4096 {
			b = b[:4096]
		}
		msg = string(b)
	}
	if msg == "" && n != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		msg = logTail(logs)
	}
	return ContainerExit{ExitCode: n, Message: msg}
}

func dockerCombined(ctx context.Context, cli string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.WaitDelay = 5 * time.Second
	b, err := cmd.CombinedOutput()
	return string(b), err
}
