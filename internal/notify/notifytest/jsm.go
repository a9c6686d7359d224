package notifytest

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// JSMPathPrefix is where JSMServer serves the integration API, as
// api.atlassian.com does.
const JSMPathPrefix = "/jsm/ops/integration"

// JSMServer is a local Jira Service Management integration API (the
// "Integration events" of an API integration) on an httptest TLS server
// on 127.0.0.1:
//
//	POST /jsm/ops/integration/v2/alerts                                            create
//	POST /jsm/ops/integration/v2/alerts/{alias}/notes?identifierType=alias        add note
//	POST /jsm/ops/integration/v2/alerts/{alias}/close?identifierType=alias        close
//	POST /jsm/ops/integration/v2/alerts/{alias}/acknowledge?identifierType=alias  acknowledge
//
// Like the service it checks "Authorization: GenieKey <key>" (401
// otherwise), answers an accepted request with 202 {"result":"Request
// will be processed","took":...,"requestId":...} and processes it after
// answering: a create whose alias matches an open alert is de-duplicated
// (the alert's count goes up, no second alert), an action on an alias
// without an alert is accepted and fails when processed (see Statuses).
// Errors are {"message":...,"took":...,"requestId":...}, with "errors"
// per field for a 422. Stricter than the service, where that catches
// bugs: bodies with fields outside the documented ones (plus priority,
// which the OpsGenie-compatible create takes) are 422s, field limits
// (OpsGenie's: message 130, alias 512, description 15000, entity 512,
// source 100, 20 tags of 50, note 25000 characters) are 422s rather than
// silent truncation, and actions look alerts up by alias only. Texts are
// illustrative, not copied from the service.
type JSMServer struct {
	Faults

	// APIKey is the only key accepted: a random canary that must never
	// appear in errors or logs.
	APIKey string
	// KeyFile holds APIKey (for Config.APIKeyFile).
	KeyFile string

	srv *httptest.Server

	mu       sync.Mutex
	seq      int
	requests []Request
	alerts   []*JSMAlert
	statuses []JSMStatus
}

// JSMAlert is an alert as the server holds it.
type JSMAlert struct {
	ID          string
	Alias       string
	Message     string
	Description string
	Priority    string
	Tags        []string
	Details     map[string]string
	Entity      string
	Source      string
	Responders  []JSMResponder
	// Status is open, acknowledged (still open) or closed.
	Status string
	// Count is how many creates it received (de-duplication raises it).
	Count     int
	Notes     []string
	CloseNote string
}

// open reports whether a create with its alias is de-duplicated into it.
func (a *JSMAlert) open() bool { return a.Status != "closed" }

// JSMResponder is a responder as sent in a create.
type JSMResponder struct {
	Type     string `json:"type"`
	ID       string `json:"id,omitempty"`
	Name     string `json:"name,omitempty"`
	Username string `json:"username,omitempty"`
}

// JSMStatus is how the server processed one accepted request.
type JSMStatus struct {
	RequestID string
	Action    string // Create, AddNote, Close, Acknowledge
	Alias     string
	Success   bool
	// Status is e.g. "Created alert", "Alert is de-duplicated", "Alert
	// does not exist".
	Status string
}

// NewJSMServer starts a server that lives until the test ends.
func NewJSMServer(t testing.TB) *JSMServer {
	t.Helper()
	s := &JSMServer{APIKey: Canary("jsm-key")}
	s.KeyFile = filepath.Join(t.TempDir(), "jsm-api-key")
	if err := os.WriteFile(s.KeyFile, []byte(s.APIKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.srv = startTLS(s.record(s.Wrap(http.HandlerFunc(s.serve))))
	t.Cleanup(func() {
		s.Faults.Close()
		s.srv.Close()
	})
	return s
}

// APIURL is the value for the notifier's api_url: the server's base URL
// with the integration API's path prefix.
func (s *JSMServer) APIURL() string { return s.srv.URL + JSMPathPrefix }

// URL is the server's real address (https://127.0.0.1:port).
func (s *JSMServer) URL() string { return s.srv.URL }

// HTTPClient trusts the server's certificate.
func (s *JSMServer) HTTPClient() *http.Client { return s.srv.Client() }

// Certificate is the server's TLS certificate, for a ca_file.
func (s *JSMServer) Certificate() *x509.Certificate { return s.srv.Certificate() }

// Secrets implements ServerControl.
func (s *JSMServer) Secrets() []string { return []string{s.APIKey} }

// Requests returns every request received, in order, including those
// answered by an injected failure.
func (s *JSMServer) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Statuses returns how each accepted request was processed, in order.
func (s *JSMServer) Statuses() []JSMStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses)
}

