package sandbox_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

func TestLoopbackResolver(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		conf string
		want bool
	}{
		{"nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n", true},
		{"nameserver ::1\n", true},
		{"nameserver 127.0.0.53\nnameserver 10.255.255.53\n", false},
		{"nameserver 10.255.255.53\n", false},
		{"# no nameserver\n", false},
	} {
		p := filepath.Join(dir, "resolv.conf")
		require.NoError(t, os.WriteFile(p, []byte(tc.conf), 0o644))
		require.Equal(t, tc.want, sandbox.LoopbackResolver(p), tc.conf)
	}
	require.False(t, sandbox.LoopbackResolver(filepath.Join(dir, "missing")))
}

// netTools returns bubblewrap and pasta, or ends the test: it fails under
// `make test` (DRIFTWATCH_E2E=1), which installs both.
func netTools(t *testing.T) (bwrap, pasta string) {
	t.Helper()
	return tftest.Jail(t), tftest.JailNet(t)
}

// jailedProbe runs, in a jail with its own network (host ports forwarded
// as given), a shell that connects to each address and prints what
// answered.
func jailedProbe(t *testing.T, bwrap, pasta string, hostPorts []string, addrs []string) string {
	t.Helper()
	run := filepath.Join(t.TempDir(), "dw-run")
	require.NoError(t, os.Mkdir(run, 0o755))
	j, err := sandbox.NewJail(terraform.Request{Jail: bwrap, JailNet: pasta, JailHostPorts: hostPorts}, run, "/usr/bin/bash")
	require.NoError(t, err)
	t.Cleanup(j.Close)
	var script strings.Builder
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		require.NoError(t, err)
		fmt.Fprintf(&script, "if exec 3<>/dev/tcp/%s/%s; then printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; echo \"%s: $(head -n1 <&3)\"; exec 3<&-; else echo \"%s: refused\"; fi\n", host, port, a, a)
	}
	var out, errb bytes.Buffer
	c := sandbox.Command{Bin: "/usr/bin/bash", Dir: run, Jail: j, Env: []string{"PATH=/usr/bin:/bin"}, Grace: time.Second, Stderr: &errb}
	ctx := t.Context()
	require.NoError(t, c.Run(ctx, &out, "-c", script.String()), "stderr: %s", errb.String())
	return out.String()
}

// From inside the jail no port of the host answers, on loopback or on any
// of the host's addresses, while a host elsewhere on the network (a
// namespace of the test's own, reached through a veth pair) does; a
// loopback port listed in sandbox_host_ports answers at the same address.
func TestJailNetworkReachesOutNotTheHost(t *testing.T) {
	bwrap, pasta := netTools(t)
	h := tftest.NewNetHost(t)

	loop := tftest.ServeHello(t, tftest.ListenTCP(t, "127.0.0.1:0"), "host-loopback")
	listed := tftest.ServeHello(t, tftest.ListenTCP(t, "127.0.0.1:0"), "host-listed")
	other := tftest.ServeHello(t, tftest.ListenTCP(t, h.HostAddr+":0"), "host-veth")
	remote := tftest.ServeHello(t, h.Listen(t, h.RemoteAddr+":0"), "remote")

	// The veth end is an address of "the host": without the namespace's
	// unreachable route pasta would connect to it from the host.
	_, listedPort, _ := net.SplitHostPort(listed)
	got := jailedProbe(t, bwrap, pasta, []string{"127.0.0.1:" + listedPort}, []string{loop, other, remote, listed})
	require.Equal(t, strings.Join([]string{
		loop + ": refused",
		other + ": refused",
		remote + ": hello from remote",
		listed + ": hello from host-listed",
	}, "\n")+"\n", got)

	// Without a listed port, the listed server is as unreachable as the rest.
	got = jailedProbe(t, bwrap, pasta, nil, []string{listed, remote})
	require.Equal(t, listed+": refused\n"+remote+": hello from remote\n", got)
}

// pasta ends with the jailed process it served.
func TestJailNetworkPastaEnds(t *testing.T) {
	bwrap, pasta := netTools(t)
	before := countProcs(t, pasta)
	run := filepath.Join(t.TempDir(), "dw-run")
	require.NoError(t, os.Mkdir(run, 0o755))
	j, err := sandbox.NewJail(terraform.Request{Jail: bwrap, JailNet: pasta}, run, "/usr/bin/true")
	require.NoError(t, err)
	defer j.Close()
	for range 3 {
		c := sandbox.Command{Bin: "/usr/bin/true", Dir: run, Jail: j, Env: []string{}, Grace: time.Second}
		require.NoError(t, c.Run(t.Context(), &bytes.Buffer{}))
	}
	require.Eventually(t, func() bool { return countProcs(t, pasta) == before }, 5*time.Second, 20*time.Millisecond)
}

// countProcs counts the running processes of the binary bin.
func countProcs(t *testing.T, bin string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && (exe == bin || strings.HasPrefix(filepath.Base(exe), "passt")) {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !bytes.Contains(st, []byte(") Z ")) {
				n++
			}
		}
	}
	return n
}

// BenchmarkJailStart is what one jailed Terraform process costs to start
// and end (here /usr/bin/true), on the host's network and in a network
// namespace of its own (pasta attached, routes set).
func BenchmarkJailStart(b *testing.B) {
	bwrap, pasta := tftest.Jail(b), tftest.JailNet(b)
	for _, tc := range []struct{ name, pasta string }{{"host", ""}, {"isolated", pasta}} {
		b.Run(tc.name, func(b *testing.B) {
			run := filepath.Join(b.TempDir(), "dw-run")
			require.NoError(b, os.Mkdir(run, 0o755))
			j, err := sandbox.NewJail(terraform.Request{Jail: bwrap, JailNet: tc.pasta}, run, "/usr/bin/true")
			require.NoError(b, err)
			defer j.Close()
			for b.Loop() {
				c := sandbox.Command{Bin: "/usr/bin/true", Dir: run, Jail: j, Env: []string{}, Grace: time.Second}
				require.NoError(b, c.Run(b.Context(), &bytes.Buffer{}))
			}
		})
	}
}
