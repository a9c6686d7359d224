//go:build linux

package kubetest

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestDockerKubeletRefuses: a field the container kubelet does not honour
// refuses the pod, whatever it is, while the fields of a run pod pass.
func TestDockerKubeletRefuses(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Volumes: []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Mi")),
			}}}},
			Containers: []corev1.Container{{
				Name: "c", Image: "i", Command: []string{"x"},
				VolumeMounts:    []corev1.VolumeMount{{Name: "h", MountPath: "/h"}},
				ReadinessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		}}
	}
	require.NoError(t, check(base()))
	for name, mutate := range map[string]func(p *corev1.Pod){
		"hostPath volume": func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "x", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		},
		"subPath":      func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "a" },
		"startupProbe": func(p *corev1.Pod) { p.Spec.Containers[0].StartupProbe = &corev1.Probe{} },
		"grpc probe": func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 1}}}
		},
		"lifecycle":       func(p *corev1.Pod) { p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{} },
		"init containers": func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "i"}} },
		"hostNetwork":     func(p *corev1.Pod) { p.Spec.HostNetwork = true },
		"privileged":      func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true) },
		"sysctls": func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "a", Value: "b"}}}
		},
		"env resourceFieldRef": func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}}}
		},
		"fieldRef status.podIP": func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
		},
	} {
		p := base()
		mutate(p)
		err := check(p)
		require.Error(t, err, name)
		t.Logf("%s: %v", name, err)
	}
}

// mirrorDir is the offline provider mirror named by the Terraform CLI
// config of `make tools` (DRIFTWATCH_TF_CLI_CONFIG).
func mirrorDir(t *testing.T) string {
	t.Helper()
	rc := os.Getenv("DRIFTWATCH_TF_CLI_CONFIG")
	if rc == "" {
		tftest.Unavailable(t, "DRIFTWATCH_TF_CLI_CONFIG not set: run `make tools` (make test does)")
	}
	data, err := os.ReadFile(rc)
	require.NoError(t, err)
	m := regexp.MustCompile(`path\s*=\s*"([^"]+)"`).FindSubmatch(data)
	require.NotNil(t, m, "no filesystem_mirror path in %s", rc)
	return string(m[1])
}

// Paths in the run test's image.
const (
	runImageMirror = "/opt/terraform-mirror"
	runImageCLIRC  = "/opt/terraform/terraformrc" // not under /etc/driftwatch: the chart mounts its ConfigMap there
	runImageWS     = "/srv/workspaces/network"
	// runImageSlowWS reads a data source that sleeps for 5 minutes.
	runImageSlowWS = "/srv/workspaces/slow"
)

