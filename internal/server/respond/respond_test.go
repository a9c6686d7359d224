package respond

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The API's answers, to the byte: indented JSON and its newline, the
// error body, and a 401's bearer challenge.
func TestAnswers(t *testing.T) {
	w := httptest.NewRecorder()
	JSON(w, http.StatusAccepted, map[string]int{"n": 1})
	require.Equal(t, http.StatusAccepted, w.Code)
	require.Equal(t, "{\n  \"n\": 1\n}\n", w.Body.String())
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	require.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))

	w = httptest.NewRecorder()
	Refuse(w, http.StatusUnauthorized, "missing bearer token")
	require.JSONEq(t, `{"error": "missing bearer token"}`, w.Body.String())
	require.Equal(t, `Bearer realm="driftwatch"`, w.Header().Get("WWW-Authenticate"))
	w = httptest.NewRecorder()
	Refuse(w, http.StatusForbidden, "no")
	require.Empty(t, w.Header().Get("WWW-Authenticate"), "a 403 challenges for nothing")

	w = httptest.NewRecorder()
	JSON(w, http.StatusOK, func() {})
	require.Equal(t, http.StatusInternalServerError, w.Code, "a value that cannot be encoded")
	require.JSONEq(t, `{"error": "internal error: encode response"}`, w.Body.String())
}

// A mutating request's body is read whole before its handler, and
// refused beyond the limit whether its length is declared or not.
func TestReadBody(t *testing.T) {
	for name, chunked := range map[string]bool{"declared": false, "chunked": true} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", 11)))
			if chunked {
				r.ContentLength = -1
			}
			w := httptest.NewRecorder()
			require.False(t, ReadBody(w, r, 10))
			require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
			require.Contains(t, w.Body.String(), "body is larger than 10 bytes")
		})
	}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("ok"))
	require.True(t, ReadBody(httptest.NewRecorder(), r, 10))
	require.EqualValues(t, 2, r.ContentLength)
}

type targeted struct {
	http.ResponseWriter
	target string
}

func (t *targeted) SetAuditTarget(s string) { t.target = s }

type wrapper struct{ http.ResponseWriter }

func (w wrapper) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// SetAuditTarget reaches the audited writer through those that wrap it,
// and does nothing on a route that is not audited.
func TestSetAuditTarget(t *testing.T) {
	aw := &targeted{ResponseWriter: httptest.NewRecorder()}
	SetAuditTarget(wrapper{wrapper{aw}}, "sil-1")
	require.Equal(t, "sil-1", aw.target)
	SetAuditTarget(wrapper{httptest.NewRecorder()}, "nothing") // no panic, nothing to name
}
