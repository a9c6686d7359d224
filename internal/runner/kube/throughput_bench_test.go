//go:build linux

package kube

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
)

// BenchmarkKubeThroughput drives the Kubernetes runner at full speed
// against a real kube-apiserver and kube-controller-manager on this
// machine, for DRIFTWATCH_BENCH_DURATION (default 10m): checks of 200
// workspaces, DRIFTWATCH_BENCH_CONCURRENCY (default 16) at a time, each a
// Job whose pod the played kubelet runs with the pod's real code (the
// runner and reporter containers, the handoff socket, the result and log
// posts to the daemon) and a stand-in plan that returns at once. The
// played kubelet and its pods run in a process of their own
// (startKubeletProcess), as a cluster runs them elsewhere, so that this
// process is the daemon's side alone: the runner, its informer and the
// Receiver the pods post to. The runner's client is limited as the
// daemon's is (DRIFTWATCH_BENCH_QPS, _BURST; default 50 and 100) and
// finished Jobs expire after DRIFTWATCH_BENCH_TTL (default 1m). It
// reports:
//
//   - checks/h: completed checks an hour (errors fail the benchmark);
//   - runner-cpu-ms/check: this process's CPU per check, the daemon's
//     side's; runner-core-%: the share of a core it took at this rate;
//   - kubelet-cpu-ms/check: the played kubelet's and its pods' process's;
//   - apiserver-cpu-ms/check, etcd-cpu-ms/check,
//     controller-manager-cpu-ms/check: the control plane's;
//   - apiserver-req/check: requests the apiserver served per check, from
//     its apiserver_request_total (every client: runner, controllers,
//     played kubelet); runner-req/check: the runner's own, through its
//     rate limiter (which bounds checks/h at QPS*3600 over it);
//   - throttle-ms/check: time the runner's client waited on its rate
//     limiter;
//   - peak-jobs, peak-pods, peak-secrets and their last-minute means:
//     objects kept (bounded by the TTL and clean-up, not growing).
//
// Run it with `make bench-kube` (or go test -run '^$' -bench
// KubeThroughput -benchtime 1x ./internal/runner/kube/).
func BenchmarkKubeThroughput(b *testing.B) {
	dur := benchEnvDuration(b, "DRIFTWATCH_BENCH_DURATION", 10*time.Minute)
	ttl := benchEnvDuration(b, "DRIFTWATCH_BENCH_TTL", time.Minute)
	conc := benchEnvInt(b, "DRIFTWATCH_BENCH_CONCURRENCY", 16)
	qps := benchEnvInt(b, "DRIFTWATCH_BENCH_QPS", 50)
	burst := benchEnvInt(b, "DRIFTWATCH_BENCH_BURST", 100)

	c := kubetest.Start(b)
	admin, err := c.Clientset()
	require.NoError(b, err)
	const ns = "bench"
	require.NoError(b, c.CreateNamespace(b.Context(), ns, nil))
	played := startKubeletProcess(b, c.Kubeconfig, ns)

	// The runner's own client, limited like the daemon's, its waits timed.
	rc := c.RESTConfig()
	lim := &timedLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst)}
	rc.RateLimiter = lim
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(b, err)
	d := newDaemonWith(quietTB{b}, cs, ns, func(cfg *Config) { cfg.TTLAfterFinished = ttl })

	samples := &objectSamples{}
	ctx, cancel := context.WithCancel(b.Context())
	var sampler sync.WaitGroup
	sampler.Go(func() { samples.run(ctx, admin, ns) })

	reqs0, runnerReqs0 := apiserverRequests(b, admin), lim.calls.Load()
	cpu0, kubelet0, api0, etcd0, kcm0 := selfCPU(), played.cpu(b), childCPU("kube-apiserver"), childCPU("etcd"), childCPU(controllerManager)
	var done, failed atomic.Int64
	var next atomic.Int64
	start := time.Now()
	end := start.Add(dur)
	b.ResetTimer()
	var workers sync.WaitGroup
	for range conc {
		workers.Go(func() {
			// A check started before the end runs to its end.
			for time.Now().Before(end) {
				n := next.Add(1)
				req := request(benchWorkspace(n), drift.NewRunID())
				if _, err := d.runner.Run(ctx, req); err != nil {
					failed.Add(1)
					b.Logf("check %d: %v", n, err)
					continue
				}
				done.Add(1)
			}
		})
	}
	workers.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu, kubeletCPU, runnerReqs := selfCPU()-cpu0, played.cpu(b)-kubelet0, lim.calls.Load()-runnerReqs0
	apiCPU, etcdCPU, kcmCPU := childCPU("kube-apiserver")-api0, childCPU("etcd")-etcd0, childCPU(controllerManager)-kcm0
	cancel()
	sampler.Wait()
	played.stop(b)
	checks := float64(done.Load())
	require.Zero(b, failed.Load(), "failed checks")
	require.Positive(b, checks)
	perCheck := func(d time.Duration) float64 { return float64(d.Milliseconds()) / checks }
	b.ReportMetric(checks/elapsed.Hours(), "checks/h")
	b.ReportMetric(perCheck(cpu), "runner-cpu-ms/check")
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "runner-core-%")
	b.ReportMetric(perCheck(kubeletCPU), "kubelet-cpu-ms/check")
	b.ReportMetric(perCheck(apiCPU), "apiserver-cpu-ms/check")
	b.ReportMetric(perCheck(etcdCPU), "etcd-cpu-ms/check")
	b.ReportMetric(perCheck(kcmCPU), "controller-manager-cpu-ms/check")
	b.ReportMetric((apiserverRequests(b, admin)-reqs0)/checks, "apiserver-req/check")
	b.ReportMetric(float64(runnerReqs)/checks, "runner-req/check")
	b.ReportMetric(perCheck(lim.waited()), "throttle-ms/check")
	peak, last := samples.result()
	for i, kind := range []string{"jobs", "pods", "secrets"} {
		b.ReportMetric(float64(peak[i]), "peak-"+kind)
		b.ReportMetric(last[i], "lastmin-"+kind)
	}
}

