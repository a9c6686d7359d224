//go:build linux

package kubetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// PodFunc is what the played kubelet "runs" for a pod: it gets the pod as it
// was when it started Running and a context that ends when the pod is
// deleted (as a real kubelet would kill it) or the test ends. Its exit code
// and message become every container's terminated state (message is the
// termination message, at most 4096 bytes in a real cluster).
type PodFunc func(ctx context.Context, pod *corev1.Pod) (exitCode int, message string)

// ContainerExit is how one container of a played pod ended.
type ContainerExit struct {
	ExitCode int
	// Message is its termination message (at most 4096 bytes in a real
	// cluster).
	Message string
}

// ContainersFunc is a PodFunc that tells how each container ended, by
// name. A container it leaves out ends with exit code 1 ("not played").
// Processes.Run is one.
type ContainersFunc func(ctx context.Context, pod *corev1.Pod) map[string]ContainerExit

// PlayKubelet stands in for the kubelet of the pods in namespace until t
// ends: for each new Pending pod it writes status Running (all containers
// running and ready), calls run in its own goroutine, then writes the
// containers' terminated state (all with run's exit code and message) and
// phase Succeeded (exit code 0) or Failed through the status subresource,
// which is all the Job controller needs to complete or fail a Job. Pods are
// never scheduled (there is no scheduler): spec.nodeName stays empty, which
// also makes their deletion immediate. Errors writing status fail t.
func (c *Cluster) PlayKubelet(t testing.TB, namespace string, run PodFunc) {
	t.Helper()
	c.PlayKubeletContainers(t, namespace, func(ctx context.Context, pod *corev1.Pod) map[string]ContainerExit {
		code, msg := run(ctx, pod)
		out := map[string]ContainerExit{}
		for _, ctr := range pod.Spec.Containers {
			out[ctr.Name] = ContainerExit{ExitCode: code, Message: msg}
		}
		return out
	})
}

// PlayKubeletContainers is PlayKubelet with an outcome per container: the
// pod Succeeds only if every container exits 0.
func (c *Cluster) PlayKubeletContainers(t testing.TB, namespace string, run ContainersFunc) {
	t.Helper()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatalf("kubetest: PlayKubelet: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &kubelet{t: t, cs: cs, ns: namespace, run: run, pods: map[types.UID]context.CancelFunc{}}
	k.wg.Go(func() { k.loop(ctx) })
	t.Cleanup(func() {
		cancel()
		k.wg.Wait()
	})
}

type kubelet struct {
	t   testing.TB
	cs  kubernetes.Interface
	ns  string
	run ContainersFunc
	wg  sync.WaitGroup
	// pods maps every pod seen to the cancel func of its run; only loop's
	// goroutine touches it.
	pods map[types.UID]context.CancelFunc
}

// loop lists then watches the namespace's pods, re-listing whenever the
// watch ends (timeouts, compaction), until ctx ends.
func (k *kubelet) loop(ctx context.Context) {
	defer func() {
		for _, cancel := range k.pods {
			cancel()
		}
	}()
	for ctx.Err() == nil {
		if err := k.listWatch(ctx); err != nil && ctx.Err() == nil {
			k.t.Logf("kubetest: kubelet in %s: %v; re-listing", k.ns, err)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func (k *kubelet) listWatch(ctx context.Context) error {
	pods := k.cs.CoreV1().Pods(k.ns)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range list.Items {
		k.observe(ctx, &list.Items[i], false)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				if pod, ok := ev.Object.(*corev1.Pod); ok {
					k.observe(ctx, pod, ev.Type == watch.Deleted)
				}
			case watch.Error:
				return fmt.Errorf("watch: %w", apierrors.FromObject(ev.Object))
			}
		}
	}
}

// observe starts a run for a new Pending pod, and ends the run of a pod
// that is being deleted.
func (k *kubelet) observe(ctx context.Context, pod *corev1.Pod, deleted bool) {
	cancel, seen := k.pods[pod.UID]
	if deleted || pod.DeletionTimestamp != nil {
		if seen {
			cancel()
		} else {
			k.pods[pod.UID] = func() {}
		}
		return
	}
	if seen {
		return
	}
	if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" {
		k.pods[pod.UID] = func() {} // someone else's; leave it alone
		return
	}
	podCtx, cancel := context.WithCancel(ctx)
	k.pods[pod.UID] = cancel
	pod = pod.DeepCopy()
	k.wg.Go(func() {
		defer cancel()
		k.runPod(podCtx, pod)
	})
}

func (k *kubelet) runPod(ctx context.Context, pod *corev1.Pod) {
	started := metav1.Now()
	running, err := k.writeStatus(ctx, pod, func(p *corev1.Pod) { setRunning(p, started) })
	if err != nil {
		k.report(ctx, pod, "write Running status", err)
		return
	}
	exits := k.run(ctx, running)
	// The pod's own context may have ended (deleted); the status write only
	// needs the test to be running still.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := k.writeStatus(wctx, pod, func(p *corev1.Pod) { setTerminated(p, started, exits) }); err != nil {
		k.report(ctx, pod, "write terminated status", err)
	}
}

// writeStatus applies mutate to the current pod and writes its status,
// retrying on conflicts (the Job controller edits the pod's finalizers).
func (k *kubelet) writeStatus(ctx context.Context, pod *corev1.Pod, mutate func(*corev1.Pod)) (*corev1.Pod, error) {
	pods := k.cs.CoreV1().Pods(pod.Namespace)
	var out *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		mutate(cur)
		out, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	return out, err
}

// report fails the test unless the error is the pod or the test going away.
func (k *kubelet) report(ctx context.Context, pod *corev1.Pod, what string, err error) {
	if apierrors.IsNotFound(err) || errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return
	}
	k.t.Errorf("kubetest: kubelet: pod %s/%s: %s: %v", pod.Namespace, pod.Name, what, err)
}

func setRunning(p *corev1.Pod, started metav1.Time) {
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &started
	p.Status.ContainerStatuses = nil
	for _, ctr := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:        ctr.Name,
			Image:       ctr.Image,
			ImageID:     "kubetest://" + ctr.Image,
			ContainerID: "kubetest://" + string(p.UID) + "/" + ctr.Name,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Ready:       true,
			Started:     ptrTo(true),
		})
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setCondition(p, ct, corev1.ConditionTrue, "", started)
	}
}

func setTerminated(p *corev1.Pod, started metav1.Time, exits map[string]ContainerExit) {
	finished := metav1.Now()
	p.Status.Phase = corev1.PodSucceeded
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		exit, ok := exits[cs.Name]
		if !ok {
			exit = ContainerExit{ExitCode: 1, Message: "kubetest: container not played"}
		}
		reason := "Completed"
		if exit.ExitCode != 0 {
			reason = "Error"
			p.Status.Phase = corev1.PodFailed
		}
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode:    int32(exit.ExitCode),
			Reason:      reason,
			Message:     exit.Message,
			StartedAt:   started,
			FinishedAt:  finished,
			ContainerID: cs.ContainerID,
		}}
		cs.Ready = false
		cs.Started = ptrTo(false)
	}
	for _, ct := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setCondition(p, ct, corev1.ConditionFalse, "PodCompleted", finished)
	}
}

func setCondition(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, reason string, at metav1.Time) {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == t {
			if c.Status != s {
				c.LastTransitionTime = at
			}
			c.Status, c.Reason = s, reason
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: at})
}

func ptrTo[T any](v T) *T { return &v }
