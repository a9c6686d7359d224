//go:build linux

package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// EnvBinDir names the directory holding etcd, kube-apiserver,
// kube-controller-manager, kubectl and helm (hack/provision-k8s.sh prints it
// as KUBE_BIN_DIR).
const EnvBinDir = "DRIFTWATCH_KUBE_BIN_DIR"

const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1" // the "kubernetes" Service, first address of serviceCIDR
	// saIssuer is the service account token issuer (and audience).
	saIssuer = "https://kubernetes.default.svc.cluster.local"
	// controllers is the least set of kube-controller-manager controllers
	// that makes Jobs behave: Jobs create pods and count their outcomes,
	// finished Jobs expire, deletes cascade to pods, namespaces get their
	// "default" ServiceAccount (the ServiceAccount admission plugin refuses
	// pods without one) and deleted namespaces are emptied.
	controllers = "job-controller,ttl-after-finished-controller,garbage-collector-controller," +
		"serviceaccount-controller,namespace-controller"

	readyTimeout = 90 * time.Second // generous: tests run in parallel on 2 cores
	stopTimeout  = 10 * time.Second // SIGTERM to SIGKILL
	startTries   = 3                // fresh ports each time: a free port can be taken before use
)

// binaries are the files BinDir must hold.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl", "helm"}

// BinDir returns $DRIFTWATCH_KUBE_BIN_DIR after checking it holds every
// binary. Unset, the test is skipped, unless DRIFTWATCH_E2E=1 makes that a
// failure; set but incomplete is always a failure.
func BinDir(t testing.TB) string {
	t.Helper()
	tftest.Short(t, "a Kubernetes control plane")
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		tftest.Unavailable(t, EnvBinDir+" not set: run hack/provision-k8s.sh and export its KUBE_BIN_DIR (make test does)")
	}
	for _, b := range binaries {
		p := filepath.Join(dir, b)
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			t.Fatalf("%s=%s: %s is not an executable file (run hack/provision-k8s.sh): %v", EnvBinDir, dir, b, err)
		}
	}
	return dir
}

// Cluster is a running control plane: etcd, kube-apiserver and
// kube-controller-manager, each on 127.0.0.1 in its own process group,
// stopped when the test that started it ends. There is no kubelet and no
// scheduler: pods stay Pending unless the test plays the kubelet
// (PlayKubelet).
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig with an admin (system:masters)
	// token; it verifies the server's certificate.
	Kubeconfig string
	// Server is the API server's URL, https://127.0.0.1:<port>.
	Server string
	// BinDir holds the binaries (see BinDir), helm among them.
	BinDir string

	token string
	caPEM []byte
	dir   string // private to this cluster: logs, keys, etcd data, kubectl's HOME

	clientOnce sync.Once
	client     kubernetes.Interface
	clientErr  error
}

// Option changes how Start starts the control plane.
type Option func(*options)

type options struct {
	apiserverFlags []string
}

// WithAPIServerFlags adds flags to kube-apiserver's command line (an audit
// policy and log, say), after kubetest's own.
func WithAPIServerFlags(flags ...string) Option {
	return func(o *options) { o.apiserverFlags = append(o.apiserverFlags, flags...) }
}

// Start starts a control plane for t and waits until it serves and the
// controllers run (a few seconds). A failure stops the test with the tail of
// each component's log; the logs are also shown when the test fails later.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	bin := BinDir(t)
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var err error
	for try := 1; try <= startTries; try++ {
		var c *Cluster
		if c, err = start(t, bin, o); err == nil {
			return c
		}
		if !errors.Is(err, errAddrInUse) {
			break
		}
		t.Logf("kubetest: start attempt %d: %v; retrying on fresh ports", try, err)
	}
	t.Fatalf("kubetest: %v", err)
	return nil
}

var errAddrInUse = errors.New("address already in use")

