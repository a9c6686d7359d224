package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox/netcfg"
)

// The jail: every Terraform process of a local run (init, plan, show,
// apply, and so the providers and programs they start) runs inside
// bubblewrap with its own user, mount, PID, IPC and UTS namespaces. What it
// can see is only:
//
//   - the run directory (read-write): the copied source, HOME, TMPDIR, the
//     plan file and the generated var file;
//   - the Terraform binary, the CLI config file and the directories it
//     names (filesystem mirrors, plugin cache), var files given by absolute
//     path, and the shared plugin cache (read-only; read-write only for a
//     cold init, which runs no workspace code and holds the cache lock);
//   - /usr (system programs and libraries: git for module sources, sh for
//     provisioners), the /etc files name resolution and TLS need, a fresh
//     /proc of its own PID namespace, a minimal /dev and an empty /tmp.
//
// Not visible: the daemon's files (config, API token, store), other runs'
// directories, other workspaces' secret files, the daemon's processes and
// their /proc entries. The network is shared: providers must reach their
// APIs. Inside, the process runs as uid 65534 with no capabilities.
//
// The steps tfsession runs itself (init, plan, show, version) start
// bubblewrap directly (Command), forwarding a cancel's SIGINT to Terraform
// by the PID bubblewrap reports. tfexec (apply, workspace select) runs a
// binary by path, so for it the jail is a path too: a
// symlink named JailExecName to /proc/self/exe in a directory of its own,
// beside the run directory and outside the jail, holding spec.json. The
// daemon's binary (or a test binary) started under that name runs
// jailMain (see init below): it starts bubblewrap with the spec, the
// command's arguments and its environment, forwards SIGINT and SIGTERM to
// Terraform (bubblewrap itself dies of them without passing them on), and
// exits with Terraform's status.

// JailExecName is the name the daemon's binary is started under to act as
// the jail's launcher.
const JailExecName = "driftwatch-sandbox-exec"

func init() {
	switch filepath.Base(os.Args[0]) {
	case JailExecName:
		os.Exit(jailMain(os.Args[1:]))
	case InitName:
		os.Exit(initMain(os.Args[1:]))
	}
}

// Isolation is what the local runner's sandbox is on this machine.
type Isolation struct {
	// Mode is "namespaces" (bubblewrap jail) or "none" (own process group,
	// scrubbed environment and run directory only).
	Mode string `json:"mode"`
	// Reason says why there is no jail; empty with namespaces.
	Reason string `json:"reason,omitempty"`
	// Bwrap is the bubblewrap binary used (namespaces only).
	Bwrap string `json:"-"`
	// Network is the jail's network: "isolated" (a namespace of each
	// run's own, outbound access only: NetSpec) or "host" (the host's
	// network; without a jail, always).
	Network string `json:"network"`
	// NetworkReason says why the network is the host's; empty when
	// isolated.
	NetworkReason string `json:"network_reason,omitempty"`
	// Pasta is the pasta binary used (isolated network only).
	Pasta string `json:"-"`
}

// Isolation settings (config terraform.sandbox).
const (
	IsolationAuto       = "auto"       // namespaces where the machine allows, else none with a warning
	IsolationNamespaces = "namespaces" // namespaces or refuse to start
	IsolationOff        = "off"        // never
)

var (
	probeOnce    sync.Once
	probed       Isolation
	netProbeOnce sync.Once
	netProbed    Isolation
)

// DetectIsolation resolves the terraform.sandbox and
// terraform.sandbox_network settings on this machine. With namespaces
// (isolated), an unavailable jail (network) is an error; with auto it is
// a Mode "none" (Network "host") whose Reason (NetworkReason) the caller
// must show (start-up log, status).
func DetectIsolation(setting, network string) (Isolation, error) {
	switch network {
	case "", NetworkAuto, NetworkIsolated, NetworkHost:
	default:
		return Isolation{}, fmt.Errorf("terraform.sandbox_network %q: want auto, isolated or host", network)
	}
	var iso Isolation
	switch setting {
	case IsolationOff:
		iso = Isolation{Mode: "none", Reason: "terraform.sandbox is off"}
	case "", IsolationAuto, IsolationNamespaces:
		probeOnce.Do(func() { probed = probe() })
		iso = probed
		if iso.Mode != "namespaces" && setting == IsolationNamespaces {
			return iso, fmt.Errorf("terraform.sandbox is namespaces, but %s", iso.Reason)
		}
	default:
		return Isolation{}, fmt.Errorf("terraform.sandbox %q: want auto, namespaces or off", setting)
	}
	iso.Network, iso.NetworkReason = "host", ""
	switch {
	case network == NetworkHost:
		iso.NetworkReason = "terraform.sandbox_network is host"
	case iso.Mode != "namespaces":
		iso.NetworkReason = "runs are not jailed: " + iso.Reason
	default:
		netProbeOnce.Do(func() { netProbed = probeNet(iso.Bwrap) })
		iso.Pasta, iso.NetworkReason = netProbed.Pasta, netProbed.NetworkReason
		if iso.Pasta != "" {
			iso.Network = "isolated"
		}
	}
	if iso.Network != "isolated" && network == NetworkIsolated {
		return iso, fmt.Errorf("terraform.sandbox_network is isolated, but %s", iso.NetworkReason)
	}
	return iso, nil
}

