//go:build linux

package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Processes plays the containers of a pod as local processes, as a kubelet
// would run them, each with only its own volume mounts: every mount path
// of a container maps to a directory of the played pod, and a container
// sees only the directories of the volumes it mounts. An emptyDir is one
// directory, shared by the containers that mount it (as in a pod); a
// Secret or projected volume is materialised for each container that
// mounts it, under that container's own directory, with the items and
// modes the volume asks for (a file not among a volume's items is not
// there). Arguments (not the program) and env values that are paths under
// a mount are mapped; anything else (the program, the image's config) is
// the host's.
//
// What the played kubelet does not do: change user (every process runs as
// the test's), or hide the host's filesystem. A container "cannot see" a
// file when none of its mounts holds it: its argv, env and mapped paths
// lead only to its own directories.
//
// Use Run as a ContainersFunc (Cluster.PlayKubeletContainers).
type Processes struct {
	// Client reads the Secrets of Secret and projected volumes, waiting
	// for a Secret that is not there yet (as the kubelet retries a mount).
	Client kubernetes.Interface
	// Env is added to every container's environment (PATH, say).
	Env []string
	// Rewrite, if set, may change a file materialised from a Secret for
	// container c (volume and file name the item): to map in-pod paths in
	// it through c.Path.
	Rewrite func(c *Container, volume, file string, data []byte) ([]byte, error)
	// Check, if set, is called once every container's volumes are in
	// place, before any starts; an error fails every container (exit 1,
	// its message) and is reported through Logf.
	Check func(pod *corev1.Pod, containers []*Container) error
	// Exec runs one container until it exits or ctx ends (the pod is
	// deleted); default: c.Argv as a process with c.Env, killed when ctx
	// ends, its output (stdout and stderr) logged through Logf and, on a
	// non-zero exit, the tail of it as the termination message
	// (terminationMessagePolicy FallbackToLogsOnError).
	Exec func(ctx context.Context, c *Container) ContainerExit
	// Logf logs (t.Logf; default: discard).
	Logf func(format string, args ...any)
	// Started, if set, is called with the pod's directory before its
	// containers start (tests that look for the pod's processes).
	Started func(pod *corev1.Pod, dir string)
}

// Container is one container of a played pod, as its process sees it.
type Container struct {
	Name string
	Spec corev1.Container
	// Argv is the container's command and args, Env its environment
	// (NAME=value, then Processes.Env): paths under its mounts mapped,
	// except Argv[0].
	Argv []string
	Env  []string
	// Mounts are the container's volume mounts, mapped to the played
	// pod's directories.
	Mounts []Mount
}

// Mount is one volume mount of a played container.
type Mount struct {
	Volume   string
	Path     string // in the pod
	HostPath string // the directory it maps to
	ReadOnly bool
}

// Path maps an in-pod path through c's mounts (the longest mount path that
// holds it). ok is false if none does: the container has no such file
// unless the host (its image, here) has it at that very path.
func (c *Container) Path(inPod string) (host string, ok bool) {
	best := -1
	for i, m := range c.Mounts {
		if (inPod == m.Path || strings.HasPrefix(inPod, strings.TrimSuffix(m.Path, "/")+"/")) &&
			(best < 0 || len(m.Path) > len(c.Mounts[best].Path)) {
			best = i
		}
	}
	if best < 0 {
		return inPod, false
	}
	m := c.Mounts[best]
	return filepath.Join(m.HostPath, strings.TrimPrefix(inPod, m.Path)), true
}

// mapValue maps s if it is a path under one of c's mounts.
func (c *Container) mapValue(s string) string {
	if !strings.HasPrefix(s, "/") {
		return s
	}
	host, _ := c.Path(s)
	return host
}

// Run plays pod: it materialises the volumes, starts every container at
// once and returns how each ended. The pod's directory is removed after.
func (p *Processes) Run(ctx context.Context, pod *corev1.Pod) map[string]ContainerExit {
	logf := p.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	fail := func(err error) map[string]ContainerExit {
		logf("kubetest: pod %s: %v", pod.Name, err)
		out := map[string]ContainerExit{}
		for _, c := range pod.Spec.Containers {
			out[c.Name] = ContainerExit{ExitCode: 1, Message: err.Error()}
		}
		return out
	}
	dir, err := os.MkdirTemp("", "kubetest-pod-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	containers, err := p.prepare(ctx, pod, dir)
	if err != nil {
		return fail(err)
	}
	if p.Check != nil {
		if err := p.Check(pod, containers); err != nil {
			return fail(fmt.Errorf("check: %w", err))
		}
	}
	if p.Started != nil {
		p.Started(pod, dir)
	}
	run := p.Exec
	if run == nil {
		run = func(ctx context.Context, c *Container) ContainerExit { return runProcess(ctx, c, pod.Name, logf) }
	}
	var mu sync.Mutex
	out := map[string]ContainerExit{}
	var wg sync.WaitGroup
	for _, c := range containers {
		wg.Go(func() {
			e := run(ctx, c)
			mu.Lock()
			out[c.Name] = e
			mu.Unlock()
		})
	}
	wg.Wait()
	reap(dir, logf)
	return out
}

// reap kills what the pod's containers left running, as a container
// runtime tears down a container's PID namespace with it: every process
// working under the pod's directory dir (a provider whose Terraform was
// killed with its runner, say), and waits up to 10 s for them to go.
func reap(dir string, logf func(string, ...any)) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := processesUnder(dir)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			logf("kubetest: processes under %s survived SIGKILL: %v", dir, pids)
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesUnder lists the live processes whose working directory is
// under dir (a zombie has none: it is not listed).
func processesUnder(dir string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(dir, cwd); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			out = append(out, pid)
		}
	}
	return out
}

