package imagetest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// takeoverLimit bounds the time from the leader's SIGKILL to the standby's
// /readyz 200. Killing the leader's container ends its database session at
// once (its connection is closed with the process); the standby's blocked
// pg_advisory_lock then returns, and it leads after the sweep of what the
// killed leader left. The limit is generous for a machine under load.
const takeoverLimit = 10 * time.Second

// nodeLossLimit bounds the time from the leader's network cut to the
// standby's /readyz 200. Nothing tells the server that a cut leader's
// session is gone: the leader's lock session asks for TCP keepalives (10
// s idle, then 3 probes 5 s apart: the server ends it about 25 s after
// its last packet); the operating system's defaults (2 h idle) would
// keep the lock for hours.
const nodeLossLimit = 45 * time.Second

// apiToken is the replicas' admin token (server.token_file).
const apiToken = "imagetest-replicas-admin-token-0123456789"

// TestImageReplicasFailover runs two replicas of the chart's Deployment on
// a PostgreSQL store as containers of the image, each in a network
// namespace of its own wired by the test (a bridge of the test's on this
// machine, one veth per pod), and kills the leader's container in the
// middle of a run: the standby leads, records the killed run, and checks
// the workspace again. Then a third replica waits as the standby, and the
// new leader loses its network in the middle of a run without dying (a
// node lost): the standby leads within nodeLossLimit, the cut leader
// stops leading, and the cut run is recorded and the workspace checked
// again.
//
// The pods run what `helm template` renders for store.postgres with two
// replicas: the container's args, env, volume mounts (emptyDirs as tmpfs,
// the ConfigMap and the DSN's Secret as read-only directories), the
// security context baseOpts enforces, the probes' paths and port, and the
// ConfigMap's config file, except its runner block: there is no
// Kubernetes API here, so runs are local (the image's own tool) and
// there is no Lease; the database's leadership lock decides who leads
// (docs/kubernetes.md: replicas on a PostgreSQL store). PostgreSQL (a
// pgtest cluster of the test's own) listens on TCP at this machine's
// address on the pods' bridge, where the pods reach it.
//
// It runs for each image, the chart rendered with that image's image.tool
// (for tofu: terraform.binary tofu).
func TestImageReplicasFailover(t *testing.T) {
	eachImage(t, testImageReplicasFailover)
}

func testImageReplicasFailover(t *testing.T, e *env) {
	if os.Getuid() != 0 {
		tftest.Unavailable(t, "wiring the pods' network namespaces needs root")
	}
	for _, tool := range []string{"ip", "nsenter", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			tftest.Unavailable(t, tool+" is not on PATH (iproute2, util-linux, curl)")
		}
	}
	chart := renderChart(t, "replicaCount=2", "store.postgres.existingSecret=driftwatch-db", "image.tool="+e.tool)
	require.Equal(t, 2, chart.replicas)
	pods := newPodNet(t)
	pg := pgtest.StartTCP(t, pods.gateway+"/24")
	dsn := pg.Database(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the database's sessions:\n%s", sessions(dsn))
		}
	})

	// The workspace: a local-only one, applied in the image, then edited
	// behind Terraform's back. Its plan waits 20 s: long enough to kill the
	// leader in the middle of it.
	dir, work := e.workDir(t)
	for _, d := range []string{"slow", "out"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o777))
		require.NoError(t, os.Chmod(filepath.Join(dir, d), 0o777))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slow", "main.tf"), []byte(`
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
variable "wait" {
  type    = string
  default = "20s"
}
data "dwtest_sleep" "slow" { duration = var.wait }
resource "dwtest_file" "a" {
  filename = "`+ctrWork+`/out/a.txt"
  content  = "v1"
}
`), 0o644))
	res := e.sh(t, slices.Concat(work, e.tfOpts(t)), `
