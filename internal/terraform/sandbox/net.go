package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/driftwatch/driftwatch/internal/terraform/sandbox/netcfg"
)

// The jail's network. Without it, Terraform code in a jail shares the
// host's network namespace: it reaches every port the host listens on,
// the daemon's own API on loopback included, from any loopback source
// address it likes. With it, each jailed Terraform process starts in a
// network namespace of its own whose only way out is pasta (Debian's
// passt package, as rootless containers use), attached from the host:
//
//   - outbound connections leave through pasta's sockets on the host, so
//     providers reach their APIs as before;
//   - -T none -U none: nothing in the namespace is forwarded to the host's
//     loopback, except the ports a workspace lists (sandbox_host_ports);
//     --no-map-gw: the gateway address is the real gateway, not the host;
//     -t none -u none: nothing from outside is forwarded in;
//   - every address of the host's interfaces gets an unreachable route in
//     the namespace, so pasta's sockets are never asked to connect to the
//     host itself (the address pasta copies into the namespace is the
//     namespace's own: a connection to it stays inside, where nothing
//     listens). The routes are added before Terraform starts by the
//     namespace's first process (netInitMain), root of a user namespace
//     mapped to the daemon's user; Terraform runs inside bubblewrap's
//     nested user namespace as uid 65534 with no capabilities, so it
//     cannot change them.
//
// The jail's first process (init.go) is started in a network namespace
// of its own; before it lets bubblewrap start, the daemon attaches pasta
// to that process and waits for the namespace's default route (startNet),
// then sends the host's addresses, to which the first process adds the
// unreachable routes. pasta is killed when that process ends (a pidfd),
// or with the daemon (Pdeathsig).

// Network settings (config terraform.sandbox_network).
const (
	NetworkAuto     = netcfg.NetworkAuto
	NetworkIsolated = netcfg.NetworkIsolated
	NetworkHost     = netcfg.NetworkHost
)

// NetSpec is a jail's network: the pasta binary and the host loopback
// ports forwarded into the namespace (the namespace's 127.0.0.1:PORT and
// [::1]:PORT reach the host's).
type NetSpec struct {
	Pasta     string   `json:"pasta"`
	HostPorts []uint16 `json:"host_ports,omitempty"`
}

// netReadyTimeout bounds the wait for pasta to configure the namespace.
const netReadyTimeout = 10 * time.Second

// startNet attaches pasta to the network namespace of pid, a jail's
// first process, and waits until it has configured it.
func startNet(pid int, spec *NetSpec) error {
	args := []string{"--config-net", "--foreground", "--quiet",
		"--runas", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		"-t", "none", "-u", "none", "-U", "none", "--no-map-gw"}
	args = append(args, "-T", portSpec(spec.HostPorts))
	pasta := exec.Command(spec.Pasta, append(args, strconv.Itoa(pid))...)
	var out bytes.Buffer
	pasta.Stdout, pasta.Stderr = &out, &out
	pasta.Env = []string{}
	pasta.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := pasta.Start(); err != nil {
		return fmt.Errorf("jail network: pasta: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = pasta.Wait()
		close(exited)
	}()
	stop := func() {
		_ = pasta.Process.Kill()
		<-exited
	}
	if err := waitConfigured(pid, spec.HostPorts, exited); err != nil {
		stop()
		return fmt.Errorf("jail network: %w (pasta: %s)", err, firstUsefulLine(out.String()))
	}
	// pasta has no end of its own once the namespace's processes are
	// gone: it ends with the process it serves.
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		stop()
		return fmt.Errorf("jail network: %w", err)
	}
	go func() {
		defer unix.Close(pidfd)
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err == nil || !errors.Is(err, unix.EINTR) {
				break
			}
		}
		stop()
	}()
	return nil
}

// portSpec is pasta's -T for the forwarded host ports.
func portSpec(ports []uint16) string {
	if len(ports) == 0 {
		return "none"
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

// firstUsefulLine is pasta's first line of output that is not its
// complaint about a missing syslog.
func firstUsefulLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "syslog") {
			return l
		}
	}
	return "no output"
}

// waitConfigured waits until the network namespace of pid has a default
// route (pasta configures it last) and pasta listens there on each of the
// forwarded host ports (else a run that connects at once, a module
// download from the test's server, is refused), or pasta exits.
func waitConfigured(pid int, ports []uint16, exited <-chan struct{}) error {
	want4 := hasDefaultRoute("/proc/self/net/route")
	deadline := time.Now().Add(netReadyTimeout)
	for {
		routed := want4 && hasDefaultRoute(fmt.Sprintf("/proc/%d/net/route", pid)) ||
			!want4 && hasDefaultRoute6(fmt.Sprintf("/proc/%d/net/ipv6_route", pid))
		if routed && listening(pid, ports) {
			return nil
		}
		select {
		case <-exited:
			return errors.New("pasta exited before the namespace was configured")
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pasta did not configure the namespace within %s", netReadyTimeout)
		}
	}
}

