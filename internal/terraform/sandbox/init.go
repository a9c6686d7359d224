package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A jail ends with the daemon. bubblewrap's --die-with-parent alone does
// not promise it: bubblewrap's first process clones the one that becomes
// Terraform, and that one waits for a go from the first (its user
// namespace's maps written) before it asks to die with its parent. A
// daemon killed in between (kill -9, the OOM killer) takes the first
// process with it, and the second waits for the go for ever, a stuck
// process per run, its mounts held.
//
// So bubblewrap is started as the first process of a PID namespace of its
// own: when the first process of a PID namespace ends, the kernel kills
// every process in it, and in the namespaces below it. The daemon starts
// its own binary as InitName in new user and PID namespaces (and a
// network namespace, with NetSpec), blocked on a pipe. That process asks
// for SIGKILL when its parent dies and says so on a second pipe; only then
// does the daemon set up the network (net.go) and send the go, so a daemon
// that dies at any point before never lets bubblewrap start, and one that
// dies after kills it. InitName then executes bubblewrap in place, which
// keeps the parent-death signal (and sets it again itself).
//
// The parent-death signal is set by the process itself, not by the
// daemon's fork: Go's fork checks that the parent is alive by comparing
// getppid with the parent's PID, and a process in a new PID namespace
// sees its parent as 0.

// InitName is the name the daemon's binary is started under to be a
// jail's first process, before it becomes bubblewrap.
const InitName = "driftwatch-sandbox-init"

// initReadyTimeout bounds the wait for InitName to ask for the
// parent-death signal.
const initReadyTimeout = 10 * time.Second

// startJailed starts cmd, bubblewrap's command, whose --info-fd (if any)
// is fd 3, as the first process of new user and PID namespaces, and of a
// network namespace with net (nil: the host's network). cmd's SysProcAttr
// may carry other settings; its Pdeathsig is set from inside. pid, if
// not nil, receives the PID, in this process's namespace, of the process
// bubblewrap runs once bubblewrap reports it (0 if it never does).
func startJailed(cmd *exec.Cmd, net *NetSpec, pid chan<- int) (err error) {
	if len(cmd.ExtraFiles) != 0 {
		return errors.New("jail: the command's extra files are the jail's")
	}
	var pipes [6]*os.File // info, go, ack: read and write ends
	for i := 0; i < len(pipes); i += 2 {
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			closeAll(pipes[:])
			return fmt.Errorf("jail: %w", err)
		}
	}
	infoR, infoW, goR, goW, ackR, ackW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]
	cmd.ExtraFiles = []*os.File{infoW, goR, ackW} // fds 3, 4, 5
	cmd.Args = append([]string{InitName, "4", "5", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/proc/self/exe"
	attr := syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		attr = *cmd.SysProcAttr
	}
	attr.Pdeathsig = 0
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
	if net != nil {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	cmd.SysProcAttr = &attr
	err = cmd.Start()
	closeAll([]*os.File{infoW, goR, ackW})
	if err != nil {
		closeAll([]*os.File{infoR, goW, ackR})
		return fmt.Errorf("jail: %w", err)
	}
	abort := func(err error) error {
		// Without a go, the first process ends by itself; it is killed
		// too, in case it was not yet reading.
		closeAll([]*os.File{infoR, goW, ackR})
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	if err := awaitArmed(ackR); err != nil {
		return abort(err)
	}
	var addrs []string
	if net != nil {
		if err := startNet(cmd.Process.Pid, net); err != nil {
			return abort(err)
		}
		addrs = hostAddrs()
	}
	b, _ := json.Marshal(addrs)
	_, err = goW.Write(b)
	goW.Close()
	if err != nil {
		return abort(fmt.Errorf("jail: %w", err))
	}
	first := cmd.Process.Pid
	go func() {
		defer infoR.Close()
		var info struct {
			ChildPID int `json:"child-pid"`
		}
		child := 0
		if json.NewDecoder(infoR).Decode(&info) == nil && info.ChildPID > 0 {
			// bubblewrap's PID is of its own namespace; its one child is
			// the process it reports.
			child = childOf(first)
		}
		if pid != nil {
			pid <- child
		}
	}()
	return nil
}

// awaitArmed waits for InitName's word that it will die with the daemon.
func awaitArmed(ack *os.File) error {
	defer ack.Close()
	_ = ack.SetReadDeadline(time.Now().Add(initReadyTimeout))
	b := make([]byte, 1)
	if _, err := io.ReadFull(ack, b); err != nil {
		return fmt.Errorf("jail: its first process did not start (%w)", err)
	}
	return nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// childOf is the PID of a child of pid, or 0.
func childOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			n, _ := strconv.Atoi(f[0])
			return n
		}
		return 0
	}
	// A kernel without /proc/PID/task/TID/children: the process whose
	// parent (stat's fourth field) is pid.
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return n
		}
	}
	return 0
}

// initMain is a jail's first process: it asks to be killed when the
// daemon dies, says so, waits for the go (the host's addresses, once
// pasta has configured a network namespace of the jail's own; none with
// the host's network), makes each address unreachable, and becomes
// bubblewrap. args: the go pipe's and the acknowledgement pipe's file
// descriptors, bubblewrap's path, its arguments.
func initMain(args []string) int {
	// The parent-death signal belongs to the thread that asks for it,
	// and survives exec on that thread.
	runtime.LockOSThread()
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "driftwatch sandbox: %v\n", err)
		return 125
	}
	if len(args) < 3 {
		return fail(errors.New("usage: " + InitName + " GO-FD ACK-FD BWRAP [ARG...]"))
	}
	goFD, err1 := strconv.Atoi(args[0])
	ackFD, err2 := strconv.Atoi(args[1])
	if err := errors.Join(err1, err2); err != nil {
		return fail(err)
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fail(fmt.Errorf("parent-death signal: %w", err))
	}
	ack := os.NewFile(uintptr(ackFD), "ack")
	_, err := ack.Write([]byte{1})
	ack.Close()
	if err != nil {
		return fail(err)
	}
	f := os.NewFile(uintptr(goFD), "go")
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fail(err)
	}
	if len(b) == 0 {
		return fail(errors.New("the daemon did not start the jail"))
	}
	var addrs []string
	if err := json.Unmarshal(b, &addrs); err != nil {
		return fail(err)
	}
	if err := addUnreachable(addrs); err != nil {
		return fail(fmt.Errorf("network: %w", err))
	}
	return fail(syscall.Exec(args[2], args[2:], os.Environ()))
}

// probeJail starts a jail the way runs do (bubblewrap bwrap, the network
// net) that runs bubblewrap's --version.
func probeJail(bwrap string, net *NetSpec) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--as-pid-1", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--", bwrap, "--version")
	cmd.Env = []string{}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := startJailed(cmd, net, nil); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%w: %s", err, FirstLine(out.String()))
	}
	return nil
}
