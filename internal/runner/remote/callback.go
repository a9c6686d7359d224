package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/internal/tlsfiles/certfile"
)

// CallbackServer serves a Receiver's three routes, Route, ProceedRoute and
// LogRoute, and nothing else, on a listener of its own (the daemon's
// runner.kubernetes.callback_listen). Run pods execute workspaces' code:
// on its own port the callback can be the one port of the daemon a
// NetworkPolicy lets them reach, the API, status page and metrics of the
// main server staying out of their reach. Every other path is 404.
type CallbackServer struct {
	handler http.Handler
	log     *slog.Logger
	certs   *certfile.Reloader // nil: plain HTTP
}

// CallbackServerOptions configures a CallbackServer.
type CallbackServerOptions struct {
	Receiver *Receiver
	Logger   *slog.Logger
	// TLSCertFile and TLSKeyFile (PEM; both or neither) make it speak
	// HTTPS, TLS 1.2 or later, as the main server does with the same
	// files (server.tls_cert_file): the pair is loaded by
	// NewCallbackServer and read again whenever either file changes.
	TLSCertFile, TLSKeyFile string
}

// NewCallbackServer validates o and builds a CallbackServer.
func NewCallbackServer(o CallbackServerOptions) (*CallbackServer, error) {
	switch {
	case o.Receiver == nil:
		return nil, errors.New("driftwatch/runner/remote: CallbackServerOptions.Receiver is required")
	case o.Logger == nil:
		return nil, errors.New("driftwatch/runner/remote: CallbackServerOptions.Logger is required")
	case (o.TLSCertFile == "") != (o.TLSKeyFile == ""):
		return nil, errors.New("driftwatch/runner/remote: CallbackServerOptions.TLSCertFile and TLSKeyFile go together")
	}
	mux := http.NewServeMux()
	mux.Handle(Route, o.Receiver)
	mux.Handle(ProceedRoute, o.Receiver.ProceedHandler())
	mux.Handle(LogRoute, o.Receiver.LogHandler())
	s := &CallbackServer{handler: mux, log: o.Logger}
	if o.TLSCertFile != "" {
		var err error
		if s.certs, err = certfile.New(o.TLSCertFile, o.TLSKeyFile, o.Logger); err != nil {
			return nil, fmt.Errorf("callback server: TLS: %w", err)
		}
	}
	return s, nil
}

// Handler returns the server's handler: the three routes.
func (s *CallbackServer) Handler() http.Handler { return s.handler }

// Run listens on addr and serves until ctx is done, then shuts down
// (waiting up to 10s for requests in flight) and returns nil.
func (s *CallbackServer) Run(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("callback server: listen on %q: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened; it closes ln.
func (s *CallbackServer) Serve(ctx context.Context, ln net.Listener) error {
	// Bodies are capped by the Receiver (DefaultMaxBodyBytes); the
	// timeouts bound a slow or stuck client.
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	if s.certs != nil {
		srv.TLSConfig = s.certs.TLSConfig()
		s.log.Info("run callback listening (https)", "addr", ln.Addr().String())
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		s.log.Info("run callback listening (http)", "addr", ln.Addr().String())
		go func() { errc <- srv.Serve(ln) }()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("callback server: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), 10*time.Second,
		errors.New("callback server shutdown took longer than 10s"))
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("callback server did not shut down gracefully", "err", err)
		_ = srv.Close()
	}
	return nil
}