// listening reports whether the network namespace of pid has a TCP
// socket listening on each of ports (/proc/PID/net/tcp and tcp6: the
// local address's port in hex, state 0A).
func listening(pid int, ports []uint16) bool {
	if len(ports) == 0 {
		return true
	}
	open := map[uint16]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(l)
			if len(f) < 4 || f[3] != "0A" {
				continue
			}
			_, port, ok := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(port, 16, 16); ok && err == nil {
				open[uint16(p)] = true
			}
		}
	}
	for _, p := range ports {
		if !open[p] {
			return false
		}
	}
	return true
}

// hasDefaultRoute reports whether a /proc/*/net/route table has a
// default route (destination and mask 0).
func hasDefaultRoute(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" {
			return true
		}
	}
	return false
}

// hasDefaultRoute6 reports whether a /proc/*/net/ipv6_route table has a
// default route through a device other than lo (::/0).
func hasDefaultRoute6(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 10 && f[0] == strings.Repeat("0", 32) && f[1] == "00" && f[9] != "lo" {
			return true
		}
	}
	return false
}

// hostAddrs are the addresses of the host's interfaces, but loopback
// (inside the namespace, loopback is the namespace's own), as single
// address prefixes.
func hostAddrs() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok || ip.Unmap().IsLoopback() {
			continue
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()).String())
	}
	return out
}

// addUnreachable adds an unreachable route for each prefix to the main
// table of this process's network namespace (rtnetlink, as `ip route add
// unreachable` does).
func addUnreachable(prefixes []string) error {
	if len(prefixes) == 0 {
		return nil
	}
	sock, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer unix.Close(sock)
	if err := unix.Bind(sock, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	for i, s := range prefixes {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return err
		}
		if err := routeRequest(sock, uint32(i+1), p); err != nil {
			return fmt.Errorf("unreachable route to %s: %w", p, err)
		}
	}
	return nil
}

// routeRequest sends one RTM_NEWROUTE (type unreachable) for p and reads
// its acknowledgement.
func routeRequest(sock int, seq uint32, p netip.Prefix) error {
	addr := p.Addr().AsSlice()
	family := uint8(unix.AF_INET6)
	if p.Addr().Is4() {
		family = unix.AF_INET
	}
	attrLen := unix.SizeofRtAttr + len(addr)
	msgLen := unix.SizeofNlMsghdr + unix.SizeofRtMsg + (attrLen+3)&^3
	msg := make([]byte, msgLen)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(msgLen))
	ne.PutUint16(msg[4:], unix.RTM_NEWROUTE)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_REPLACE)
	ne.PutUint32(msg[8:], seq)
	rt := msg[unix.SizeofNlMsghdr:]
	rt[0] = family
	rt[1] = uint8(p.Bits())    // dst_len
	rt[4] = unix.RT_TABLE_MAIN // table
	rt[5] = unix.RTPROT_STATIC // protocol
	rt[6] = unix.RT_SCOPE_UNIVERSE
	rt[7] = unix.RTN_UNREACHABLE // type
	at := rt[unix.SizeofRtMsg:]
	ne.PutUint16(at[0:], uint16(attrLen))
	ne.PutUint16(at[2:], unix.RTA_DST)
	copy(at[unix.SizeofRtAttr:], addr)
	if err := unix.Sendto(sock, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(sock, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			if errno := -int32(ne.Uint32(m.Data[:4])); errno != 0 {
				return syscall.Errno(errno)
			}
			return nil
		}
	}
}

// probeNet checks that pasta is installed and can give a jail a network
// namespace here: it starts a jail (bubblewrap bwrap) in one, the way
// runs do, that runs bubblewrap's --version.
func probeNet(bwrap string) Isolation {
	pasta, err := findProgram("pasta")
	if err != nil {
		return Isolation{NetworkReason: "pasta is not installed: install the passt package so that workspaces' code cannot reach this machine's ports (the daemon's API among them)"}
	}
	if err := probeJail(bwrap, &NetSpec{Pasta: pasta}); err != nil {
		hint := ""
		if strings.Contains(err.Error(), "tun") {
			hint = ": pasta needs /dev/net/tun, readable and writable by the daemon's user (in a container, the device passed in)"
		}
		return Isolation{NetworkReason: fmt.Sprintf("the sandbox cannot have a network namespace of its own here (%s)%s", err, hint)}
	}
	return Isolation{Pasta: pasta}
}

// LoopbackResolver reports whether every nameserver of resolvConf (this
// machine's /etc/resolv.conf) is on loopback, such as systemd-resolved's
// 127.0.0.53: a jail with a network of its own then resolves no name.
func LoopbackResolver(resolvConf string) bool {
	b, err := os.ReadFile(resolvConf)
	if err != nil {
		return false
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(f[1])
		if err != nil || !a.Unmap().IsLoopback() {
			return false
		}
		n++
	}
	return n > 0
}
