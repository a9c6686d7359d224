package auth

import (
	"cmp"
	"context"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// maxHeaderValue bounds what an identity header may carry; longer values
// are refused rather than cut.
const maxHeaderValue = 1024

// checkProxySecret reports whether r carries the proxy's shared secret
// (exactly one value, compared in constant time), and removes the header
// from r: no handler, log or record ever sees it. Outside proxy mode it
// does nothing and reports false.
func (a *Authenticator) checkProxySecret(r *http.Request) bool {
	if a.secretH == "" {
		return false
	}
	vs := r.Header.Values(a.secretH)
	r.Header.Del(a.secretH)
	if len(vs) != 1 || strings.TrimSpace(vs[0]) == "" {
		return false
	}
	want, err := a.readCredential(a.secretFile, "Config.Auth.Proxy.SecretFile")
	return err == nil && tokenEqual([]byte(strings.TrimSpace(vs[0])), want)
}

type proxySecretKey struct{}

// StripProxySecret checks and removes the proxy's shared secret header
// of every request (checkProxySecret), before any route, and puts the
// verdict in the request's context for fromProxy.
func (a *Authenticator) StripProxySecret(next http.Handler) http.Handler {
	if a.secretH == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := a.checkProxySecret(r)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), proxySecretKey{}, ok)))
	})
}

// fromProxy is the identity the proxy's headers name: OutcomeNone without
// them (or with them empty), OutcomeUntrusted when they come from a peer the
// config does not trust. Header values are never logged.
func (a *Authenticator) fromProxy(r *http.Request) (Identity, Outcome) {
	present := false
	for _, h := range []string{a.userH, a.emailH, a.groupsH} {
		if _, ok := r.Header[http.CanonicalHeaderKey(h)]; ok {
			present = true
		}
	}
	if !present {
		return Identity{}, OutcomeNone
	}
	if !a.trustedPeer(r.RemoteAddr) {
		a.logger.Warn("identity headers refused: the peer is not in server.auth.proxy.trusted_networks",
			"peer", peerAddr(r.RemoteAddr), "method", r.Method, "path", r.URL.Path)
		return Identity{}, OutcomeUntrusted
	}
	if ok, _ := r.Context().Value(proxySecretKey{}).(bool); !ok {
		// From the proxy's address, but not from the proxy: something
		// else running there (a Terraform provider, a local run) cannot
		// name itself anyone. The request is unauthenticated.
		a.logger.Warn("identity headers ignored: the request lacks the proxy's shared secret (server.auth.proxy.secret_header)",
			"peer", peerAddr(r.RemoteAddr), "method", r.Method, "path", r.URL.Path, "header", a.secretH)
		return Identity{}, OutcomeNone
	}
	user := strings.TrimSpace(r.Header.Get(a.userH))
	email := strings.TrimSpace(r.Header.Get(a.emailH))
	groupsH := r.Header.Get(a.groupsH)
	if len(user) > maxHeaderValue || len(email) > maxHeaderValue || len(groupsH) > 16*maxHeaderValue {
		return Identity{}, OutcomeInvalid
	}
	name := cmp.Or(user, email)
	if name == "" {
		return Identity{}, OutcomeNone
	}
	var groups []string
	for g := range strings.SplitSeq(groupsH, ",") {
		if g = strings.TrimSpace(g); g != "" {
			groups = append(groups, g)
		}
	}
	return a.withRoles(Identity{Name: name, Method: MethodProxy, Email: email, Groups: groups}, user), OutcomeOK
}

// trustedPeer reports whether the TCP peer (r.RemoteAddr, never a
// forwarded-for header) is inside trusted_networks.
func (a *Authenticator) trustedPeer(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	return slices.ContainsFunc(a.trusted, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// peerAddr is the address of a peer for a log line, without its port.
func peerAddr(remote string) string {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().String()
	}
	return "unknown"
}
