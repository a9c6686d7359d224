package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/server/api"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/pages"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/tlsfiles/certfile"
)

// ShutdownTimeout bounds how long Run waits for in-flight requests once
// its context is done.
const ShutdownTimeout = 10 * time.Second

// Options configures a Server: plain data, plus the Control the daemon
// implements.
type Options struct {
	// Injected dependencies (required).

	// Store is read, never written.
	Store store.Store
	// Control is the daemon: configured workspaces, readiness, triggering
	// and cancelling runs, live logs, notifier health and (optionally)
	// remediation.
	Control  Control
	Gatherer prometheus.Gatherer
	Logger   *slog.Logger

	// Optional.

	// Logs holds finished runs' logs (nil: none are served).
	Logs store.LogStore
	// Sessions keeps the sessions of oidc mode (auth.OIDC); nil: Store's,
	// which must then be a store.SessionStore in oidc mode.
	Sessions store.SessionStore
	// Incidents lists a workspace's incidents, shown with their severity
	// and the rule that set it (nil: none are shown).
	Incidents IncidentLister
	// Groups reads the group incidents: drift of several workspaces
	// that shares one cause, alerted as one (GET /api/v1/groups, the
	// group pages, the Trends count). nil: none are shown (the list is
	// empty). The daemon (internal/app) passes its store, a
	// store.GroupStore.
	Groups GroupReader
	// Audit records every request to a mutating route, refused or not
	// (audit.go); nil: none is recorded. GET /api/v1/audit and the
	// /audit page read the log from Store, if it is a store.AuditReader.
	// Unless it is an *AuditLimiter, New puts one in front of it.
	Audit AuditRecorder
	// Config is the config file's server section; config.Server documents
	// each setting. The server uses it as follows (zero: no tokens, no
	// TLS, no external URL, the default listen address):
	//
	//   - TokenFile holds an API token with the admin role (identity
	//     "token:api"), ReadTokenFile one with the viewer role
	//     ("token:read"), Auth.Tokens more named tokens with their roles.
	//     Every token file is read on every request that offers a token,
	//     so a rotated token applies at once; a route no configured
	//     credential could use answers 403 saying what to configure.
	//   - Auth.Mode "proxy" also takes people's identities from the
	//     headers of an authenticating proxy, believed only from a TCP
	//     peer in Auth.Proxy.TrustedNetworks that carries the shared
	//     secret of Auth.Proxy.SecretFile in Auth.Proxy.SecretHeader
	//     (required; the header is removed from every request), with
	//     roles from Auth.Roles; their mutating requests need a CSRF
	//     token (auth.Authenticator.CheckCSRF).
	//   - MetricsTokenFile holds the scrape token of /metrics, which
	//     reads nothing else. /metrics needs the viewer role (or this
	//     token) unless a caller without a credential may read.
	//   - Auth.AnonymousRole and OpenReads say what a caller without a
	//     credential may read (auth.Authenticator.Admit). A log that
	//     starts with runlog.ValuesNotice is served only to a reader with
	//     a credential.
	//   - ExternalURL is the URL the server is reached at, e.g.
	//     "https://drift.example.com/driftwatch". Its path prefixes the
	//     status page's links and it makes the "url" of API workspaces
	//     absolute. Its host is an allowed Host.
	//   - AllowedHosts are more host names requests may be addressed to
	//     (the Host header, port ignored); "*.example.com" allows every
	//     subdomain of example.com. localhost and IP literals are always
	//     allowed; see hostPolicy.
	//   - Listen is the configured listen address (default
	//     "127.0.0.1:8080"). Without ExternalURL the commands a page shows
	//     address the API there (127.0.0.1 for a wildcard address), never
	//     at the request's Host. Run takes its address separately.
	//   - TLSCertFile and TLSKeyFile (PEM; both or neither) make Run and
	//     Serve speak HTTPS, TLS 1.2 or later. The pair is loaded by New
	//     (an unusable pair fails there) and read again whenever either
	//     file changes, so a renewed certificate applies without a
	//     restart.
	Config config.Server
	// CallbackURL is the URL Kubernetes run pods post their results to
	// (runner.kubernetes.callback_url, set only in kubernetes mode): its
	// host is an allowed Host.
	CallbackURL string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Handlers are extra routes (ServeMux patterns), e.g. the endpoint
	// Kubernetes run pods post their results to.
	Handlers map[string]http.Handler

	// Version is driftwatch's version, for GET /api/v1/status.
	Version string
	// Sandbox is how local runs are isolated, for GET /api/v1/status.
	Sandbox SandboxStatus
	// Leader, if set, returns the identity of the leader-election Lease
	// holder ("": unknown), for GET /api/v1/status ("leader", omitted when
	// unknown).
	Leader func() string
}

// Server serves driftwatch's HTTP endpoints.
type Server struct {
	o Options
	// src is what the API and the pages read (view.Source): the store,
	// the Control and its optional sides, the clock, the addresses.
	src     *view.Source
	base    string // absolute external URL without trailing slash, or ""
	hosts   hostPolicy
	handler http.Handler
	// router is the route table behind handler.
	router *router
	// auth establishes who makes a request and what it may do.
	auth  *auth.Authenticator
	api   *api.API
	pages *pages.Pages

	// writeTimeout is the http.Server's WriteTimeout, which a log stream
	// lifts (api.API.StreamWriteTimeout). Tests shorten it.
	writeTimeout time.Duration
	// certs serves the TLS certificate, nil without TLS.
	certs *certfile.Reloader
}