// Alerts returns copies of all alerts, in creation order.
func (s *JSMServer) Alerts() []JSMAlert {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]JSMAlert, 0, len(s.alerts))
	for _, a := range s.alerts {
		out = append(out, a.clone())
	}
	return out
}

// Alert returns the open alert with alias, or else the latest closed one.
func (s *JSMServer) Alert(alias string) (JSMAlert, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.find(alias, false); a != nil {
		return a.clone(), true
	}
	return JSMAlert{}, false
}

func (a *JSMAlert) clone() JSMAlert {
	c := *a
	c.Tags = slices.Clone(a.Tags)
	c.Notes = slices.Clone(a.Notes)
	c.Responders = slices.Clone(a.Responders)
	c.Details = maps.Clone(a.Details)
	return c
}

// find returns the open alert with alias; unless openOnly, else the
// latest closed one. s.mu must be held.
func (s *JSMServer) find(alias string, openOnly bool) *JSMAlert {
	var closed *JSMAlert
	for _, a := range s.alerts {
		if a.Alias != alias {
			continue
		}
		if a.open() {
			return a
		}
		closed = a
	}
	if openOnly {
		return nil
	}
	return closed
}

func (s *JSMServer) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.requests = append(s.requests, Request{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: body,
		})
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (s *JSMServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "GenieKey "+s.APIKey {
		s.reply(w, http.StatusUnauthorized, map[string]any{"message": "Key format is not valid or the key does not belong to an API integration"})
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, JSMPathPrefix+"/v2/alerts")
	if !ok || r.Method != http.MethodPost {
		s.reply(w, http.StatusNotFound, map[string]any{"message": fmt.Sprintf("No handler for %s %s", r.Method, r.URL.Path)})
		return
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case rest == "":
		s.create(w, r)
	case len(parts) == 2 && parts[0] != "" && (parts[1] == "notes" || parts[1] == "close" || parts[1] == "acknowledge"):
		s.action(w, r, parts[0], parts[1])
	default:
		s.reply(w, http.StatusNotFound, map[string]any{"message": fmt.Sprintf("No handler for %s %s", r.Method, r.URL.Path)})
	}
}

// jsmCreate is the create body: the documented fields and priority.
type jsmCreate struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description"`
	Responders  []JSMResponder    `json:"responders"`
	VisibleTo   []JSMResponder    `json:"visibleTo"`
	Actions     []string          `json:"actions"`
	Tags        []string          `json:"tags"`
	Details     map[string]string `json:"details"`
	Entity      string            `json:"entity"`
	Source      string            `json:"source"`
	Priority    string            `json:"priority"`
}

