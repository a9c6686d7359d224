package server

import (
	"log/slog"
	"net/http"
)

// apiCSP is the Content-Security-Policy of every response but the pages
// (which set their own, as strict, in render): nothing may load, and no
// page may frame it.
const apiCSP = "default-src 'none'; frame-ancestors 'none'"

// securityHeaders sets, on every response (the API, the pages, the
// probes, a refusal, the routes of Options.Handlers): nosniff, a
// Content-Security-Policy that forbids framing (pages replace it with
// their own, which forbids framing too), no Referer to other sites, and
// no framing for browsers that predate frame-ancestors.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", apiCSP)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
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