// New validates o and builds a Server.
func New(o Options) (*Server, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if _, limited := o.Audit.(*AuditLimiter); o.Audit != nil && !limited {
		o.Audit = NewAuditLimiter(o.Audit, AuditLimits{Logger: o.Logger, Now: o.Now})
	}
	s := &Server{o: o, writeTimeout: 60 * time.Second}
	c := o.Config
	var hostURLs []string
	var prefix string
	if c.ExternalURL != "" {
		u, err := url.Parse(c.ExternalURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("driftwatch/server: Options.Config.ExternalURL %q must be an absolute http(s) URL without query or fragment", c.ExternalURL)
		}
		s.base = strings.TrimSuffix(u.String(), "/")
		prefix = strings.TrimSuffix(u.EscapedPath(), "/")
		hostURLs = append(hostURLs, u.Hostname())
	}
	if o.CallbackURL != "" {
		u, err := url.Parse(o.CallbackURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return nil, fmt.Errorf("driftwatch/server: Options.CallbackURL %q must be an absolute http(s) URL", o.CallbackURL)
		}
		hostURLs = append(hostURLs, u.Hostname())
	}
	hosts, err := newHostPolicy(hostURLs, c.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("driftwatch/server: %w", err)
	}
	s.hosts = hosts
	apiBase := s.base
	if apiBase == "" {
		apiBase = listenURL(c.Listen)
		if c.TLSCertFile != "" {
			apiBase = "https://" + strings.TrimPrefix(apiBase, "http://")
		}
	}
	// Fail at startup on a token that can never work; the files are still
	// read on every request so that rotation needs no restart.
	if s.auth, err = auth.New(auth.Options{
		Config: c, Base: s.base, Logger: o.Logger, Sessions: o.Sessions, Store: o.Store,
		Message: func(w http.ResponseWriter, r *http.Request, code int, heading, msg string) {
			s.pages.Message(w, r, code, heading, msg)
		},
	}); err != nil {
		return nil, fmt.Errorf("driftwatch/server: %w", err)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return nil, errors.New("driftwatch/server: Options.Config.TLSCertFile and Options.Config.TLSKeyFile go together")
	}
	if c.TLSCertFile != "" {
		if s.certs, err = certfile.New(c.TLSCertFile, c.TLSKeyFile, o.Logger); err != nil {
			return nil, fmt.Errorf("driftwatch/server: TLS: %w", err)
		}
	}
	s.src = view.New(view.Source{
		Store: o.Store, Logs: o.Logs, Incidents: o.Incidents, Groups: o.Groups, Control: o.Control, Logger: o.Logger, Now: o.Now,
		Base: s.base, Prefix: prefix, APIBase: apiBase,
	})
	if s.pages, err = pages.New(s.src, s.auth); err != nil {
		return nil, fmt.Errorf("driftwatch/server: %w", err)
	}
	s.api = api.New(s.src, s.auth, api.Daemon{Version: o.Version, Sandbox: o.Sandbox, Leader: o.Leader})
	s.handler, s.router = s.routes()
	return s, nil
}

// validate turns embedder misconfiguration into a clear error at New time
// rather than a nil-pointer panic on the first request.
func (o Options) validate() error {
	var errs []error
	for _, f := range []struct {
		name    string
		missing bool
	}{
		{"Store", o.Store == nil},
		{"Control", o.Control == nil},
		{"Gatherer", o.Gatherer == nil},
		{"Logger", o.Logger == nil},
	} {
		if f.missing {
			errs = append(errs, fmt.Errorf("driftwatch/server: Options.%s is required", f.name))
		}
	}
	return errors.Join(errs...)
}

// Handler returns the server's handler, with access logging and the Host
// allowlist.
func (s *Server) Handler() http.Handler { return s.handler }

// Run listens on addr and serves until ctx is done, then shuts down
// gracefully (waiting up to ShutdownTimeout) and returns nil. It returns
// an error if it cannot listen or serving fails.
func (s *Server) Run(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %q: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened; it closes ln. With
// Options.Config.TLSCertFile it serves HTTPS.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.writeTimeout, // log streams set their own per-write deadlines
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.o.Logger.Handler(), slog.LevelWarn),
	}
	if o := s.auth.OIDC(); o != nil {
		// Ended sessions are deleted while serving.
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); o.PruneLoop(pctx) }()
		defer func() { stop(); <-done }()
	}
	errc := make(chan error, 1)
	if s.certs != nil {
		srv.TLSConfig = s.certs.TLSConfig()
		s.o.Logger.Info("https server listening", "addr", ln.Addr().String(), "cert_file", s.o.Config.TLSCertFile)
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		s.o.Logger.Info("http server listening", "addr", ln.Addr().String())
		go func() { errc <- srv.Serve(ln) }()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), ShutdownTimeout,
		fmt.Errorf("http shutdown took longer than %s", ShutdownTimeout))
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.o.Logger.Warn("http server did not shut down gracefully", "err", err)
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
	}
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	respond.Text(w, http.StatusOK, "ok\n")
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if err := s.o.Control.Ready(); err != nil {
		respond.Text(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
		return
	}
	respond.Text(w, http.StatusOK, "ok\n")
}
