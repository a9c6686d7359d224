package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/tlsfiles/certfile"
)

// ShutdownTimeout bounds how long Run waits for in-flight requests once
// its context is done.
const ShutdownTimeout = 10 * time.Second

// WorkspaceInfo is one configured workspace, as the server shows it.
type WorkspaceInfo struct {
	Name     string
	Owner    string
	Schedule string
	Labels   map[string]string
	NextRun  time.Time // zero: not scheduled
}

// IncidentLister is the part of store.AlertStore the server reads.
type IncidentLister interface {
	Incidents(ctx context.Context, workspace string) ([]store.Incident, error)
}

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
	// Sessions keeps the sessions of oidc mode (oidc.go); nil: Store's,
	// which must then be a store.SessionStore in oidc mode.
	Sessions store.SessionStore
	// Incidents lists a workspace's incidents, shown with their severity
	// and the rule that set it (nil: none are shown).
	Incidents IncidentLister
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
	//     token (csrf.go).
	//   - MetricsTokenFile holds the scrape token of /metrics, which
	//     reads nothing else. /metrics needs the viewer role (or this
	//     token) unless a caller without a credential may read.
	//   - Auth.AnonymousRole and OpenReads say what a caller without a
	//     credential may read; see authenticator.anonymousMay. A log that
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

// SandboxStatus is how local runs are isolated from the daemon and from
// each other: Mode "namespaces", or "none" with the Reason.
type SandboxStatus struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason,omitempty"`
	// Network is "isolated" (each run has a network namespace of its
	// own: outbound access only, no port of this machine) or "host".
	Network       string `json:"network"`
	NetworkReason string `json:"network_reason,omitempty"`
}

// NotifierStatus is the delivery health of one notifier.
type NotifierStatus struct {
	Name string `json:"name"`
	// Pending counts undelivered messages, Dead those given up on.
	Pending int `json:"pending"`
	Dead    int `json:"dead"`
	// LastError is the most recent failed attempt's (redacted) error.
	LastError string `json:"last_error"`
	// OldestPending is when the oldest undelivered message was created.
	OldestPending *time.Time `json:"oldest_pending"`
}

// Failing reports whether the notifier needs attention: a message given
// up on, or one waiting for more than five minutes.
func (n NotifierStatus) Failing(now time.Time) bool {
	return n.Dead > 0 || (n.OldestPending != nil && now.Sub(*n.OldestPending) > 5*time.Minute)
}

// Log stream limits.
const (
	// DefaultMaxLogStreams caps the event streams of run logs open at once,
	// server-wide; one more answers 503 with Retry-After.
	DefaultMaxLogStreams = 64
	// LogStreamWriteTimeout bounds every write of an event stream: a client
	// that stops reading loses its stream (and the goroutine serving it ends)
	// once the connection's buffers are full and a write waits this long.
	LogStreamWriteTimeout = 30 * time.Second
)