func start(t testing.TB, bin string, o options) (_ *Cluster, err error) {
	began := time.Now()
	c := &Cluster{BinDir: bin, dir: t.TempDir()}
	var procs []*process
	defer func() {
		if err != nil { // stop what this attempt started, newest first
			for i := len(procs) - 1; i >= 0; i-- {
				procs[i].stop()
			}
		}
	}()
	run := func(name string, args ...string) (*process, error) {
		if name == "kube-apiserver" {
			args = append(args, o.apiserverFlags...)
		}
		p, err := startProcess(t, c.dir, name, filepath.Join(bin, name), args)
		if err == nil {
			procs = append(procs, p)
		}
		return p, err
	}

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.Server = "https://127.0.0.1:" + strconv.Itoa(ports[2])

	etcd, err := run("etcd",
		"--name=kubetest",
		"--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL, "--initial-cluster-state=new",
		"--logger=zap", "--log-outputs=stderr", "--log-level=warn",
	)
	if err != nil {
		return nil, err
	}

	// Meanwhile: keys, the token file and the kubeconfig.
	keys, err := newPKI(c.dir)
	if err != nil {
		return nil, err
	}
	c.caPEM = keys.caPEM
	c.token, err = randomHex(16)
	if err != nil {
		return nil, err
	}
	tokens := filepath.Join(c.dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(c.token+`,kubetest-admin,kubetest-admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, c.kubeconfig(), 0o600); err != nil {
		return nil, err
	}
	plain := &http.Client{Timeout: 2 * time.Second}
	if err := waitFor(etcd, func() error { return httpOK(plain, etcdURL+"/health", "") }); err != nil {
		return nil, err
	}

	apiserver, err := run("kube-apiserver",
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--tls-cert-file="+keys.servingCert, "--tls-private-key-file="+keys.servingKey,
		"--cert-dir="+filepath.Join(c.dir, "apiserver-certs"), // unused with --tls-*; keeps writes in our dir
		"--etcd-servers="+etcdURL,
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-account-key-file="+keys.saPublicKey,
		"--service-account-signing-key-file="+keys.saSigningKey,
		"--service-account-issuer="+saIssuer,
		"--service-cluster-ip-range="+serviceCIDR,
		// No kubelet registers, so nothing may reconcile the "kubernetes"
		// endpoints to an address no one serves.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=false",
		// ServiceAccount admission stays on (pods need their ServiceAccount,
		// as in a real cluster); PodSecurity is on by default.
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	)
	if err != nil {
		return nil, err
	}
	tlsClient, err := c.httpClient()
	if err != nil {
		return nil, err
	}
	if err := waitFor(apiserver, func() error { return httpOK(tlsClient, c.Server+"/readyz", c.token) }); err != nil {
		return nil, err
	}

	kcm, err := run("kube-controller-manager",
		"--kubeconfig="+c.Kubeconfig,
		"--leader-elect=false",
		"--controllers="+controllers,
		"--secure-port=0", // no listener at all; readiness is observed through the API
		"--use-service-account-credentials=false",
		"--kube-api-qps=200", "--kube-api-burst=400",
	)
	if err != nil {
		return nil, err
	}
	cs, err := c.Clientset()
	if err != nil {
		return nil, err
	}
	// The service account controller creating "default" in "default" shows
	// the controller manager is up and reconciling.
	if err := waitFor(kcm, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	t.Logf("kubetest: control plane at %s ready in %s (logs in %s until the test ends; shown if it fails)", c.Server, time.Since(began).Round(time.Millisecond), c.dir)
	return c, nil
}

// Connect is the control plane another process started, from its
// Kubeconfig: for a helper process of a test (BenchmarkKubeThroughput plays
// the kubelet in one, apart from the process it measures). It owns and stops
// nothing; only its clients (RESTConfig, Clientset, CreateNamespace) and
// PlayKubelet work, not kubectl or helm.
func Connect(kubeconfig string) (*Cluster, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubetest: connect: %w", err)
	}
	if rc.BearerToken == "" || len(rc.CAData) == 0 {
		return nil, fmt.Errorf("kubetest: connect: %s has no admin token or CA: not a kubetest kubeconfig", kubeconfig)
	}
	return &Cluster{Kubeconfig: kubeconfig, Server: rc.Host, token: rc.BearerToken, caPEM: rc.CAData}, nil
}

// RESTConfig returns a fresh admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            c.Server,
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: bytes.Clone(c.caPEM)},
		QPS:             100,
		Burst:           200,
		Timeout:         30 * time.Second,
	}
}

// Clientset returns a shared admin clientset.
func (c *Cluster) Clientset() (kubernetes.Interface, error) {
	c.clientOnce.Do(func() { c.client, c.clientErr = kubernetes.NewForConfig(c.RESTConfig()) })
	return c.client, c.clientErr
}

// CreateNamespace creates namespace name with labels and waits until its
// "default" ServiceAccount exists, so pods can be created in it at once.
func (c *Cluster) CreateNamespace(ctx context.Context, name string, labels map[string]string) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	for {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s: wait for its default ServiceAccount: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s: wait for its default ServiceAccount: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// KubectlCmd returns kubectl with args, bound to ctx, talking to this cluster
// as admin. Its environment holds only PATH, HOME (private to the cluster)
// and KUBECONFIG.
func (c *Cluster) KubectlCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, "kubectl"), args...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(c.dir, "home"),
		"KUBECONFIG=" + c.Kubeconfig,
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Kubectl runs kubectl with args (at most one minute) and returns its
// stdout; the error carries stderr.
func (c *Cluster) Kubectl(args ...string) (string, error) {
	return c.KubectlInput("", args...)
}

// KubectlInput is Kubectl with stdin (e.g. `apply -f -`).
func (c *Cluster) KubectlInput(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := c.KubectlCmd(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (c *Cluster) kubeconfig() []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: kubetest-admin
  user:
    token: %s
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: kubetest-admin
    namespace: default
current-context: kubetest
`, c.Server, base64.StdEncoding.EncodeToString(c.caPEM), c.token)
}

func (c *Cluster) httpClient() (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.caPEM) {
		return nil, errors.New("bad CA PEM")
	}
	return &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}, nil
}

