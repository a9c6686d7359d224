//go:build linux

package kubetest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
)

// probeFields are the honoured fields of a readiness or liveness probe:
// httpGet, tcpSocket and exec handlers and their timing. (startupProbe,
// grpc handlers and a probe's own terminationGracePeriodSeconds are not.)
func probeFields(probe string) []string {
	var out []string
	for _, f := range []string{
		"httpGet.path", "httpGet.port", "httpGet.host", "httpGet.scheme", "httpGet.httpHeaders",
		"tcpSocket.port", "tcpSocket.host", "exec.command",
		"initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold",
	} {
		out = append(out, probe+"."+f)
	}
	return out
}

// podStatus writes what the kubelet reports of a running pod's containers
// besides their start and end (which the played kubelet writes): each
// container's readiness (and from it the ContainersReady and Ready
// conditions) and restart count.
type podStatus struct {
	k        *DockerKubelet
	pod      *corev1.Pod
	mu       sync.Mutex
	ready    map[string]bool
	restarts map[string]int32
}

func newPodStatus(k *DockerKubelet, pod *corev1.Pod) *podStatus {
	s := &podStatus{k: k, pod: pod, ready: map[string]bool{}, restarts: map[string]int32{}}
	probed := false
	for _, c := range pod.Spec.Containers {
		// The played kubelet wrote every container ready; one with a
		// readiness probe is not, until the probe passes.
		s.ready[c.Name] = c.ReadinessProbe == nil
		probed = probed || c.ReadinessProbe != nil
	}
	if probed {
		s.mu.Lock()
		s.write()
		s.mu.Unlock()
	}
	return s
}

// started records a (re)start of container name: not ready until its
// readiness probe succeeds, if it has one.
func (s *podStatus) started(name string, restart, probed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	if restart {
		s.restarts[name]++
		changed = true
	}
	if probed && s.ready[name] {
		s.ready[name] = false
		changed = true
	}
	if changed {
		s.write()
	}
}

func (s *podStatus) setReady(name string, ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready[name] != ready {
		s.ready[name] = ready
		s.write()
	}
}

// write updates the pod's status while it is Running; s.mu is held.
func (s *podStatus) write() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := s.k.cs.CoreV1().Pods(s.pod.Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := pods.Get(ctx, s.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != s.pod.UID || cur.Status.Phase != corev1.PodRunning {
			return nil
		}
		all := true
		for i := range cur.Status.ContainerStatuses {
			cs := &cur.Status.ContainerStatuses[i]
			cs.Ready = s.ready[cs.Name]
			cs.RestartCount = s.restarts[cs.Name]
			all = all && cs.Ready
		}
		status, reason := corev1.ConditionTrue, ""
		if !all {
			status, reason = corev1.ConditionFalse, "ContainersNotReady"
		}
		now := metav1.Now()
		setCondition(cur, corev1.ContainersReady, status, reason, now)
		setCondition(cur, corev1.PodReady, status, reason, now)
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		s.k.logf("kubetest: docker kubelet: pod %s: write readiness: %v", s.pod.Name, err)
	}
}

// probe runs p against container c every period until ctx ends: result
// gets each change of outcome after successThreshold successes or
// failureThreshold failures in a row (readiness starts failed); for a
// liveness probe, result(false) is the last call.
func (k *DockerKubelet) probe(ctx context.Context, c *dockerContainer, p *corev1.Probe, liveness bool, result func(ok bool)) {
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	if p.PeriodSeconds == 0 {
		period = 10 * time.Second
	}
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	succ, fail := max(p.SuccessThreshold, 1), p.FailureThreshold
	if fail == 0 {
		fail = 3
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(p.InitialDelaySeconds) * time.Second):
	}
	ok := liveness // a liveness probe is taken as passing until it fails
	var okRun, failRun int32
	for {
		err := k.probeOnce(ctx, c, p, timeout)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			okRun, failRun = okRun+1, 0
			if !ok && okRun >= succ {
				ok = true
				result(true)
			}
		} else {
			okRun, failRun = 0, failRun+1
			if (ok || !liveness) && failRun >= fail {
				if ok || failRun == fail {
					k.logf("kubetest: docker kubelet: container %s: probe failed %d times: %v", c.spec.Name, failRun, err)
				}
				if ok {
					ok = false
					result(false)
				}
				if liveness {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(period):
		}
	}
}

// probeOnce runs one probe: on the host's network, the pod's address is
// 127.0.0.1.
func (k *DockerKubelet) probeOnce(ctx context.Context, c *dockerContainer, p *corev1.Probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	port := func(v intstr.IntOrString) (string, error) {
		if v.Type == intstr.Int {
			return strconv.Itoa(v.IntValue()), nil
		}
		for _, cp := range c.spec.Ports {
			if cp.Name == v.StrVal {
				return strconv.Itoa(int(cp.ContainerPort)), nil
			}
		}
		return "", fmt.Errorf("no container port named %q", v.StrVal)
	}
	host := func(h string) string {
		if h == "" {
			return "127.0.0.1"
		}
		return h
	}
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		pt, err := port(g.Port)
		if err != nil {
			return err
		}
		scheme := strings.ToLower(string(g.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host(g.Host), pt)+g.Path, nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		// The kubelet does not verify a probe's certificate.
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as the kubelet
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("GET %s: %s", g.Path, resp.Status)
		}
		return nil
	case p.TCPSocket != nil:
		pt, err := port(p.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host(p.TCPSocket.Host), pt))
		if err != nil {
			return err
		}
		return conn.Close()
	case p.Exec != nil:
		out, err := exec.CommandContext(ctx, k.env.CLI, append([]string{"exec", c.name}, p.Exec.Command...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("exec %v: %w: %s", p.Exec.Command, err, out)
		}
		return nil
	}
	return errors.New("probe without a handler")
}
