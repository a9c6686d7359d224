package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A daemon whose local runs could call its own API from a trusted address,
// or reach its port through sandbox_host_ports, refuses to start.
func TestJailReach(t *testing.T) {
	type isolation struct {
		isolated bool
		reason   string
	}
	isolated := isolation{isolated: true}
	shared := isolation{reason: "pasta is not installed"}
	proxy := func(nets ...string) *Config {
		c := &Config{}
		c.Server.Listen = "127.0.0.1:8080"
		c.Server.Auth.Mode = AuthModeProxy
		c.Server.Auth.Proxy.TrustedNetworks = nets
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  *Config
		iso  isolation
		err  string
	}{
		{name: "loopback trusted, runs share the network", cfg: proxy("127.0.0.1/32"), iso: shared,
			err: "server.auth.proxy.trusted_networks[0]: 127.0.0.1/32 holds loopback, where local runs' Terraform code can connect from, because the runs share this machine's network (pasta is not installed)"},
		{name: "loopback address trusted", cfg: proxy("10.1.0.0/16", "::1"), iso: shared, err: "trusted_networks[1]: ::1 holds loopback"},
		{name: "everything trusted", cfg: proxy("0.0.0.0/0"), iso: shared, err: "trusted_networks[0]: 0.0.0.0/0 holds loopback"},
		{name: "loopback trusted, runs isolated", cfg: proxy("127.0.0.1/32"), iso: isolated},
		{name: "other network trusted", cfg: proxy("10.1.0.0/16"), iso: shared},
		{name: "host port is the daemon's", cfg: func() *Config {
			c := proxy("10.1.0.0/16")
			c.Terraform.SandboxHostPorts = []string{"127.0.0.1:6443", "localhost:8080"}
			return c
		}(), iso: isolated, err: "terraform.sandbox_host_ports[1]: localhost:8080 is driftwatch's own port (server.listen): runs may not reach it"},
		{name: "a workspace's host port is the daemon's", cfg: func() *Config {
			c := proxy("10.1.0.0/16")
			c.Workspaces = []Workspace{{Name: "net", SandboxHostPorts: []string{"127.0.0.1:8080"}}}
			return c
		}(), iso: isolated, err: "workspace net: sandbox_host_ports[0]: 127.0.0.1:8080 is driftwatch's own port"},
		{name: "other host ports", cfg: func() *Config {
			c := proxy("10.1.0.0/16")
			c.Terraform.SandboxHostPorts = []string{"127.0.0.1:6443"}
			return c
		}(), iso: isolated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.CheckJailReach(tc.iso.isolated, tc.iso.reason)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}
