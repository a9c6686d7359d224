package server

import (
	"fmt"
	"net/http"
)

// apiCSP is the Content-Security-Policy of every response but the pages
// (which set their own, as strict, in render): nothing may load, and no
// page may frame it.
const apiCSP = "default-src 'none'; frame-ancestors 'none'"

// maxBody bounds the body of every mutating request; a larger one is
// refused with 413 before the handler runs (Content-Length) or when it
// reads past the limit.
const maxBody = 64 << 10

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

// limitBody refuses a body declared larger than limit (413) and bounds
// the body's reading to limit (the handler's read fails with an
// *http.MaxBytesError, which tooLarge recognizes).
func limitBody(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", limit))
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	return true
}