func (s *JSMServer) create(w http.ResponseWriter, r *http.Request) {
	var c jsmCreate
	if err := strictDecode(r.Body, &c); err != nil {
		s.unprocessable(w, map[string]string{"body": err.Error()})
		return
	}
	errs := map[string]string{}
	if strings.TrimSpace(c.Message) == "" {
		errs["message"] = "Message can not be empty."
	}
	limit := func(field, v string, n int) {
		if utf8.RuneCountInString(v) > n {
			errs[field] = fmt.Sprintf("longer than %d characters", n)
		}
	}
	limit("message", c.Message, 130)
	limit("alias", c.Alias, 512)
	limit("description", c.Description, 15000)
	limit("entity", c.Entity, 512)
	limit("source", c.Source, 100)
	if len(c.Tags) > 20 {
		errs["tags"] = "more than 20 tags"
	}
	for _, t := range c.Tags {
		limit("tags", t, 50)
	}
	if c.Priority != "" && !validOpsGeniePriority(c.Priority) {
		errs["priority"] = "should be one of P1..P5"
	}
	for i, rs := range c.Responders {
		switch rs.Type {
		case "team", "escalation", "schedule":
			if rs.Name == "" && rs.ID == "" {
				errs[fmt.Sprintf("responders[%d]", i)] = "name or id required"
			}
		case "user":
			if rs.Username == "" && rs.ID == "" {
				errs[fmt.Sprintf("responders[%d]", i)] = "username or id required"
			}
		default:
			errs[fmt.Sprintf("responders[%d].type", i)] = "unknown responder type " + rs.Type
		}
	}
	if len(errs) > 0 {
		s.unprocessable(w, errs)
		return
	}

	s.mu.Lock()
	id := s.nextID("req")
	st := JSMStatus{RequestID: id, Action: "Create", Alias: c.Alias, Success: true}
	var a *JSMAlert
	if c.Alias != "" {
		a = s.find(c.Alias, true)
	}
	if a != nil {
		a.Count++
		st.Status = "Alert is de-duplicated"
	} else {
		prio := c.Priority
		if prio == "" {
			prio = "P3"
		}
		a = &JSMAlert{
			ID: s.nextID("alert"), Alias: c.Alias, Message: c.Message,
			Description: c.Description, Priority: prio, Tags: c.Tags,
			Details: c.Details, Entity: c.Entity, Source: c.Source,
			Responders: c.Responders, Status: "open", Count: 1,
		}
		if a.Alias == "" {
			a.Alias = a.ID
			st.Alias = a.ID
		}
		s.alerts = append(s.alerts, a)
		st.Status = "Created alert"
	}
	s.statuses = append(s.statuses, st)
	s.mu.Unlock()
	s.accepted(w, id)
}

func (s *JSMServer) action(w http.ResponseWriter, r *http.Request, alias, verb string) {
	if q := r.URL.Query().Get("identifierType"); q != "alias" {
		s.unprocessable(w, map[string]string{"identifierType": fmt.Sprintf("this fake looks alerts up by alias only, got %q", q)})
		return
	}
	var body struct {
		Note   string `json:"note"`
		Source string `json:"source"`
		User   string `json:"user"`
	}
	if err := strictDecode(r.Body, &body); err != nil {
		s.unprocessable(w, map[string]string{"body": err.Error()})
		return
	}
	errs := map[string]string{}
	if utf8.RuneCountInString(body.Note) > 25000 {
		errs["note"] = "longer than 25000 characters"
	}
	if utf8.RuneCountInString(body.Source) > 100 {
		errs["source"] = "longer than 100 characters"
	}
	if verb == "notes" && strings.TrimSpace(body.Note) == "" {
		errs["note"] = "Note can not be empty."
	}
	if len(errs) > 0 {
		s.unprocessable(w, errs)
		return
	}

	s.mu.Lock()
	id := s.nextID("req")
	st := JSMStatus{RequestID: id, Action: map[string]string{"notes": "AddNote", "close": "Close", "acknowledge": "Acknowledge"}[verb], Alias: alias}
	// A note goes to the latest alert with the alias (open or closed);
	// close and acknowledge only to an open one.
	a := s.find(alias, verb != "notes")
	if a == nil {
		st.Status = "Alert does not exist"
	} else {
		switch verb {
		case "notes":
			a.Notes = append(a.Notes, body.Note)
		case "close":
			a.Status = "closed"
			a.CloseNote = body.Note
		case "acknowledge":
			a.Status = "acknowledged"
		}
		st.Success, st.Status = true, "Request processed"
	}
	s.statuses = append(s.statuses, st)
	s.mu.Unlock()
	s.accepted(w, id)
}

// strictDecode decodes one JSON object, refusing unknown fields.
func strictDecode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (s *JSMServer) accepted(w http.ResponseWriter, requestID string) {
	jsmReply(w, http.StatusAccepted, requestID, map[string]any{"result": "Request will be processed"})
}

func (s *JSMServer) unprocessable(w http.ResponseWriter, errs map[string]string) {
	s.reply(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Request body is not processable. Please check the errors.", "errors": errs,
	})
}

func (s *JSMServer) reply(w http.ResponseWriter, status int, body map[string]any) {
	s.mu.Lock()
	id := s.nextID("req")
	s.mu.Unlock()
	jsmReply(w, status, id, body)
}

func jsmReply(w http.ResponseWriter, status int, requestID string, body map[string]any) {
	body["took"] = 0.003
	body["requestId"] = requestID
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// nextID returns a fresh id; s.mu must be held.
func (s *JSMServer) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%04d", prefix, s.seq)
}