// Server serves driftwatch's HTTP endpoints.
type Server struct {
	o Options
	// rem is o.Control's remediation side, or nil (no remediation routes).
	rem RemediationControl
	// sil is o.Control's silences and maintenance windows, or nil (the
	// silence routes answer 501).
	sil    SilenceControl
	base   string // absolute external URL without trailing slash, or ""
	prefix string // path of base, without trailing slash, or ""
	// apiBase is the URL the API is reached at, for the commands pages
	// show: the external URL, else the listen address (listenURL). Never
	// the request's Host, which the client chooses.
	apiBase string
	hosts   hostPolicy
	handler http.Handler
	// router is the route table behind handler.
	router *router
	// auth establishes who makes a request (identity.go, auth.go).
	auth  *authenticator
	pages *pages

	// streams counts open log event streams; maxStreams caps them.
	streams    atomic.Int64
	maxStreams int64
	// sseWriteTimeout bounds each write of a log stream; writeTimeout is
	// the http.Server's WriteTimeout, which a log stream lifts. Tests
	// shorten them.
	sseWriteTimeout time.Duration
	writeTimeout    time.Duration
	// certs serves the TLS certificate, nil without TLS.
	certs *certfile.Reloader
	// stats bounds and caches the statistics (trends.go).
	stats *statsCache
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
	s := &Server{o: o, maxStreams: DefaultMaxLogStreams, sseWriteTimeout: LogStreamWriteTimeout, writeTimeout: 60 * time.Second,
		stats: newStatsCache()}
	s.rem, _ = o.Control.(RemediationControl)
	s.sil, _ = o.Control.(SilenceControl)
	c := o.Config
	var hostURLs []string
	if c.ExternalURL != "" {
		u, err := url.Parse(c.ExternalURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("driftwatch/server: Options.Config.ExternalURL %q must be an absolute http(s) URL without query or fragment", c.ExternalURL)
		}
		s.base = strings.TrimSuffix(u.String(), "/")
		s.prefix = strings.TrimSuffix(u.EscapedPath(), "/")
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
	s.apiBase = s.base
	if s.apiBase == "" {
		s.apiBase = listenURL(c.Listen)
		if c.TLSCertFile != "" {
			s.apiBase = "https://" + strings.TrimPrefix(s.apiBase, "http://")
		}
	}
	// Fail at startup on a token that can never work; the files are still
	// read on every request so that rotation needs no restart.
	if s.auth, err = newAuthenticator(c, o.Logger); err != nil {
		return nil, fmt.Errorf("driftwatch/server: %w", err)
	}
	if s.auth.oidc != nil {
		if err := s.auth.oidc.setSessions(o.Sessions, o.Store); err != nil {
			return nil, fmt.Errorf("driftwatch/server: %w", err)
		}
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return nil, errors.New("driftwatch/server: Options.Config.TLSCertFile and Options.Config.TLSKeyFile go together")
	}
	if c.TLSCertFile != "" {
		if s.certs, err = certfile.New(c.TLSCertFile, c.TLSKeyFile, o.Logger); err != nil {
			return nil, fmt.Errorf("driftwatch/server: TLS: %w", err)
		}
	}
	p, err := newPages(s.prefix)
	if err != nil {
		return nil, fmt.Errorf("driftwatch/server: %w", err)
	}
	s.pages = p
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

// routes builds the route table: every route with its rule (router), so
// that the rule is checked before the handler runs and a test can list
// them all. The routes of Options.Handlers authenticate themselves.
func (s *Server) routes() (http.Handler, *router) {
	mux := newRouter(s)
	mux.public("GET /healthz", http.HandlerFunc(s.healthz))
	mux.public("GET /readyz", http.HandlerFunc(s.readyz))
	mux.handleMetrics("GET /metrics", promhttp.HandlerFor(s.o.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.o.Logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.handle("GET /api/v1/whoami", RoleViewer, s.apiWhoami)
	mux.handle("GET /api/v1/workspaces", RoleViewer, s.apiWorkspaces)
	mux.handle("GET /api/v1/workspaces/{name}", RoleViewer, s.apiWorkspace)
	mux.handle("GET /api/v1/workspaces/{name}/runs", RoleViewer, s.apiRuns)
	mux.handle("POST /api/v1/workspaces/{name}/runs", RoleOperator, s.apiTrigger)
	mux.handle("GET /api/v1/runs/{id}", RoleViewer, s.apiRun)
	mux.handle("GET /api/v1/notifiers", RoleViewer, s.apiNotifiers)
	mux.handle("GET /api/v1/status", RoleViewer, s.apiStatus)
	mux.handleLogs("GET /api/v1/runs/{id}/logs", s.apiRunLogs)
	mux.handle("POST /api/v1/runs/{id}/cancel", RoleOperator, s.apiCancel)
	if s.rem != nil {
		s.remediationRoutes(mux)
	}
	s.silenceRoutes(mux)
	s.statsRoutes(mux)
	s.oidcRoutes(mux)
	s.auditRoutes(mux)
	for _, pattern := range slices.Sorted(maps.Keys(s.o.Handlers)) {
		mux.self(pattern, s.o.Handlers[pattern])
	}
	mux.handle("GET /{$}", RoleViewer, s.statusPage)
	mux.handle("GET /workspaces/{name}", RoleViewer, s.workspacePage)
	mux.handleLogs("GET /runs/{id}", s.runPage)
	return s.accessLog(securityHeaders(s.checkHost(s.auth.stripProxySecret(mux.mux)))), mux
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
	if s.auth.oidc != nil {
		// Ended sessions are deleted while serving.
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); s.auth.oidc.pruneLoop(pctx) }()
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
	writeText(w, http.StatusOK, "ok\n")
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if err := s.o.Control.Ready(); err != nil {
		writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
		return
	}
	writeText(w, http.StatusOK, "ok\n")
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// quietPaths are logged at debug level: probes and scrapes would drown
// the access log at info.
var quietPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// accessLog logs one line per request: method, path (never the query
// string, which could carry anything), status, bytes and duration. Headers,
// and so the Authorization header, are never logged.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.o.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		level := slog.LevelInfo
		if quietPaths[r.URL.Path] && rec.status < 500 {
			level = slog.LevelDebug
		}
		s.o.Logger.LogAttrs(r.Context(), level, "http request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
			slog.Duration("duration", s.o.Now().Sub(start)),
		)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer
// (promhttp flushes through it).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
