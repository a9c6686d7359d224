package notifytest

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// OpsGenieServer is a local OpsGenie Alert API v2 as the opsgenie-go-sdk-v2
// calls it, on an httptest TLS server on 127.0.0.1:
//
//	POST /v2/alerts                                     create (202 + requestId)
//	GET  /v2/alerts/requests/{requestId}                request status
//	POST /v2/alerts/{alias}/notes?identifierType=alias  add note (202)
//	POST /v2/alerts/{alias}/close?identifierType=alias  close (202)
//	PUT  /v2/alerts/{alias}/priority?identifierType=alias  update priority (202)
//
// Like the service it checks "Authorization: GenieKey <key>", de-duplicates
// a create whose alias matches an open alert (the count goes up, no second
// alert), processes requests asynchronously (request status, with
// SetPendingPolls for "not processed yet") and answers actions on unknown
// aliases with 202 and a failed request status. Stricter than the service:
// OpsGenie's field limits (message 130, alias 512, description 15000,
// entity 512, source 100, 20 tags of 50, note 25000 characters) and an
// identifierType other than alias are 422s rather than silent truncation
// or a lookup by id, and create bodies with unknown fields are refused.
// Status texts are illustrative, not copied from the service.
//
// The SDK uses https only for hosts containing "api", so point it at
// APIURL (a name under example.com, which HTTPClient routes to this server
// and whose certificate it trusts).
type OpsGenieServer struct {
	Faults

	// APIKey is the only key accepted: a random canary that must never
	// appear in errors or logs.
	APIKey string
	// KeyFile holds APIKey (for Config.APIKeyFile).
	KeyFile string

	srv *httptest.Server

	mu       sync.Mutex
	seq      int
	requests []OpsGenieRequest
	alerts   []*OpsGenieAlert
	statuses map[string]*opsGenieStatus
	pending  int
	failProc []string
}

// OpsGenieRequest is one request as received.
type OpsGenieRequest = Request

// OpsGenieAlert is an alert as the server holds it.
type OpsGenieAlert struct {
	ID          string
	Alias       string
	Message     string
	Description string
	Priority    string
	Tags        []string
	Details     map[string]string
	Entity      string
	Source      string
	Responders  []OpsGenieResponder
	Status      string // open or closed
	Count       int    // creates received (de-duplication raises it)
	Notes       []string
	CloseNote   string
}

// OpsGenieResponder is a responder as sent in a create.
type OpsGenieResponder struct {
	Type     string `json:"type"`
	Name     string `json:"name,omitempty"`
	ID       string `json:"id,omitempty"`
	Username string `json:"username,omitempty"`
}

type opsGenieStatus struct {
	polls   int // polls left that answer "not processed yet"
	success bool
	action  string
	status  string
	alertID string
	alias   string
}

// OpsGenieAPIURL is the host OpsGenieServer answers for.
const OpsGenieAPIURL = "api.example.com"

// NewOpsGenieServer starts a server that lives until the test ends.
func NewOpsGenieServer(t testing.TB) *OpsGenieServer {
	t.Helper()
	s := &OpsGenieServer{
		APIKey:   Canary("og-key"),
		statuses: map[string]*opsGenieStatus{},
	}
	s.KeyFile = filepath.Join(t.TempDir(), "opsgenie-api-key")
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

// APIURL is the value for the notifier's api_url.
func (s *OpsGenieServer) APIURL() string { return OpsGenieAPIURL }

// HTTPClient trusts the server's certificate and routes example.com and
// its subdomains (so APIURL) to it.
func (s *OpsGenieServer) HTTPClient() *http.Client { return s.srv.Client() }

// Certificate is the server's TLS certificate (the httptest one shared by
// every TLS server here), for a ca_file.
func (s *OpsGenieServer) Certificate() *x509.Certificate { return s.srv.Certificate() }

// URL is the server's real address (https://127.0.0.1:port).
func (s *OpsGenieServer) URL() string { return s.srv.URL }

// Secrets implements ServerControl.
func (s *OpsGenieServer) Secrets() []string { return []string{s.APIKey} }

// SetPendingPolls makes each later create answer n request-status polls
// with 404 RequestNotProcessed before its status is available.
func (s *OpsGenieServer) SetPendingPolls(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = n
}

// FailNextProcessing makes the next create be accepted (202) but fail when
// processed, with status as the request status text.
func (s *OpsGenieServer) FailNextProcessing(status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failProc = append(s.failProc, status)
}

// Requests returns every request received, in order, including those
// answered by an injected failure.
func (s *OpsGenieServer) Requests() []OpsGenieRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Alerts returns copies of all alerts, in creation order.
func (s *OpsGenieServer) Alerts() []OpsGenieAlert {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]OpsGenieAlert, 0, len(s.alerts))
	for _, a := range s.alerts {
		out = append(out, a.clone())
	}
	return out
}