// runImage builds (or finds cached) driftwatch's image plus, for a run
// pod: the offline provider mirror and a Terraform CLI config naming it,
// and a workspace applied at build time (by the image's Terraform, as its
// user) whose managed file was then edited behind Terraform's back. The
// runner's configuration has no volumes or env for run pods, and a Job's
// pod may not use a hostPath (restricted Pod Security): so the test bakes
// what a platform team would bake or fetch (a provider mirror, a module).
func runImage(t *testing.T, env DockerEnv) string {
	t.Helper()
	ctx := filepath.Join(t.TempDir(), "context")
	require.NoError(t, os.MkdirAll(filepath.Join(ctx, "ws", "out"), 0o755))
	// Only the provider the workspaces use, for the image's Terraform (the
	// mirror holds OpenTofu's registry too, and hard links that a copy
	// would multiply).
	const provider = "registry.terraform.io/driftwatch/dwtest"
	require.NoError(t, copyTree(filepath.Join(mirrorDir(t), provider), filepath.Join(ctx, "mirror", provider)))
	require.NoError(t, os.WriteFile(filepath.Join(ctx, "terraformrc"), []byte(`provider_installation {
  filesystem_mirror {
    path    = "`+runImageMirror+`"
    include = ["*/*/*"]
  }
}
disable_checkpoint = true
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ctx, "ws", "main.tf"), []byte(`terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

resource "dwtest_file" "hosts" {
  filename = "`+runImageWS+`/out/hosts.conf"
  content  = "10.0.0.1 gateway\n10.0.0.2 dns\n"
}
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ctx, "ws", "out", ".keep"), nil, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(ctx, "slow"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ctx, "slow", "main.tf"), []byte(`terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

data "dwtest_sleep" "slow" {
  duration = "5m"
}
`), 0o644))
	return env.BuildImage(t, "driftwatch-kubetest-run", `FROM `+env.Image+`
COPY mirror `+runImageMirror+`
COPY terraformrc `+runImageCLIRC+`
COPY --chown=65532:65532 ws `+runImageWS+`
COPY slow `+runImageSlowWS+`
RUN set -e; cd `+runImageWS+`; \
    export TF_CLI_CONFIG_FILE=`+runImageCLIRC+` HOME=/tmp CHECKPOINT_DISABLE=1; \
    terraform init -input=false -no-color >/dev/null; \
    terraform apply -auto-approve -input=false -no-color >/dev/null; \
    rm -rf .terraform; \
    echo "10.0.0.99 gateway # hotfix" > out/hosts.conf
`, ctx)
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm()|0o444)
	})
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestDockerRunJob: the Kubernetes runner's detection Job runs for real.
// The runner creates the Job against the real API server; the Job
// controller creates its pod (restricted Pod Security enforced); the
// container kubelet runs its two containers in driftwatch's image, as the
// Job asks (users, read-only root, no capabilities, Secret volumes with
// their modes read through the fsGroup, the handoff socket in a memory
// emptyDir); Terraform in the runner container plans a real workspace
// with a real provider from the offline mirror and finds the drift; the
// reporter posts the result to the test's receiver on 127.0.0.1.
func TestDockerRunJob(t *testing.T) {
	env := Docker(t)
	image := runImage(t, env)
	c := Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	const ns = "runs"
	require.NoError(t, c.CreateNamespace(t.Context(), ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}))
	// The slow workspace's pod starts late, as after a slow image pull:
	// its run's own timeout (counted in the pod) then ends after the
	// Job's deadline (counted from the Job's start).
	k := c.PlayKubeletDocker(t, ns, env, DockerOptions{StartDelay: func(p *corev1.Pod) time.Duration {
		if p.Annotations[kube.AnnotationWorkspace] == "slow" {
			return 8 * time.Second
		}
		return 0
	}})

	recv := remote.NewReceiver(remote.ReceiverOptions{
		Proceed: func(context.Context, string) *engine.Refusal { return nil },
		Logger:  slog.New(slog.NewTextHandler(logWriter{t}, nil)),
	})
	mux := http.NewServeMux()
	mux.Handle(remote.Route, recv)
	srv := httptest.NewServer(mux) // 127.0.0.1: the pods share the host's network
	t.Cleanup(srv.Close)
	r, err := kube.New(kube.Options{
		Client: cs, Receiver: recv,
		Config: kube.Config{
			Namespace: ns, Image: image, ImagePullPolicy: corev1.PullNever,
			CallbackURL: srv.URL, CLIConfigFile: runImageCLIRC,
			StartupAllowance: 2 * time.Second,
		},
		Logger: slog.New(slog.NewTextHandler(logWriter{t}, nil)),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if err := r.Watch(ctx); err != nil {
			t.Errorf("watch: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-watched })

	began := time.Now()
	rctx, rcancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer rcancel()
	res, err := r.Run(rctx, terraform.Request{
		RunID: "run-1", Workspace: "network",
		Source:  terraform.Source{Path: runImageWS},
		Timeout: 3 * time.Minute,
	})
	t.Logf("run: %s", time.Since(began).Round(time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, 2, res.ExitCode, "plan exit code (changes)")
	assert.Contains(t, res.Tool, "erraform")
	require.NotNil(t, res.Plan)
	var found bool
	for _, d := range res.Plan.Drift {
		if d.Address == "dwtest_file.hosts" {
			found = true
			assert.Equal(t, []string{"update"}, d.Actions)
			assert.Equal(t, []string{"content"}, d.Attributes)
		}
	}
	assert.True(t, found, "no drift of dwtest_file.hosts in %+v", res.Plan.Drift)

	// The Job succeeded: both containers exited 0.
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: kube.WorkspaceSelector("network")})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	eventually(t, "the pod's terminated status", func() bool {
		p, err := cs.CoreV1().Pods(ns).Get(t.Context(), pods.Items[0].Name, metav1.GetOptions{})
		require.NoError(t, err)
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return false
		}
		for _, s := range p.Status.ContainerStatuses {
			require.NotNil(t, s.State.Terminated, s.Name)
			assert.Equal(t, int32(0), s.State.Terminated.ExitCode, "%s: %s", s.Name, s.State.Terminated.Message)
		}
		assert.Equal(t, corev1.PodSucceeded, p.Status.Phase)
		return true
	})

	t.Run("job deadline", func(t *testing.T) {
		// Deadline: 10 s timeout + 1 s kill grace + 2 s allowance = 13 s;
		// the pod starts 8 s late and would run until 18 s.
		began := time.Now()
		_, err := r.Run(t.Context(), terraform.Request{
			RunID: "run-slow", Workspace: "slow",
			Source:  terraform.Source{Path: runImageSlowWS},
			Timeout: 10 * time.Second, KillGrace: time.Second,
		})
		t.Logf("run: %s: %v", time.Since(began).Round(time.Millisecond), err)
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "run timed out: job deadline exceeded after 13s", re.Reason)
		require.ErrorIs(t, err, terraform.ErrTimeout)
		assert.Less(t, time.Since(began), 17*time.Second, "the run ended at the Job's deadline, not at the pod's own timeout")
		// The Job controller deleted the pod: its containers are gone.
		eventually(t, "the slow pod's containers removed", func() bool {
			l, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: kube.WorkspaceSelector("slow")})
			require.NoError(t, err)
			return len(l.Items) == 0 && len(k.containers()) == 0
		})
	})
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