// prepare materialises pod's volumes under dir and maps each container.
func (p *Processes) prepare(ctx context.Context, pod *corev1.Pod, dir string) ([]*Container, error) {
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	secrets := map[string]*corev1.Secret{}
	var out []*Container
	for _, spec := range pod.Spec.Containers {
		c := &Container{Name: spec.Name, Spec: spec}
		// Map every mount first: a Secret file may name paths of other
		// mounts (Rewrite maps them through c.Path).
		type pending struct {
			v    corev1.Volume
			host string
		}
		var files []pending
		for _, m := range spec.VolumeMounts {
			v, ok := volumes[m.Name]
			if !ok {
				return nil, fmt.Errorf("container %s mounts unknown volume %q", spec.Name, m.Name)
			}
			var host string
			switch {
			case v.EmptyDir != nil:
				// One directory per pod: the containers that mount it
				// share it.
				host = filepath.Join(dir, "volumes", v.Name)
			case v.Secret != nil, v.Projected != nil:
				// One copy per container: only its own.
				host = filepath.Join(dir, "containers", spec.Name, v.Name)
				files = append(files, pending{v, host})
			default:
				return nil, fmt.Errorf("volume %q: only emptyDir, secret and projected volumes are played", v.Name)
			}
			if err := os.MkdirAll(host, 0o777); err != nil {
				return nil, err
			}
			c.Mounts = append(c.Mounts, Mount{Volume: v.Name, Path: m.MountPath, HostPath: host, ReadOnly: m.ReadOnly})
		}
		for _, f := range files {
			if err := p.materialise(ctx, c, pod.Namespace, f.v, f.host, secrets); err != nil {
				return nil, fmt.Errorf("container %s: volume %s: %w", spec.Name, f.v.Name, err)
			}
		}
		argv := append(append([]string{}, spec.Command...), spec.Args...)
		if len(argv) == 0 {
			return nil, fmt.Errorf("container %s: no command (the image's entrypoint is not played)", spec.Name)
		}
		// The program is the image's (the host's, here), never a mount's.
		c.Argv = append(c.Argv, argv[0])
		for _, a := range argv[1:] {
			c.Argv = append(c.Argv, c.mapValue(a))
		}
		for _, e := range spec.Env {
			if e.ValueFrom != nil {
				return nil, fmt.Errorf("container %s: env %s: valueFrom is not played", spec.Name, e.Name)
			}
			c.Env = append(c.Env, e.Name+"="+c.mapValue(e.Value))
		}
		c.Env = append(c.Env, p.Env...)
		out = append(out, c)
	}
	return out, nil
}

// materialise writes the files of a Secret or projected volume for c.
func (p *Processes) materialise(ctx context.Context, c *Container, ns string, v corev1.Volume, host string, cache map[string]*corev1.Secret) error {
	type source struct {
		secret string
		items  []corev1.KeyToPath
	}
	var sources []source
	mode := int32(0o644)
	if s := v.Secret; s != nil {
		sources = append(sources, source{s.SecretName, s.Items})
		if s.DefaultMode != nil {
			mode = *s.DefaultMode
		}
	} else {
		for _, src := range v.Projected.Sources {
			if src.Secret == nil {
				return errors.New("only secret sources of projected volumes are played")
			}
			sources = append(sources, source{src.Secret.Name, src.Secret.Items})
		}
		if v.Projected.DefaultMode != nil {
			mode = *v.Projected.DefaultMode
		}
	}
	for _, src := range sources {
		sec, err := p.secret(ctx, ns, src.secret, cache)
		if err != nil {
			return err
		}
		items := src.items
		if len(items) == 0 {
			for _, k := range sortedKeys(sec.Data) {
				items = append(items, corev1.KeyToPath{Key: k, Path: k})
			}
		}
		for _, it := range items {
			data, ok := sec.Data[it.Key]
			if !ok {
				return fmt.Errorf("secret %s has no key %q", src.secret, it.Key)
			}
			if p.Rewrite != nil {
				if data, err = p.Rewrite(c, v.Name, it.Path, data); err != nil {
					return fmt.Errorf("rewrite %s: %w", it.Path, err)
				}
			}
			m := mode
			if it.Mode != nil {
				m = *it.Mode
			}
			f := filepath.Join(host, it.Path)
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(f, data, fs.FileMode(m)); err != nil {
				return err
			}
		}
	}
	return nil
}

// secret gets a Secret, waiting up to 30 s for it to exist.
func (p *Processes) secret(ctx context.Context, ns, name string, cache map[string]*corev1.Secret) (*corev1.Secret, error) {
	if s, ok := cache[name]; ok {
		return s, nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := p.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			cache[name] = s
			return s, nil
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return nil, fmt.Errorf("secret %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runProcess runs c as a process until it exits or ctx ends.
func runProcess(ctx context.Context, c *Container, pod string, logf func(string, ...any)) ContainerExit {
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Env = c.Env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	logf("pod %s, container %s: %v\n%s", pod, c.Name, err, out.String())
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if code < 0 { // killed by a signal
			code = 137
		}
	case err != nil:
		return ContainerExit{ExitCode: 1, Message: err.Error()}
	}
	if code == 0 || c.Spec.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		return ContainerExit{ExitCode: code}
	}
	return ContainerExit{ExitCode: code, Message: logTail(out.String())}
}

// logTail is what the kubelet takes from a failed container's log for its
// termination message: the last 80 lines, at most 2048 bytes.
func logTail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	t := strings.Join(lines, "\n")
	if len(t) > 2048 {
		t = t[len(t)-2048:]
	}
	return t
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
