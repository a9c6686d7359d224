package notifytest

import (
	"net/http"
	"strings"
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

	httpServer
	genie genieAlerts
}

// JSMAlert is an alert as the server holds it: an OpsGenie alert, whose
// Status is open, acknowledged (still open) or closed.
type JSMAlert OpsGenieAlert

// JSMResponder is a responder as sent in a create, as OpsGenie has it.
type JSMResponder = OpsGenieResponder

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
	s := &JSMServer{
		APIKey: Canary("jsm-key"),
		genie: genieAlerts{
			unauthorized: "Key format is not valid or the key does not belong to an API integration",
			actions:      map[string]string{"notes": "AddNote", "close": "Close", "acknowledge": "Acknowledge"},
		},
	}
	s.KeyFile = SecretFile(t, "jsm-api-key", s.APIKey)
	s.start(t, &s.Faults, s.Wrap(http.HandlerFunc(s.serve)))
	return s
}

// APIURL is the value for the notifier's api_url: the server's base URL
// with the integration API's path prefix.
func (s *JSMServer) APIURL() string { return s.srv.URL + JSMPathPrefix }

// URL is the server's real address (https://127.0.0.1:port).
func (s *JSMServer) URL() string { return s.srv.URL }

// Secrets implements ServerControl.
func (s *JSMServer) Secrets() []string { return []string{s.APIKey} }

// Statuses returns how each accepted request was processed, in order.
func (s *JSMServer) Statuses() []JSMStatus {
	s.genie.mu.Lock()
	defer s.genie.mu.Unlock()
	out := make([]JSMStatus, 0, len(s.genie.statuses))
	for _, st := range s.genie.statuses {
		out = append(out, JSMStatus{RequestID: st.requestID, Action: st.action, Alias: st.alias, Success: st.success, Status: st.status})
	}
	return out
}

// Alerts returns copies of all alerts, in creation order.
func (s *JSMServer) Alerts() []JSMAlert {
	all := s.genie.all()
	out := make([]JSMAlert, 0, len(all))
	for _, a := range all {
		out = append(out, JSMAlert(a))
	}
	return out
}

// Alert returns the open alert with alias, or else the latest closed one.
func (s *JSMServer) Alert(alias string) (JSMAlert, bool) {
	a, ok := s.genie.alert(alias)
	return JSMAlert(a), ok
}

func (s *JSMServer) serve(w http.ResponseWriter, r *http.Request) {
	if !s.genie.authorized(w, r, s.APIKey) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, JSMPathPrefix+"/v2/alerts")
	if !ok || r.Method != http.MethodPost {
		s.genie.notFound(w, r)
		return
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case rest == "":
		s.create(w, r)
	case len(parts) == 2 && parts[0] != "" && (parts[1] == "notes" || parts[1] == "close" || parts[1] == "acknowledge"):
		s.action(w, r, parts[0], parts[1])
	default:
		s.genie.notFound(w, r)
	}
}

func (s *JSMServer) create(w http.ResponseWriter, r *http.Request) {
	var c genieCreate
	if err := strictDecode(r.Body, &c); err != nil {
		s.genie.unprocessable(w, map[string]string{"body": err.Error()})
		return
	}
	if errs := c.check(); len(errs) > 0 {
		s.genie.unprocessable(w, errs)
		return
	}
	s.genie.create(w, &c, "")
}

func (s *JSMServer) action(w http.ResponseWriter, r *http.Request, alias, verb string) {
	if !s.genie.byAlias(w, r) {
		return
	}
	var body struct {
		Note   string `json:"note"`
		Source string `json:"source"`
		User   string `json:"user"`
	}
	if err := strictDecode(r.Body, &body); err != nil {
		s.genie.unprocessable(w, map[string]string{"body": err.Error()})
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
		s.genie.unprocessable(w, errs)
		return
	}
	s.genie.act(w, alias, verb, body.Note, "")
}
