package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/driftwatch/driftwatch/internal/server/respond"
)

// maxLoggedHost caps a refused Host as the log shows it.
const maxLoggedHost = 100

// hostPolicy is the Host allowlist, the defence against DNS rebinding: a
// web page on evil.example whose name is made to resolve to the daemon's
// address (127.0.0.1, a cluster IP) can make the visitor's browser send
// requests to the daemon and read the answers, since to the browser they
// are same-origin. The browser still sends the page's name, Host:
// evil.example, so only Hosts the daemon is known to be reached by pass.
//
// Allowed are:
//   - localhost;
//   - IP literals, v4 or bracketed v6: a DNS-rebinding page always sends a
//     name (its own), so an IP literal in Host means the browser really
//     connected to that address by its number, and a page of that origin
//     is served by the daemon itself;
//   - the hosts of the external URL and the Kubernetes callback URL;
//   - the configured names, "*.example.com" for any subdomain of
//     example.com (at any depth, not example.com itself).
//
// Comparison ignores the port, case and a trailing dot.
type hostPolicy struct {
	exact    map[string]bool
	suffixes []string // ".example.com" for "*.example.com"
}

// newHostPolicy builds the allowlist from URL hosts (already parsed) and
// the configured names.
func newHostPolicy(urlHosts, names []string) (hostPolicy, error) {
	p := hostPolicy{exact: map[string]bool{"localhost": true}}
	for _, h := range urlHosts {
		p.exact[normHost(h)] = true
	}
	for i, n := range names {
		h := normHost(n)
		name := strings.TrimPrefix(h, "*.")
		if name == "" || strings.ContainsAny(name, "*:/@[] ") {
			return hostPolicy{}, fmt.Errorf("Options.Config.AllowedHosts[%d] %q is not a host name or \"*.\" and a domain", i, n)
		}
		if name != h {
			p.suffixes = append(p.suffixes, "."+name)
		} else {
			p.exact[h] = true
		}
	}
	return p, nil
}

// normHost lowercases a host name and drops a trailing dot.
func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// allows reports whether a request's Host (with or without port) passes.
func (p hostPolicy) allows(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	h = normHost(h)
	if h == "" {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if p.exact[h] {
		return true
	}
	for _, s := range p.suffixes {
		if len(h) > len(s) && strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

// hostExempt are the probes: kubelet and load balancers address them by
// whatever name or address they were given, and they answer nothing a
// page could use.
var hostExempt = map[string]bool{"/healthz": true, "/readyz": true}

// checkHost answers 421 Misdirected Request to a request whose Host is not
// allowed (see hostPolicy), on every route but the probes.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hostExempt[r.URL.Path] || s.hosts.allows(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		host := r.Host
		if len(host) > maxLoggedHost {
			host = host[:maxLoggedHost] + "…"
		}
		s.o.Logger.Warn("http request refused: host not allowed (server.allowed_hosts)",
			"host", host, "method", r.Method, "path", r.URL.Path)
		respond.Text(w, http.StatusMisdirectedRequest,
			"misdirected request: driftwatch does not answer to this host name; add it to server.allowed_hosts (or set server.external_url)\n")
	})
}

// listenURL is the API's URL at a listen address, for the commands pages
// show when no external URL is configured: a wildcard host (0.0.0.0, ::,
// none) becomes 127.0.0.1, since the command is run where the daemon is.
func listenURL(listen string) string {
	if listen == "" {
		listen = "127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen
	}
	if a, err := netip.ParseAddr(host); host == "" || (err == nil && a.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