// quietTB drops the logs of the runner and the played pods: thousands of
// checks would keep every line in memory.
type quietTB struct{ testing.TB }

func (quietTB) Log(...any)          {}
func (quietTB) Logf(string, ...any) {}

// timedLimiter is a client rate limiter that counts its callers (one a
// request) and sums the time they waited.
type timedLimiter struct {
	flowcontrol.RateLimiter
	nanos, calls atomic.Int64
}

func (l *timedLimiter) Wait(ctx context.Context) error {
	t := time.Now()
	err := l.RateLimiter.Wait(ctx)
	l.nanos.Add(int64(time.Since(t)))
	l.calls.Add(1)
	return err
}

func (l *timedLimiter) waited() time.Duration { return time.Duration(l.nanos.Load()) }

// objectSamples counts the namespace's Jobs, Pods and Secrets every 5 s.
type objectSamples struct {
	mu     sync.Mutex
	counts [][3]int
	at     []time.Time
}

func (s *objectSamples) run(ctx context.Context, cs kubernetes.Interface, ns string) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n := [3]int{
				count(cs.BatchV1().Jobs(ns).List(ctx, onlyCount)),
				count(cs.CoreV1().Pods(ns).List(ctx, onlyCount)),
				count(cs.CoreV1().Secrets(ns).List(ctx, onlyCount)),
			}
			s.mu.Lock()
			s.counts, s.at = append(s.counts, n), append(s.at, now)
			s.mu.Unlock()
		}
	}
}

// onlyCount lists one object and the count of the others, so that counting
// costs this process (the runner's) next to nothing.
var onlyCount = metav1.ListOptions{Limit: 1}

// count is how many objects a list with onlyCount found (zero on an error).
func count(l interface {
	runtime.Object
	metav1.ListInterface
}, err error) int {
	if err != nil {
		return 0
	}
	n := meta.LenList(l)
	if rest := l.GetRemainingItemCount(); rest != nil {
		n += int(*rest)
	}
	return n
}

// result is the peak of each count and its mean over the last minute.
func (s *objectSamples) result() (peak [3]int, last [3]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int
	for i, c := range s.counts {
		for k := range c {
			peak[k] = max(peak[k], c[k])
		}
		if s.at[i].After(s.at[len(s.at)-1].Add(-time.Minute)) {
			for k := range c {
				last[k] += float64(c[k])
			}
			n++
		}
	}
	for k := range last {
		if n > 0 {
			last[k] /= float64(n)
		}
	}
	return peak, last
}

// apiserverRequests is the sum of the apiserver's apiserver_request_total.
func apiserverRequests(b *testing.B, cs kubernetes.Interface) float64 {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	require.NoError(b, err)
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(b, err)
		sum += v
	}
	return sum
}

// selfCPU is this process's CPU time (user and system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// controllerManager is kube-controller-manager's name in /proc (at most 15
// bytes).
const controllerManager = "kube-controller"

// childCPU is the CPU time of this process's running children named comm
// (the control plane's processes, which kubetest starts).
func childCPU(comm string) time.Duration {
	var total time.Duration
	entries, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		name, ppid, cpu, ok := procStat(e.Name())
		if ok && name == comm && ppid == me {
			total += cpu
		}
	}
	return total
}

// procStat is process pid's name, parent and CPU time (user and system, of
// all its threads), from /proc; ok is false if it is gone.
func procStat(pid string) (comm, ppid string, cpu time.Duration, ok bool) {
	const tick = 100.0 // USER_HZ
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return "", "", 0, false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", "", 0, false
	}
	f := strings.Fields(s[closing+2:])
	// After the name: state ppid ... utime (14th field of stat) stime.
	if len(f) < 13 {
		return "", "", 0, false
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return s[open+1 : closing], f[1], time.Duration((u + st) / tick * float64(time.Second)), true
}

func benchEnvDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(b, err, name)
	return d
}

func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, name)
	return n
}