// Alert returns the open alert with alias, or else the latest closed one.
func (s *OpsGenieServer) Alert(alias string) (OpsGenieAlert, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.find(alias, false)
	if a == nil {
		return OpsGenieAlert{}, false
	}
	return a.clone(), true
}

func (a *OpsGenieAlert) clone() OpsGenieAlert {
	c := *a
	c.Tags = slices.Clone(a.Tags)
	c.Notes = slices.Clone(a.Notes)
	c.Responders = slices.Clone(a.Responders)
	if a.Details != nil {
		c.Details = make(map[string]string, len(a.Details))
		for k, v := range a.Details {
			c.Details[k] = v
		}
	}
	return c
}

// find returns the open alert with alias; unless openOnly, else the
// latest closed one. s.mu must be held.
func (s *OpsGenieServer) find(alias string, openOnly bool) *OpsGenieAlert {
	var closed *OpsGenieAlert
	for _, a := range s.alerts {
		if a.Alias != alias {
			continue
		}
		if a.Status == "open" {
			return a
		}
		closed = a
	}
	if openOnly {
		return nil
	}
	return closed
}

func (s *OpsGenieServer) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.requests = append(s.requests, OpsGenieRequest{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: body,
		})
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (s *OpsGenieServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "GenieKey "+s.APIKey {
		s.reply(w, http.StatusUnauthorized, map[string]any{"message": "Could not authenticate"})
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/alerts")
	if !ok {
		s.reply(w, http.StatusNotFound, map[string]any{"message": "No handler found for path " + r.URL.Path})
		return
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case rest == "" && r.Method == http.MethodPost:
		s.create(w, r)
	case len(parts) == 2 && parts[0] == "requests" && r.Method == http.MethodGet:
		s.requestStatus(w, parts[1])
	case len(parts) == 2 && parts[1] == "notes" && r.Method == http.MethodPost,
		len(parts) == 2 && parts[1] == "close" && r.Method == http.MethodPost,
		len(parts) == 2 && parts[1] == "priority" && r.Method == http.MethodPut:
		s.action(w, r, parts[0], parts[1])
	default:
		s.reply(w, http.StatusNotFound, map[string]any{"message": fmt.Sprintf("No handler for %s %s", r.Method, r.URL.Path)})
	}
}

type opsGenieCreate struct {
	Message     string              `json:"message"`
	Alias       string              `json:"alias"`
	Description string              `json:"description"`
	Responders  []OpsGenieResponder `json:"responders"`
	VisibleTo   []OpsGenieResponder `json:"visibleTo"`
	Actions     []string            `json:"actions"`
	Tags        []string            `json:"tags"`
	Details     map[string]string   `json:"details"`
	Entity      string              `json:"entity"`
	Source      string              `json:"source"`
	Priority    string              `json:"priority"`
	User        string              `json:"user"`
	Note        string              `json:"note"`
}

func (s *OpsGenieServer) create(w http.ResponseWriter, r *http.Request) {
	var c opsGenieCreate
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
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
	limit("note", c.Note, 25000)
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
	st := &opsGenieStatus{polls: s.pending, action: "Create", alias: c.Alias}
	if len(s.failProc) > 0 {
		st.status = s.failProc[0]
		s.failProc = s.failProc[1:]
	} else {
		a := (*OpsGenieAlert)(nil)
		if c.Alias != "" {
			a = s.find(c.Alias, true)
		}
		if a != nil {
			a.Count++
			st.status = "Alert is de-duplicated"
		} else {
			prio := c.Priority
			if prio == "" {
				prio = "P3"
			}
			a = &OpsGenieAlert{
				ID: s.nextID("alert"), Alias: c.Alias, Message: c.Message,
				Description: c.Description, Priority: prio, Tags: c.Tags,
				Details: c.Details, Entity: c.Entity, Source: c.Source,
				Responders: c.Responders, Status: "open", Count: 1,
			}
			if a.Alias == "" {
				a.Alias = a.ID
			}
			s.alerts = append(s.alerts, a)
			st.status = "Created alert"
		}
		if c.Note != "" {
			a.Notes = append(a.Notes, c.Note)
		}
		st.success, st.alertID, st.alias = true, a.ID, a.Alias
	}
	s.statuses[id] = st
	s.mu.Unlock()
	s.accepted(w, id)
}

func (s *OpsGenieServer) action(w http.ResponseWriter, r *http.Request, alias, verb string) {
	if q := r.URL.Query().Get("identifierType"); q != "alias" {
		s.unprocessable(w, map[string]string{"identifierType": fmt.Sprintf("this fake looks alerts up by alias only, got %q", q)})
		return
	}
	var body struct {
		Note     string `json:"note"`
		Source   string `json:"source"`
		User     string `json:"user"`
		Priority string `json:"priority"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.unprocessable(w, map[string]string{"body": err.Error()})
		return
	}
	if utf8.RuneCountInString(body.Note) > 25000 {
		s.unprocessable(w, map[string]string{"note": "longer than 25000 characters"})
		return
	}
	switch verb {
	case "notes":
		if strings.TrimSpace(body.Note) == "" {
			s.unprocessable(w, map[string]string{"note": "Note can not be empty."})
			return
		}
	case "priority":
		if !validOpsGeniePriority(body.Priority) {
			s.unprocessable(w, map[string]string{"priority": "should be one of P1..P5"})
			return
		}
	}

	s.mu.Lock()
	id := s.nextID("req")
	st := &opsGenieStatus{action: verb, alias: alias}
	// Notes and priority apply to the latest alert (open or closed);
	// close only to an open one.
	a := s.find(alias, verb == "close")
	if a == nil {
		st.status = "Alert does not exist"
	} else {
		switch verb {
		case "notes":
			a.Notes = append(a.Notes, body.Note)
		case "close":
			a.Status = "closed"
			a.CloseNote = body.Note
		case "priority":
			a.Priority = body.Priority
		}
		st.success, st.alertID, st.status = true, a.ID, "Request processed"
	}
	s.statuses[id] = st
	s.mu.Unlock()
	s.accepted(w, id)
}

func (s *OpsGenieServer) requestStatus(w http.ResponseWriter, id string) {
	s.mu.Lock()
	st, ok := s.statuses[id]
	notYet := ok && st.polls > 0
	if notYet {
		st.polls--
	}
	var data map[string]any
	if ok && !notYet {
		data = map[string]any{
			"success": st.success, "action": st.action, "processedAt": time.Now().UTC().Format(time.RFC3339Nano),
			"integrationId": "integration-1", "isSuccess": st.success, "status": st.status,
			"alertId": st.alertID, "alias": st.alias,
		}
	}
	s.mu.Unlock()
	switch {
	case !ok:
		s.reply(w, http.StatusNotFound, map[string]any{"message": "Request not found"})
	case notYet:
		w.Header().Set("X-Opsgenie-Errortype", "RequestNotProcessed")
		s.reply(w, http.StatusNotFound, map[string]any{"message": "Request not processed yet"})
	default:
		s.reply(w, http.StatusOK, map[string]any{"data": data})
	}
}

func (s *OpsGenieServer) accepted(w http.ResponseWriter, requestID string) {
	s.replyWithID(w, http.StatusAccepted, requestID, map[string]any{"result": "Request will be processed"})
}

func (s *OpsGenieServer) unprocessable(w http.ResponseWriter, errs map[string]string) {
	s.reply(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Request body is not processable. Please check the errors.", "errors": errs,
	})
}

func (s *OpsGenieServer) reply(w http.ResponseWriter, status int, body map[string]any) {
	s.mu.Lock()
	id := s.nextID("req")
	s.mu.Unlock()
	s.replyWithID(w, status, id, body)
}

func (s *OpsGenieServer) replyWithID(w http.ResponseWriter, status int, requestID string, body map[string]any) {
	body["took"] = 0.003
	body["requestId"] = requestID
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", requestID)
	w.Header().Set("X-Response-Time", "0.003")
	w.Header().Set("X-RateLimit-State", "OK")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// nextID returns a fresh id; s.mu must be held.
func (s *OpsGenieServer) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%04d", prefix, s.seq)
}

func validOpsGeniePriority(p string) bool {
	switch p {
	case "P1", "P2", "P3", "P4", "P5":
		return true
	}
	return false
}

// OpsGenieAliasQuery is the raw query of an action by alias.
const OpsGenieAliasQuery = "identifierType=alias"