// findProgram finds a system program on PATH, else in /usr/bin or /bin
// (a daemon started with a minimal PATH).
func findProgram(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/bin", "/bin"} {
		if _, e := os.Stat(filepath.Join(dir, name)); e == nil {
			return filepath.Join(dir, name), nil
		}
	}
	return "", err
}

// probe checks that bubblewrap is installed and can create the jail's
// namespaces here (a container's seccomp profile or a sysctl may forbid
// user namespaces).
func probe() Isolation {
	bwrap, err := findProgram("bwrap")
	if err != nil {
		return Isolation{Mode: "none", Reason: "bubblewrap (bwrap) is not installed: install the bubblewrap package to isolate workspaces from each other and from the daemon"}
	}
	if err := probeJail(bwrap, nil); err != nil {
		return Isolation{Mode: "none", Reason: fmt.Sprintf("bubblewrap cannot create namespaces here (%s)", err)}
	}
	return Isolation{Mode: "namespaces", Bwrap: bwrap}
}

// Jail is one run's jail (or, without isolation, a pass-through).
type Jail struct {
	exe  string // what to execute: the launcher symlink, or the real binary
	dir  string // the launcher's directory ("" without isolation)
	spec jailSpec
	// cache is the plugin cache dir, bound read-only unless cacheRW.
	cache   string
	cacheRW bool
}

type jailSpec struct {
	Bwrap string   `json:"bwrap"`
	Args  []string `json:"args"`
	Bin   string   `json:"bin"`
	// Net, if set, gives every jailed process a network namespace of its
	// own (net.go); nil: the host's network.
	Net *NetSpec `json:"net,omitempty"`
}

// NewJail prepares the jail for a run in runDir of the Terraform binary
// bin. Without req.Jail it returns a pass-through whose Exe is bin. Close
// it when the run ends.
func NewJail(req terraform.Request, runDir, bin string) (*Jail, error) {
	if req.Jail == "" {
		return &Jail{exe: bin}, nil
	}
	resolved, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, fmt.Errorf("jail: terraform binary: %w", err)
	}
	dir, err := os.MkdirTemp(filepath.Dir(runDir), filepath.Base(runDir)+"j")
	if err != nil {
		return nil, fmt.Errorf("jail: %w", err)
	}
	j := &Jail{exe: filepath.Join(dir, JailExecName), dir: dir, cache: req.PluginCacheDir}
	if err := os.Symlink("/proc/self/exe", j.exe); err != nil {
		j.Close()
		return nil, fmt.Errorf("jail: %w", err)
	}
	j.spec = jailSpec{Bwrap: req.Jail, Bin: bin, Args: jailArgs(req, runDir, bin, resolved)}
	if req.JailNet != "" {
		j.spec.Net = &NetSpec{Pasta: req.JailNet}
		for _, hp := range req.JailHostPorts {
			p, err := netcfg.ParseHostPort(hp)
			if err != nil {
				j.Close()
				return nil, fmt.Errorf("jail: sandbox_host_ports: %w", err)
			}
			j.spec.Net.HostPorts = append(j.spec.Net.HostPorts, p)
		}
	}
	if err := j.write(false); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// Exe is the path to run Terraform by: through tfexec or Command.
func (j *Jail) Exe() string { return j.exe }

// Active reports whether runs go through the jail.
func (j *Jail) Active() bool { return j.dir != "" }

// CacheWritable makes the shared plugin cache writable (true) or
// read-only (false) for the commands started from now on: only a cold
// init, under the cache's lock, may write it.
func (j *Jail) CacheWritable(w bool) error {
	if !j.Active() || j.cache == "" {
		return nil
	}
	return j.write(w)
}

