package notifytest

import (
	"encoding/json"
	"net/http"
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
