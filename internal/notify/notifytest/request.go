package notifytest

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// Request is one request as a vendor server received it.
type Request struct {
	Method string
	Path   string // the path as the server routes it, e.g. /v2/alerts/drift-x/notes (unescaped; the GitLab server keeps it escaped, as project ids are on the wire)
	Query  string // raw query, e.g. identifierType=alias
	Header http.Header
	Body   []byte
}

// JSON decodes the request body into a generic map (nil if empty).
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	if len(r.Body) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v", r.Method, r.Path, err)
	}
	return m
}

// MustJSON is v encoded as JSON, as a request body the tests expect.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %T: %v", v, err)
	}
	return string(b)
}

// requestLog records the requests a server receives, before injected
// failures or the server's handler see them: what each server's Requests
// returns.
type requestLog struct {
	// maxBody caps how many bytes of a body are read, kept and handed on
	// (0: all of it).
	maxBody int64
	// escaped records the path as sent (r.URL.EscapedPath), not unescaped.
	escaped bool

	mu       sync.Mutex
	requests []Request
}

// wrap records each request, then hands it to next with its body
// restored.
func (l *requestLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var src io.Reader = r.Body
		if l.maxBody > 0 {
			src = io.LimitReader(r.Body, l.maxBody)
		}
		body, _ := io.ReadAll(src)
		r.Body = io.NopCloser(bytes.NewReader(body))
		path := r.URL.Path
		if l.escaped {
			path = r.URL.EscapedPath()
		}
		l.mu.Lock()
		l.requests = append(l.requests, Request{
			Method: r.Method, Path: path, Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: body,
		})
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// all returns every request recorded, in order.
func (l *requestLog) all() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// httpServer is what the vendor HTTP servers here share: an httptest TLS
// server and the log of the requests it received.
type httpServer struct {
	srv *httptest.Server
	log requestLog
}

// start serves h, behind the request log, on an httptest TLS server (see
// startTLS) that closes when the test ends, after f (the server's Faults,
// which h must include) closes.
func (s *httpServer) start(t testing.TB, f *Faults, h http.Handler) {
	s.srv = startTLS(s.log.wrap(h))
	t.Cleanup(func() {
		f.Close()
		s.srv.Close()
	})
}

// HTTPClient trusts the server's certificate, and routes example.com and
// its subdomains to the server.
func (s *httpServer) HTTPClient() *http.Client { return s.srv.Client() }

// Certificate is the server's TLS certificate (the httptest one shared by
// every TLS server here), for a ca_file.
func (s *httpServer) Certificate() *x509.Certificate { return s.srv.Certificate() }

// Requests returns every request received, in order, whatever the
// answer: injected failures and refusals included.
func (s *httpServer) Requests() []Request { return s.log.all() }

// SecretFile writes secret and a newline to a file called name in a new
// temporary directory, for a notifier's *_file setting, and returns its
// path.
func SecretFile(t testing.TB, name, secret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeJSON answers with status and body as JSON of contentType.
func writeJSON(w http.ResponseWriter, status int, contentType string, body any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
