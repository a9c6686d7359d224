// Package netcfg holds what config validates of the local sandbox's
// network (terraform.sandbox_network, sandbox_host_ports), so that config
// need not import the sandbox itself. It imports no internal package.
package netcfg

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// Network settings (config terraform.sandbox_network).
const (
	NetworkAuto     = "auto"     // own namespace where the machine allows, else the host's with a warning
	NetworkIsolated = "isolated" // own namespace or refuse to start
	NetworkHost     = "host"     // the host's network (workspaces reach the host's ports)
)

// ParseHostPort checks one sandbox_host_ports entry: a loopback address
// of the host and a port ("127.0.0.1:6443", "localhost:5432",
// "[::1]:8200"). Only loopback ports can be forwarded: a service on
// another address of the host is reached through its loopback port.
func ParseHostPort(s string) (uint16, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want HOST:PORT (for example 127.0.0.1:6443)", s)
	}
	if host != "localhost" {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.IsLoopback() {
			return 0, fmt.Errorf("%q: only the host's loopback ports can be reached from the sandbox (127.0.0.1, [::1] or localhost): listen there, or use sandbox_network: host", s)
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%q: port must be 1-65535", s)
	}
	return uint16(p), nil
}