$TF -chdir=slow init -input=false -no-color >/dev/null
$TF -chdir=slow apply -auto-approve -input=false -no-color -var wait=0s >/dev/null
chmod 600 slow/terraform.tfstate
echo "hand edit" > out/a.txt
`)
	require.Equal(t, 0, res.code, "applying the workspace in the image:\nstdout: %s\nstderr: %s", res.stdout, res.stderr)

	spec := podSpec(t, e, chart, work, pg.Addr, dsn)
	a := startPod(t, e, pods, spec, "driftwatch-7c9d-a")
	b := startPod(t, e, pods, spec, "driftwatch-7c9d-b")
	live, ready := spec.live, spec.ready

	// One leads (ready), the other is live and not ready.
	var leader, standby *pod
	eventually(t, "one replica ready, the other live and not ready", 3*time.Minute, func() bool {
		ra, rb := a.status(ready), b.status(ready)
		switch {
		case ra == http.StatusOK && rb == http.StatusServiceUnavailable && b.status(live) == http.StatusOK:
			leader, standby = a, b
		case rb == http.StatusOK && ra == http.StatusServiceUnavailable && a.status(live) == http.StatusOK:
			leader, standby = b, a
		}
		return leader != nil
	}, a, b)
	t.Logf("leader %s (%s), standby %s (%s)", leader.name, leader.addr, standby.name, standby.addr)

	// The leader checks the workspace at start; killed in the middle of it.
	var killed string
	eventually(t, "the leader's run of slow in its plan", 3*time.Minute, func() bool {
		runs := leader.runs(t, "slow")
		if len(runs) == 1 && runs[0].Status == "running" {
			killed = runs[0].ID
			return true
		}
		return false
	}, leader, standby)
	require.Equal(t, killed, standby.runs(t, "slow")[0].ID, "the standby reads the same store")
	require.Equal(t, http.StatusServiceUnavailable, standby.status(ready), "still a standby")

	start := time.Now()
	e.dockerCmd(t, "kill", leader.id)
	eventually(t, "the standby leads", time.Minute, func() bool {
		return standby.status(ready) == http.StatusOK
	}, standby)
	took := time.Since(start)
	t.Logf("leader's container killed to standby ready: %s", took.Round(time.Millisecond))
	require.Less(t, took, takeoverLimit, "takeover")
	require.Equal(t, "false 137", e.dockerCmd(t, "inspect", "--format", "{{.State.Running}} {{.State.ExitCode}}", leader.id),
		"the leader's container was killed (SIGKILL)")

	eventually(t, "the workspace checked again by the new leader", 3*time.Minute, func() bool {
		return standby.workspaceStatus(t, "slow") == string(drift.StatusDrift)
	}, standby)
	runs := standby.runs(t, "slow")
	require.Len(t, runs, 2, "the killed run and the new leader's: %+v", runs)
	for _, r := range runs {
		if r.ID == killed {
			require.Equal(t, "errored", r.Status, "the killed run is recorded, not left running")
			require.Equal(t, store.RunRestartedError, r.Error)
		} else {
			require.NotContains(t, []string{"running", "queued", "errored"}, r.Status, "the new leader's run: %+v", r)
		}
	}

	nodeLoss(t, standby, startPod(t, e, pods, spec, "driftwatch-7c9d-c"), spec)
}

// nodeLoss: leader leads, standby has just started. A run of the
// leader's is cut in the middle with its network: the host's end of its
// veth goes down, so its packets vanish (the process is not killed; no
// FIN, no RST reaches the server, not even when it exits). The standby leads within nodeLossLimit,
// the cut leader stops leading first (its /readyz, read inside its
// network namespace, is not 200, or it has exited: losing the lock ends
// the process), and the new leader records the cut run and checks the
// workspace again.
func nodeLoss(t *testing.T, leader, standby *pod, spec replicaSpec) {
	t.Helper()
	live, ready := spec.live, spec.ready
	eventually(t, "the third replica live and not ready", 3*time.Minute, func() bool {
		return standby.status(live) == http.StatusOK && standby.status(ready) == http.StatusServiceUnavailable
	}, leader, standby)
	before := len(leader.runs(t, "slow"))
	leader.trigger(t, "slow")
	var cut string
	eventually(t, "the leader's triggered run of slow in its plan", 3*time.Minute, func() bool {
		runs := leader.runs(t, "slow")
		if len(runs) == before+1 && runs[0].Status == "running" {
			cut = runs[0].ID
			return true
		}
		return false
	}, leader, standby)

	start := time.Now()
	ipCmd(t, "link", "set", leader.link, "down")
	var stopped time.Duration
	eventually(t, "the standby leads after the leader's network is cut", time.Minute, func() bool {
		if stopped == 0 && leader.statusInside(t, ready) != http.StatusOK {
			stopped = time.Since(start)
		}
		return standby.status(ready) == http.StatusOK
	}, standby, leader)
	took := time.Since(start)
	t.Logf("leader's network cut to standby ready: %s; the cut leader stopped leading after %s", took.Round(time.Millisecond), stopped.Round(time.Millisecond))
	require.Less(t, took, nodeLossLimit, "takeover after a node loss")
	require.NotZero(t, stopped, "the cut leader still says it leads when the standby does")
	// Its lock's check failed (ErrLeadershipLost), which ends the process:
	// the container exits 1 (a Deployment would restart it, a standby).
	require.Equal(t, "false 1", leader.e.dockerCmd(t, "inspect", "--format", "{{.State.Running}} {{.State.ExitCode}}", leader.id),
		"the cut leader's process ended")
	require.Contains(t, leader.logs(), "leadership lock lost")

	eventually(t, "the workspace checked again by the new leader", 3*time.Minute, func() bool {
		runs := standby.runs(t, "slow")
		return len(runs) == before+2 && runs[0].ID != cut && !slices.Contains([]string{"running", "queued"}, runs[0].Status)
	}, standby)
	for _, r := range standby.runs(t, "slow")[:2] {
		if r.ID == cut {
			require.Equal(t, "errored", r.Status, "the cut run is recorded, not left running")
			require.Equal(t, store.RunRestartedError, r.Error)
		} else {
			require.NotEqual(t, "errored", r.Status, "the new leader's run: %+v\n%s", r, standby.logs())
		}
	}
}

// sessions lists the database's sessions (pg_stat_activity) and the
// locks they wait for or hold, for a failure's message.
func sessions(dsn string) string {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	rows, err := db.Query(`SELECT a.pid, coalesce(host(a.client_addr), 'socket'), coalesce(a.state, ''),
		coalesce(a.wait_event_type || ':' || a.wait_event, ''), now() - a.state_change,
		coalesce((SELECT string_agg(l.locktype || ' ' || l.mode || CASE WHEN l.granted THEN '' ELSE ' (waits)' END, ', ')
			FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory'), ''), left(a.query, 80)
		FROM pg_stat_activity a WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() ORDER BY a.backend_start`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var pid int
		var client, state, wait, since, locks, query string
		if err := rows.Scan(&pid, &client, &state, &wait, &since, &locks, &query); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "%d %s %s %s since %s; advisory: %s; %s\n", pid, client, state, wait, since, locks, query)
	}
	return b.String()
}

// replicaSpec is how every replica runs: docker run options and the
// container's args from the chart, and what differs per pod.
type replicaSpec struct {
	opts        []string // docker run options beyond baseOpts
	entrypoint  string   // the image's
	args        []string // the container's args
	podNameEnv  []string // env vars set to the pod's name (fieldRef metadata.name)
	port        string   // the container port "http", the probes'
	live, ready string   // the liveness and readiness probes' paths
}

// podSpec turns the rendered chart into docker run options: work (the
// inventory's volume) and the provider mirror added, the DSN Secret
// naming PostgreSQL at pgAddr and pgtest's database of dsn, the
// ConfigMap's config with the workspace and without the runner block.
func podSpec(t *testing.T, e *env, chart chartPod, work []string, pgAddr, dsn string) replicaSpec {
	t.Helper()
	c := chart.container
	// What baseOpts does: --read-only, --cap-drop ALL, no-new-privileges.
	require.True(t, c.Security.ReadOnlyRootFilesystem)
	require.False(t, c.Security.AllowPrivilegeEscalation)
	require.Equal(t, []string{"ALL"}, c.Security.Capabilities.Drop)
	spec := replicaSpec{
		entrypoint: e.dockerCmd(t, "image", "inspect", "--format", "{{index .Config.Entrypoint 0}}", e.image),
		args:       c.Args, live: c.LivenessProbe.HTTPGet.Path, ready: c.ReadinessProbe.HTTPGet.Path}
	require.Equal(t, "http", c.LivenessProbe.HTTPGet.Port)
	require.Equal(t, "http", c.ReadinessProbe.HTTPGet.Port)
	for _, p := range c.Ports {
		if p.Name == "http" {
			spec.port = strconv.Itoa(p.ContainerPort)
		}
	}
	require.NotEmpty(t, spec.port, "no container port http")
	cfgFile := ""
	for i, a := range c.Args {
		if a == "--config" && i+1 < len(c.Args) {
			cfgFile = c.Args[i+1]
		}
	}
	require.NotEmpty(t, cfgFile, "no --config in the container's args %v", c.Args)

	cfg := chart.config
	st, _ := cfg["store"].(map[string]any)
	require.Equal(t, "postgres", st["driver"], "store: %v", st)
	dsnFile, _ := st["dsn_file"].(string)
	require.NotEmpty(t, dsnFile)
	// No Kubernetes API: local runs, no Lease (see the test's comment).
	delete(cfg, "runner")
	tf, _ := cfg["terraform"].(map[string]any)
	require.NotNil(t, tf, "config: %v", cfg)
	// The chart names the binary for tofu only; for terraform the daemon's
	// default (terraform, else tofu, from PATH) finds it.
	if e.tool == "tofu" {
		require.Equal(t, "tofu", tf["binary"], "the chart's terraform block: %v", tf)
	} else {
		require.NotContains(t, tf, "binary", "the chart's terraform block")
	}
	tf["sandbox_paths"] = []string{ctrWork + "/out"}
	cfg["defaults"] = map[string]any{"schedule": "@hourly", "labels": map[string]string{"env": "dev"}}
	cfg["workspaces"] = []any{map[string]any{"name": "slow", "source": map[string]string{"path": ctrWork + "/slow"}}}
	// An admin token, beside the config: the test triggers a run.
	srv, _ := cfg["server"].(map[string]any)
	if srv == nil {
		srv = map[string]any{}
		cfg["server"] = srv
	}
	srv["token_file"] = "api-token"
	raw, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	// The ConfigMap, with the Terraform CLI config naming the mirror as
	// one more key.
	cfgDir := t.TempDir()
	require.NoError(t, os.Chmod(cfgDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, filepath.Base(cfgFile)), raw, 0o644))
	writeTerraformRC(t, filepath.Join(cfgDir, "terraformrc"))
	tokenFile := filepath.Join(cfgDir, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(apiToken), 0o400))
	owner, err := strconv.Atoi(uid)
	require.NoError(t, err)
	require.NoError(t, os.Chown(tokenFile, owner, owner))
	// The Secret: mode 0440, group fsGroup (the image's gid).
	dbname := ""
	for _, kv := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(kv, "dbname="); ok {
			dbname = v
		}
	}
	require.NotEmpty(t, dbname, "no dbname in pgtest's DSN")
	secretDir := t.TempDir()
	require.NoError(t, os.Chmod(secretDir, 0o755))
	secretFile := filepath.Join(secretDir, filepath.Base(dsnFile))
	require.NoError(t, os.WriteFile(secretFile, []byte("postgres://postgres@"+pgAddr+"/"+dbname+"?sslmode=disable\n"), 0o440))
	require.NoError(t, os.Chown(secretFile, 0, owner))

	spec.opts = slices.Clone(work)
	for _, m := range c.VolumeMounts {
		v := chart.volumes[m.Name]
		switch {
		case v.ConfigMap != nil:
			require.Equal(t, filepath.Dir(cfgFile), m.MountPath)
			spec.opts = append(spec.opts, "-v", cfgDir+":"+m.MountPath+":ro")
			spec.opts = append(spec.opts, e.mirrorOpts(m.MountPath+"/terraformrc")...)
		case v.Secret != nil:
			require.Equal(t, filepath.Dir(dsnFile), m.MountPath, "the one Secret is the DSN's")
			spec.opts = append(spec.opts, "-v", secretDir+":"+m.MountPath+":ro")
		case v.EmptyDir != nil && m.MountPath == "/tmp": // baseOpts mounts it
		case v.EmptyDir != nil:
			spec.opts = append(spec.opts, "--tmpfs", m.MountPath+":rw,exec,mode=1777")
		default:
			t.Fatalf("volume %s (%+v) of the chart's pod: not one the test can provide", m.Name, v)
		}
	}
	for _, v := range c.Env {
		switch v.ValueFrom.FieldRef.FieldPath {
		case "":
			spec.opts = append(spec.opts, "-e", v.Name+"="+v.Value)
		case "metadata.name":
			spec.podNameEnv = append(spec.podNameEnv, v.Name)
		case "metadata.namespace":
			spec.opts = append(spec.opts, "-e", v.Name+"=driftwatch")
		default:
			t.Fatalf("env %s from %s: not one the test can provide", v.Name, v.ValueFrom.FieldRef.FieldPath)
		}
	}
	return spec
}

// podNet is the test's pod network: a bridge on this machine whose
// address (gateway) the pods reach the database at, and one veth per pod
// whose other end is the pod's eth0.
type podNet struct {
	bridge  string
	prefix  string // the /24's first three octets and a dot
	gateway string
	pods    int
}

func newPodNet(t *testing.T) *podNet {
	t.Helper()
	n := &podNet{bridge: fmt.Sprintf("dwbr%d", os.Getpid()), prefix: fmt.Sprintf("10.214.%d.", os.Getpid()%250+1)}
	n.gateway = n.prefix + "1"
	ipCmd(t, "link", "add", n.bridge, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", n.bridge).Run() })
	ipCmd(t, "addr", "add", n.gateway+"/24", "dev", n.bridge)
	ipCmd(t, "link", "set", n.bridge, "up")
	return n
}

// attach gives the network namespace of process pid (a container's, which
// docker made with --network none) an eth0 on the bridge, and returns its
// address and the host's end of its veth.
func (n *podNet) attach(t *testing.T, pid int) (addr, host string) {
	t.Helper()
	n.pods++
	addr = fmt.Sprintf("%s%d", n.prefix, n.pods+1)
	host = fmt.Sprintf("%sp%d", n.bridge, n.pods)
	peer := host + "c"
	ipCmd(t, "link", "add", host, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", host).Run() })
	ipCmd(t, "link", "set", host, "master", n.bridge)
	ipCmd(t, "link", "set", host, "up")
	ipCmd(t, "link", "set", peer, "netns", strconv.Itoa(pid))
	in := []string{"nsenter", "--net=/proc/" + strconv.Itoa(pid) + "/ns/net", "ip"}
	ipCmd(t, append(in, "link", "set", peer, "name", "eth0")...)
	ipCmd(t, append(in, "addr", "add", addr+"/24", "dev", "eth0")...)
	ipCmd(t, append(in, "link", "set", "eth0", "up")...)
	return addr, host
}

// ipCmd runs ip with args, or the command args[1:] when args[0] is nsenter.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	name := "ip"
	if args[0] == "nsenter" {
		name, args = args[0], args[1:]
	}
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// pod is one replica: a container of the image started as the chart's
// Deployment starts it.
type pod struct {
	e          *env
	name, id   string
	pid        int    // the container's first process, in the pod's network namespace
	link       string // the host's end of the pod's veth
	addr, base string
	port       string
	client     *http.Client
}

// startPod runs a replica named name (its hostname and the value of
// spec.podNameEnv). The pod's network is wired once the container runs;
// the container waits for its eth0 before driftwatch starts (in a cluster
// the network exists before the containers start), then execs it as PID
// 1 with the chart's args (the image's entrypoint, not overridden by the
// chart).
func startPod(t *testing.T, e *env, n *podNet, spec replicaSpec, name string) *pod {
	t.Helper()
	p := &pod{e: e, name: name, port: spec.port, client: &http.Client{Timeout: 2 * time.Second}}
	opts := append(slices.Clone(spec.opts), "--hostname", name)
	for _, v := range spec.podNameEnv {
		opts = append(opts, "-e", v+"="+name)
	}
	p.id = e.dockerCmd(t, e.dockerArgs(run{opts: opts, entrypoint: "/bin/sh", args: append([]string{"-ec", `
i=0
until [ "$(cat /sys/class/net/eth0/operstate 2>/dev/null)" = up ]; do
  i=$((i + 1)); [ $i -lt 1200 ] || { echo "no eth0 after 120s" >&2; exit 1; }
  sleep 0.1
done
exec "$@"`, "sh", spec.entrypoint}, spec.args...)}, true)...)
	t.Cleanup(func() { _ = exec.Command(e.docker, "rm", "-f", p.id).Run() })
	var err error
	p.pid, err = strconv.Atoi(e.dockerCmd(t, "inspect", "--format", "{{.State.Pid}}", p.id))
	require.NoError(t, err)
	require.NotZero(t, p.pid, "container %s is not running: %s", name, p.logs())
	p.addr, p.link = n.attach(t, p.pid)
	p.base = "http://" + net.JoinHostPort(p.addr, spec.port)
	return p
}

// logs is the last 40 lines the pod logged, its HTTP requests (the
// test's polls) left out.
func (p *pod) logs() string {
	out, _ := exec.Command(p.e.docker, "logs", p.id).CombinedOutput()
	lines := slices.DeleteFunc(strings.Split(strings.TrimSpace(string(out)), "\n"), func(l string) bool {
		return strings.Contains(l, `"msg":"http request"`)
	})
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// status is the HTTP status of GET path, 0 when the pod does not answer.
func (p *pod) status(path string) int {
	resp, err := p.client.Get(p.base + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// statusInside is the HTTP status of GET path on the pod's loopback, from
// inside its network namespace (curl under nsenter): it answers while the
// pod's network is cut. 0 when the pod does not answer or has exited.
func (p *pod) statusInside(t *testing.T, path string) int {
	t.Helper()
	if p.e.dockerCmd(t, "inspect", "--format", "{{.State.Running}}", p.id) != "true" {
		return 0
	}
	out, _ := exec.Command("nsenter", "--net=/proc/"+strconv.Itoa(p.pid)+"/ns/net", "curl", "-s", "-o", "/dev/null",
		"-m", "2", "-w", "%{http_code}", "http://"+net.JoinHostPort("127.0.0.1", p.port)+path).Output()
	code, _ := strconv.Atoi(string(out))
	return code
}

// trigger asks the pod for a run of workspace ws (POST .../runs).
func (p *pod) trigger(t *testing.T, ws string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.base+"/api/v1/workspaces/"+ws+"/runs", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := p.client.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "%s: POST runs of %s: %s", p.name, ws, body)
}

func (p *pod) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := p.client.Get(p.base + path)
	require.NoError(t, err, "%s: GET %s", p.name, path)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: GET %s", p.name, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

type podRun struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

func (p *pod) runs(t *testing.T, ws string) []podRun {
	t.Helper()
	var body struct {
		Runs []podRun `json:"runs"`
	}
	p.getJSON(t, "/api/v1/workspaces/"+ws+"/runs", &body)
	return body.Runs
}

func (p *pod) workspaceStatus(t *testing.T, ws string) string {
	t.Helper()
	var body struct {
		Workspaces []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"workspaces"`
	}
	p.getJSON(t, "/api/v1/workspaces", &body)
	for _, w := range body.Workspaces {
		if w.Name == ws {
			return w.Status
		}
	}
	return ""
}

// eventually polls cond every 50 ms until it holds, or fails with what
// the pods logged.
func eventually(t *testing.T, what string, limit time.Duration, cond func() bool, pods ...*pod) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, p := range pods {
				fmt.Fprintf(&logs, "\n--- %s (%s):\n%s", p.name, p.addr, p.logs())
			}
			t.Fatalf("%s: not within %s%s", what, limit, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
