package config

import (
	"fmt"
	"net"
	"net/netip"
)

// CheckJailReach refuses a daemon whose local runs could reach its own API
// as someone else: proxy mode trusting loopback while runs share this
// machine's network (Terraform code would call it from 127.0.0.1, a
// trusted address; reason says why they do), or a sandbox_host_ports entry that forwards the
// daemon's own port into the runs' network namespace.
func (cfg *Config) CheckJailReach(networkIsolated bool, reason string) error {
	if cfg.Server.Auth.Mode == AuthModeProxy && !networkIsolated {
		for i, n := range cfg.Server.Auth.Proxy.TrustedNetworks {
			p, err := netip.ParsePrefix(n)
			if err != nil {
				a, aerr := netip.ParseAddr(n)
				if aerr != nil {
					continue // config validation reported it
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			if p.Contains(netip.MustParseAddr("127.0.0.1")) || p.Contains(netip.IPv6Loopback()) ||
				p.Addr().Unmap().IsLoopback() {
				return fmt.Errorf("server.auth.proxy.trusted_networks[%d]: %s holds loopback, where local runs' Terraform code can connect from, because the runs share this machine's network (%s): install passt (terraform.sandbox_network: isolated) or trust the proxy on another address", i, n, reason)
			}
		}
	}
	_, port, err := net.SplitHostPort(cfg.Server.Listen)
	if err != nil || port == "" || port == "0" {
		return nil
	}
	check := func(key string, ports []string) error {
		for i, hp := range ports {
			if _, p, err := net.SplitHostPort(hp); err == nil && p == port {
				return fmt.Errorf("%s[%d]: %s is driftwatch's own port (server.listen): runs may not reach it", key, i, hp)
			}
		}
		return nil
	}
	if err := check("terraform.sandbox_host_ports", cfg.Terraform.SandboxHostPorts); err != nil {
		return err
	}
	for _, w := range cfg.Workspaces {
		if err := check("workspace "+w.Name+": sandbox_host_ports", w.SandboxHostPorts); err != nil {
			return err
		}
	}
	return nil
}