// TestDockerKubeletPod: the container kubelet runs a pod as a kubelet
// would: users and groups, the sandbox (read-only root, no capabilities,
// no privilege escalation, seccomp), env from values, Secrets, ConfigMaps
// and the downward API, Secret and ConfigMap files with their modes and
// the fsGroup's ownership, an emptyDir shared by two containers running at
// once, a memory emptyDir, the projected service account token (accepted
// by the API server), the working directory and the termination message;
// activeDeadlineSeconds kills a pod (Failed, DeadlineExceeded); deleting a
// pod removes its container.
func TestDockerKubeletPod(t *testing.T) {
	env := Docker(t)
	c := Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	const ns = "pods"
	ctx := t.Context()
	require.NoError(t, c.CreateNamespace(ctx, ns, nil))
	k := c.PlayKubeletDocker(t, ns, env, DockerOptions{})
	_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Data:       map[string][]byte{"key": []byte("secret-value"), "other": []byte("not mounted")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		Data:       map[string]string{"a": "cm-a", "b": "cm-b"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	sandbox := func(uid int64) *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsUser: ptr.To(uid), RunAsNonRoot: ptr.To(true),
			ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
	script := `
out=/dev/termination-log
say() { echo "$1=$2" >> "$out"; }
say uid "$(id -u)"; say gid "$(id -g)"; say groups "$(id -G)"
if touch /rootfs-probe 2>/dev/null; then say rootfs writable; else say rootfs readonly; fi
say capeff "$(awk '/^CapEff/ {print $2}' /proc/self/status)"
say nonewprivs "$(awk '/^NoNewPrivs/ {print $2}' /proc/self/status)"
say seccomp "$(awk '/^Seccomp:/ {print $2}' /proc/self/status)"
say env "$PLAIN|$FROM_SECRET|$FROM_CM|$POD_NAME|$POD_NS|$EXPANDED|$CM_a|$CM_b"
say kube "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
say pwd "$(pwd)"
say layout "$(ls -A /secret | sed 's/^[.][.]20.*/..TIMESTAMP/' | tr '\n' ' ')|$(readlink /secret/token-file)"
say secret "$(cat /secret/token-file)|$(stat -L -c '%a %u %g' /secret/token-file)|$(ls /secret | tr '\n' ' ')"
say cm "$(cat /cm/a)|$(stat -L -c '%a %u %g' /cm/a)"
say mem "$(awk '$2 == "/mem" {print $3}' /proc/mounts)"
say ns "$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)"
say ca "$(grep -c 'BEGIN CERTIFICATE' /var/run/secrets/kubernetes.io/serviceaccount/ca.crt)"
i=0; until [ -e /shared/hello ]; do i=$((i+1)); [ $i -lt 100 ] || break; sleep 0.1; done
say shared "$(cat /shared/hello 2>&1)"
say token "$(cat /var/run/secrets/kubernetes.io/serviceaccount/token)"
`
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "features"},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsGroup: ptr.To[int64](2345), FSGroup: ptr.To[int64](3456), SupplementalGroups: []int64{4567},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: []corev1.Volume{
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "s", Items: []corev1.KeyToPath{{Key: "key", Path: "token-file", Mode: ptr.To[int32](0o400)}},
				}}},
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, DefaultMode: ptr.To[int32](0o600),
				}}},
				{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{{
				Name: "check", Image: env.Image, Command: []string{"/bin/sh", "-ec", script},
				WorkingDir: "/work",
				Env: []corev1.EnvVar{
					{Name: "PLAIN", Value: "plain"},
					{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "key"}}},
					{Name: "FROM_CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "a"}}},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "EXPANDED", Value: "$(PLAIN)-x-$$(PLAIN)"},
				},
				EnvFrom: []corev1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "secret", MountPath: "/secret", ReadOnly: true},
					{Name: "cm", MountPath: "/cm"},
					{Name: "shared", MountPath: "/shared"},
					{Name: "mem", MountPath: "/mem"},
					{Name: "work", MountPath: "/work"},
				},
				SecurityContext: sandbox(1234),
			}, {
				Name: "peer", Image: env.Image, Command: []string{"/bin/sh", "-ec", `echo "hello from $(id -u)" > /shared/hello`},
				VolumeMounts:    []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}},
				SecurityContext: sandbox(5678),
			}},
		},
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	done := waitPod(t, c, ns, "features")
	require.Equal(t, corev1.PodSucceeded, done.Status.Phase, "%+v", done.Status.ContainerStatuses)
	var check corev1.ContainerStatus
	for _, s := range done.Status.ContainerStatuses {
		require.NotNil(t, s.State.Terminated, s.Name)
		require.Equal(t, int32(0), s.State.Terminated.ExitCode, "%s: %s", s.Name, s.State.Terminated.Message)
		if s.Name == "check" {
			check = s
		}
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(check.State.Terminated.Message), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	shown, _, _ := strings.Cut(check.State.Terminated.Message, "token=")
	t.Logf("termination message of check (token cut):\n%s", shown)
	port := c.Server[strings.LastIndex(c.Server, ":")+1:]
	want := map[string]string{
		"uid": "1234", "gid": "2345", "groups": "2345 3456 4567",
		"rootfs": "readonly", "capeff": "0000000000000000", "nonewprivs": "1", "seccomp": "2",
		"env":  "plain|secret-value|cm-a|features|pods|plain-x-$(PLAIN)|cm-a|cm-b",
		"kube": "127.0.0.1:" + port, "pwd": "/work",
		// 0400 plus the fsGroup's read, root's, the fsGroup's group; only
		// the item asked for.
		"secret": "secret-value|440 0 3456|token-file ",
		"cm":     "cm-a|640 0 3456",
		// The kubelet's atomic writer: files behind ..data.
		"layout": "..TIMESTAMP ..data token-file |..data/token-file",
		"mem":    "tmpfs", "ns": "pods", "ca": "1",
		"shared": "hello from 5678",
	}
	for key, w := range want {
		assert.Equal(t, w, got[key], key)
	}
	// The projected token is the pod's ServiceAccount's, bound to the pod.
	require.NotEmpty(t, got["token"])
	tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: got["token"]},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.True(t, tr.Status.Authenticated, "token review: %+v", tr.Status)
	assert.Equal(t, "system:serviceaccount:pods:default", tr.Status.User.Username)

	t.Run("activeDeadlineSeconds", func(t *testing.T) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "deadline"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, ActiveDeadlineSeconds: ptr.To[int64](2),
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers:                    []corev1.Container{{Name: "sleep", Image: env.Image, Command: []string{"sleep", "300"}}},
			},
		}
		began := time.Now()
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		done := waitPod(t, c, ns, "deadline")
		assert.Less(t, time.Since(began), 30*time.Second)
		assert.Equal(t, corev1.PodFailed, done.Status.Phase)
		assert.Equal(t, "DeadlineExceeded", done.Status.Reason)
		require.Len(t, done.Status.ContainerStatuses, 1)
		assert.Equal(t, int32(137), done.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	})

	t.Run("probes", func(t *testing.T) {
		// Ready once the readiness probe passes; a failed liveness probe
		// restarts the container (restartPolicy Always), in the same pod:
		// the emptyDir keeps what the first run wrote.
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "probed"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](1),
				Volumes: []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				Containers: []corev1.Container{{
					Name: "main", Image: env.Image,
					Command:      []string{"/bin/sh", "-c", "if [ -e /state/kill ]; then rm /state/kill; touch /state/restarted; fi; touch /state/started; exec sleep 300"},
					VolumeMounts: []corev1.VolumeMount{{Name: "state", MountPath: "/state"}},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-e", "/state/started"}}},
						PeriodSeconds: 1,
					},
					LivenessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "!", "-e", "/state/kill"}}},
						PeriodSeconds: 1, FailureThreshold: 1,
					},
				}},
			},
		}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		status := func() (ready bool, restarts int32) {
			cur, err := cs.CoreV1().Pods(ns).Get(ctx, "probed", metav1.GetOptions{})
			require.NoError(t, err)
			for _, c := range cur.Status.Conditions {
				if c.Type == corev1.PodReady {
					ready = c.Status == corev1.ConditionTrue
				}
			}
			if len(cur.Status.ContainerStatuses) == 1 {
				restarts = cur.Status.ContainerStatuses[0].RestartCount
			}
			return ready, restarts
		}
		eventually(t, "the container running", func() bool { return len(k.podContainers(ns, "probed", false)) == 1 })
		eventually(t, "the pod ready", func() bool { r, _ := status(); return r })
		names := k.podContainers(ns, "probed", false)
		require.Len(t, names, 1)
		out, err := exec.Command(env.CLI, "exec", names[0], "touch", "/state/kill").CombinedOutput()
		require.NoError(t, err, "%s", out)
		// The restarted container saw the kill file on the pod's volume
		// (and removed it, so it lives).
		eventually(t, "restarted and ready again", func() bool { r, n := status(); return r && n == 1 })
		names = k.podContainers(ns, "probed", false)
		require.Len(t, names, 1)
		out, err = exec.Command(env.CLI, "exec", names[0], "test", "-e", "/state/restarted").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "probed", metav1.DeleteOptions{}))
		eventually(t, "the container removed", func() bool { return len(k.podContainers(ns, "probed", true)) == 0 })
	})

	t.Run("delete kills", func(t *testing.T) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "deleted"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "sleep", Image: env.Image, Command: []string{"sleep", "300"}}},
			},
		}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
		eventually(t, "the container running", func() bool { return len(k.podContainers(ns, "deleted", false)) == 1 })
		require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "deleted", metav1.DeleteOptions{}))
		eventually(t, "the container removed", func() bool { return len(k.podContainers(ns, "deleted", true)) == 0 })
	})
}

// waitPod waits for pod ns/name to end (Succeeded or Failed, every
// container terminated).
func waitPod(t *testing.T, c *Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	cs, err := c.Clientset()
	require.NoError(t, err)
	var p *corev1.Pod
	eventually(t, "pod "+name+" to end", func() bool {
		p, err = cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return false
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Terminated == nil {
				return false
			}
		}
		return true
	})
	return p
}
