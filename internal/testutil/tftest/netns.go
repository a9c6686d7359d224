package tftest

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// NetHost is a host of the test's own: a network namespace the test made,
// joined to this one by a veth pair with an address at each end. From the
// machine's side it is a host elsewhere on the network; HostAddr is one
// more address of the machine itself.
type NetHost struct {
	NS         string
	HostAddr   string // this end's address: an address of the machine
	RemoteAddr string // the namespace's address
}

// NewNetHost makes a NetHost (root and iproute2's ip are needed: `make
// test` runs as root and installs ip) and removes it when the test ends.
func NewNetHost(t testing.TB) NetHost {
	t.Helper()
	if os.Getuid() != 0 {
		Unavailable(t, "a test host in a network namespace needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		Unavailable(t, "ip (iproute2) is not on PATH")
	}
	id := os.Getpid()%250 + 1
	name := fmt.Sprintf("dw%d%s", os.Getpid(), strings.ToLower(randSuffix()))
	h := NetHost{
		NS:         name,
		HostAddr:   fmt.Sprintf("10.213.%d.1", id),
		RemoteAddr: fmt.Sprintf("10.213.%d.2", id),
	}
	veth := "v" + name
	if len(veth) > 13 {
		veth = veth[:13]
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", h.NS)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", h.NS).Run() })
	ip("link", "add", veth, "type", "veth", "peer", "name", veth+"p")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", veth).Run() })
	ip("link", "set", veth+"p", "netns", h.NS)
	ip("addr", "add", h.HostAddr+"/30", "dev", veth)
	ip("link", "set", veth, "up")
	ip("-n", h.NS, "addr", "add", h.RemoteAddr+"/30", "dev", veth+"p")
	ip("-n", h.NS, "link", "set", veth+"p", "up")
	ip("-n", h.NS, "link", "set", "lo", "up")
	return h
}

// randSuffix tells apart the hosts of one test process.
func randSuffix() string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%02x%02x", b[0], b[1])
}

// Listen listens on addr (port 0: any) inside the host's namespace: the
// socket is made by a thread that joined it and is never used again.
func (h NetHost) Listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	type res struct {
		l   net.Listener
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		f, err := os.Open("/run/netns/" + h.NS)
		if err != nil {
			ch <- res{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- res{err: err}
			return
		}
		l, err := net.Listen("tcp", addr)
		ch <- res{l, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.l.Close() })
	return r.l
}

// ServeHello answers every connection on l with "hello from NAME" once it
// has read the request's header (a reply to a client still sending could
// be lost to a reset), and returns l's address. Clients send an HTTP
// request, or at least a blank line.
func ServeHello(t testing.TB, l net.Listener, name string) string {
	t.Helper()
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, _ = http.ReadRequest(bufio.NewReader(c))
			fmt.Fprintf(c, "hello from %s\n", name)
			c.Close()
		}
	}()
	return l.Addr().String()
}

// ListenTCP listens on addr in this network namespace.
func ListenTCP(t testing.TB, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