// process is one component, in its own process group, logging to a file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done
	once    sync.Once
}

// startProcess starts bin in its own process group with a scrubbed
// environment (etcd reads ETCD_* variables, which would shadow our flags)
// and output to dir/name.log. A t.Cleanup stops it and, if the test failed,
// logs the tail of its log.
func startProcess(t testing.TB, dir, name, bin string, args []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	fmt.Fprintf(logFile, "+ %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Pdeathsig: if the test binary dies without running cleanups (a panic,
	// go test's timeout), the component dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("kubetest: last lines of %s:\n%s", p.logPath, p.tail(40))
		}
	})
	return p, nil
}

// stop sends SIGTERM to the process group, by the PID we started, then
// SIGKILL after stopTimeout. It waits for the process and is idempotent.
func (p *process) stop() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(stopTimeout):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-p.done
			}
		}
		// Anything the component forked is in its group; ESRCH if none.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls ready until it succeeds, p exits or readyTimeout passes.
func waitFor(p *process, ready func() error) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		if last = ready(); last == nil {
			return nil
		}
		if p.exited() {
			tail := p.tail(40)
			status := p.waitErr
			if status == nil {
				status = errors.New("exit status 0")
			}
			err := fmt.Errorf("%s exited (%w) before it was ready; last lines of %s:\n%s", p.name, status, p.logPath, tail)
			if strings.Contains(tail, "address already in use") {
				err = fmt.Errorf("%w: %w", errAddrInUse, err)
			}
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %w; last lines of %s:\n%s", p.name, readyTimeout, last, p.logPath, p.tail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// httpOK GETs url (with a bearer token if set) and wants 200.
func httpOK(client *http.Client, url, token string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment
// ago (all held open together, so they differ). Another process can still
// take one before the component binds it; Start then retries.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
