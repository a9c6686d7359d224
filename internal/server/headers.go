package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

// readBody reads a mutating request's whole body, at most limit bytes,
// before its handler runs, and gives the handler that copy: a body
// larger than limit is refused (413) whether its length is declared or
// it is chunked, and whether the handler would read it or not (a route
// that ignores its body would otherwise take any amount).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if !limitBody(w, r, limit) {
		return false
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", limit))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "read body")
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	r.TransferEncoding = nil
	return true
}
