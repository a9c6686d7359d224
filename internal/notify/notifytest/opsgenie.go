package notifytest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
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

	httpServer
	genie genieAlerts
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
	Status      string // open or closed (JSMServer's may also be acknowledged, still open)
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

// OpsGenieAPIURL is the host OpsGenieServer answers for.
const OpsGenieAPIURL = "api.example.com"

// NewOpsGenieServer starts a server that lives until the test ends.
func NewOpsGenieServer(t testing.TB) *OpsGenieServer {
	t.Helper()
	s := &OpsGenieServer{
		APIKey: Canary("og-key"),
		genie:  genieAlerts{unauthorized: "Could not authenticate", rateHeaders: true},
	}
	s.KeyFile = SecretFile(t, "opsgenie-api-key", s.APIKey)
	s.start(t, &s.Faults, s.Wrap(http.HandlerFunc(s.serve)))
	return s
}

// APIURL is the value for the notifier's api_url (HTTPClient routes it
// to the server).
func (s *OpsGenieServer) APIURL() string { return OpsGenieAPIURL }

// URL is the server's real address (https://127.0.0.1:port).
func (s *OpsGenieServer) URL() string { return s.srv.URL }

// Secrets implements ServerControl.
func (s *OpsGenieServer) Secrets() []string { return []string{s.APIKey} }

// SetPendingPolls makes each later create answer n request-status polls
// with 404 RequestNotProcessed before its status is available.
func (s *OpsGenieServer) SetPendingPolls(n int) {
	s.genie.mu.Lock()
	defer s.genie.mu.Unlock()
	s.genie.pending = n
}

// FailNextProcessing makes the next create be accepted (202) but fail when
// processed, with status as the request status text.
func (s *OpsGenieServer) FailNextProcessing(status string) {
	s.genie.mu.Lock()
	defer s.genie.mu.Unlock()
	s.genie.failProc = append(s.genie.failProc, status)
}

// Alerts returns copies of all alerts, in creation order.
func (s *OpsGenieServer) Alerts() []OpsGenieAlert { return s.genie.all() }

// Alert returns the open alert with alias, or else the latest closed one.
func (s *OpsGenieServer) Alert(alias string) (OpsGenieAlert, bool) { return s.genie.alert(alias) }

func (s *OpsGenieServer) serve(w http.ResponseWriter, r *http.Request) {
	if !s.genie.authorized(w, r, s.APIKey) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/alerts")
	if !ok {
		s.genie.reply(w, http.StatusNotFound, map[string]any{"message": "No handler found for path " + r.URL.Path})
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
		s.genie.notFound(w, r)
	}
}

// opsGenieCreate is the create body: JSM's, plus user and note.
type opsGenieCreate struct {
	genieCreate
	User string `json:"user"`
	Note string `json:"note"`
}

func (s *OpsGenieServer) create(w http.ResponseWriter, r *http.Request) {
	var c opsGenieCreate
	if err := strictDecode(r.Body, &c); err != nil {
		s.genie.unprocessable(w, map[string]string{"body": err.Error()})
		return
	}
	errs := c.check()
	if utf8.RuneCountInString(c.Note) > 25000 {
		errs["note"] = "longer than 25000 characters"
	}
	if len(errs) > 0 {
		s.genie.unprocessable(w, errs)
		return
	}
	s.genie.create(w, &c.genieCreate, c.Note)
}

func (s *OpsGenieServer) action(w http.ResponseWriter, r *http.Request, alias, verb string) {
	if !s.genie.byAlias(w, r) {
		return
	}
	var body struct {
		Note     string `json:"note"`
		Source   string `json:"source"`
		User     string `json:"user"`
		Priority string `json:"priority"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.genie.unprocessable(w, map[string]string{"body": err.Error()})
		return
	}
	if utf8.RuneCountInString(body.Note) > 25000 {
		s.genie.unprocessable(w, map[string]string{"note": "longer than 25000 characters"})
		return
	}
	switch verb {
	case "notes":
		if strings.TrimSpace(body.Note) == "" {
			s.genie.unprocessable(w, map[string]string{"note": "Note can not be empty."})
			return
		}
	case "priority":
		if !validOpsGeniePriority(body.Priority) {
			s.genie.unprocessable(w, map[string]string{"priority": "should be one of P1..P5"})
			return
		}
	}
	s.genie.act(w, alias, verb, body.Note, body.Priority)
}

func (s *OpsGenieServer) requestStatus(w http.ResponseWriter, id string) {
	g := &s.genie
	g.mu.Lock()
	i := slices.IndexFunc(g.statuses, func(st *genieStatus) bool { return st.requestID == id })
	ok := i >= 0
	notYet := ok && g.statuses[i].polls > 0
	if notYet {
		g.statuses[i].polls--
	}
	var data map[string]any
	if ok && !notYet {
		st := g.statuses[i]
		data = map[string]any{
			"success": st.success, "action": st.action, "processedAt": time.Now().UTC().Format(time.RFC3339Nano),
			"integrationId": "integration-1", "isSuccess": st.success, "status": st.status,
			"alertId": st.alertID, "alias": st.alias,
		}
	}
	g.mu.Unlock()
	switch {
	case !ok:
		g.reply(w, http.StatusNotFound, map[string]any{"message": "Request not found"})
	case notYet:
		w.Header().Set("X-Opsgenie-Errortype", "RequestNotProcessed")
		g.reply(w, http.StatusNotFound, map[string]any{"message": "Request not processed yet"})
	default:
		g.reply(w, http.StatusOK, map[string]any{"data": data})
	}
}

// OpsGenieAliasQuery is the raw query of an action by alias.
const OpsGenieAliasQuery = "identifierType=alias"
