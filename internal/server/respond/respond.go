package respond

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// JSON writes v as indented JSON with status code.
func JSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Every value written here is built from plain strings, numbers and
		// times; a marshalling failure is a programming error.
		code = http.StatusInternalServerError
		b = []byte(`{"error": "internal error: encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// Error writes the API's error body, {"error": msg}.
func Error(w http.ResponseWriter, code int, msg string) {
	JSON(w, code, apitypes.Error{Error: msg})
}

// Text writes body as plain text.
func Text(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// Refuse answers a refused API request: a 401 challenges for a bearer
// token. msg is a sentence without its capital and full stop.
func Refuse(w http.ResponseWriter, code int, msg string) {
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="driftwatch"`)
	}
	Error(w, code, msg)
}

// InternalError logs err and answers 500 without details: store errors
// can name files and drivers that are none of the client's business.
func InternalError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	logger.Error("http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	Error(w, http.StatusInternalServerError, "internal error (see the driftwatch log)")
}

// MaxBody bounds the body of every mutating request; a larger one is
// refused with 413 before the handler runs (Content-Length) or when it
// reads past the limit.
const MaxBody = 64 << 10

// LimitBody refuses a body declared larger than limit (413) and bounds
// the body's reading to limit (the handler's read fails with an
// *http.MaxBytesError).
func LimitBody(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if r.ContentLength > limit {
		Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", limit))
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	return true
}

// ReadBody reads a mutating request's whole body, at most limit bytes,
// before its handler runs, and gives the handler that copy: a body
// larger than limit is refused (413) whether its length is declared or
// it is chunked, and whether the handler would read it or not (a route
// that ignores its body would otherwise take any amount).
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if !LimitBody(w, r, limit) {
		return false
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", limit))
		return false
	case err != nil:
		Error(w, http.StatusBadRequest, "read body")
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	r.TransferEncoding = nil
	return true
}

// SetAuditTarget names the target of the request being answered, for an
// audited route whose target is not in its path (the silence a POST
// made): the guard's ResponseWriter on an audited route (w, or one it
// wraps) records it. A no-op on a route that is not audited.
func SetAuditTarget(w http.ResponseWriter, target string) {
	for w != nil {
		if t, ok := w.(interface{ SetAuditTarget(string) }); ok {
			t.SetAuditTarget(target)
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}