// args are bubblewrap's options for the jail, the plugin cache's binding
// as CacheWritable last set it.
func (j *Jail) args() []string {
	if j.cache == "" {
		return j.spec.Args
	}
	mode := "--ro-bind-try"
	if j.cacheRW {
		mode = "--bind-try"
	}
	return append(append([]string(nil), j.spec.Args...), mode, j.cache, j.cache)
}

// bwrapArgv is bubblewrap's command line to run bin with args in dir
// inside a jail of options jailArgs, writing the PID of its child (as the
// caller's PID namespace numbers it) as JSON to file descriptor 3.
func bwrapArgv(jailArgs []string, dir, bin string, args []string) []string {
	bw := make([]string, 0, len(jailArgs)+len(args)+6)
	bw = append(bw, "--info-fd", "3")
	bw = append(bw, jailArgs...)
	bw = append(bw, "--chdir", dir, "--", bin)
	return append(bw, args...)
}

// write updates the launcher's spec.json (for what runs Terraform by
// path: terraform-exec).
func (j *Jail) write(cacheWritable bool) error {
	j.cacheRW = cacheWritable
	spec := j.spec
	spec.Args = j.args()
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	tmp := filepath.Join(j.dir, "spec.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("jail: %w", err)
	}
	return os.Rename(tmp, filepath.Join(j.dir, "spec.json"))
}

// Close removes the launcher's directory.
func (j *Jail) Close() {
	if j.dir != "" {
		os.RemoveAll(j.dir)
	}
}

// etcFiles are what name resolution, TLS and git need of /etc; nothing
// else of it (it can hold credentials) is visible.
var etcFiles = []string{
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/passwd", "/etc/group", "/etc/localtime",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/alternatives",
}

// cliConfigPaths finds the directories a CLI config file points Terraform
// at (filesystem_mirror path, plugin_cache_dir).
var cliConfigPaths = regexp.MustCompile(`(?m)^\s*(?:path|plugin_cache_dir)\s*=\s*"([^"]+)"`)

func jailArgs(req terraform.Request, runDir, bin, realBin string) []string {
	args := []string{
		"--unshare-user", "--uid", "65534", "--gid", "65534",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--hostname", "driftwatch-run",
		"--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr",
	}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", t, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		args = append(args, "--ro-bind-try", f, f)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	if !under(bin, "/usr") {
		args = append(args, "--ro-bind", realBin, bin)
	}
	cli := req.CLIConfigFile
	if cli == "" {
		cli = os.Getenv("TF_CLI_CONFIG_FILE")
	}
	if cli != "" {
		args = append(args, "--ro-bind-try", cli, cli)
		if b, err := os.ReadFile(cli); err == nil {
			for _, m := range cliConfigPaths.FindAllStringSubmatch(string(b), -1) {
				if filepath.IsAbs(m[1]) {
					args = append(args, "--ro-bind-try", m[1], m[1])
				}
			}
		}
	}
	for _, f := range req.VarFiles {
		if filepath.IsAbs(f) && !under(f, runDir) {
			args = append(args, "--ro-bind-try", f, f)
		}
	}
	for _, p := range req.JailPaths {
		args = append(args, "--bind-try", p, p)
	}
	// Last, so nothing above can shadow it.
	return append(args, "--bind", runDir, runDir)
}

func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// jailMain is the launcher: it runs spec.Bin with args inside bubblewrap
// and returns its exit status.
func jailMain(args []string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "driftwatch sandbox: %v\n", err)
		return 125
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(os.Args[0]), "spec.json"))
	if err != nil {
		return fail(err)
	}
	var spec jailSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fail(err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(spec.Bwrap, bwrapArgv(spec.Args, cwd, spec.Bin, args)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	pid := make(chan int, 1)
	if err := startJailed(cmd, spec.Net, pid); err != nil {
		return fail(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	child := 0
	var pending []os.Signal
	for {
		select {
		case p := <-pid:
			child = p
			for _, s := range pending {
				_ = syscall.Kill(child, s.(syscall.Signal))
			}
			pending = nil
		case s := <-sigs:
			if child > 0 {
				_ = syscall.Kill(child, s.(syscall.Signal))
			} else {
				pending = append(pending, s)
			}
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal())
				}
				return ee.ExitCode()
			}
			if err != nil {
				return fail(err)
			}
			return 0
		}
	}
}

// SetNonDumpable makes this process non-dumpable: processes of the same
// user (Terraform and its providers when runs are not jailed) can then
// neither ptrace it nor read its /proc entries (environ, mem, fds), where
// the daemon's credentials live. Children are dumpable again after exec.
func SetNonDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
