package notifytest

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/internal/notify/genie"
	"github.com/stretchr/testify/require"
)

// genieAlerts is the alert API that OpsGenieServer and JSMServer share:
// JSM's integration API is OpsGenie's Alert API v2 under another base
// path, with the same "GenieKey" authorization, the same alert fields and
// limits, de-duplication by alias, and requests accepted with 202 and
// processed afterwards. It holds the alerts and how each accepted request
// was processed; each server routes its own paths, decodes and checks its
// own bodies, then calls create or act.
type genieAlerts struct {
	// unauthorized is the message of a 401.
	unauthorized string
	// rateHeaders adds OpsGenie's X-Request-Id, X-Response-Time and
	// X-RateLimit-State headers to every answer.
	rateHeaders bool
	// actions names the action of a processed request by verb; a verb
	// not in it is its own name.
	actions map[string]string

	mu       sync.Mutex
	seq      int
	alerts   []*OpsGenieAlert
	statuses []*genieStatus
	pending  int
	failProc []string
}

// genieStatus is how an accepted request was processed.
type genieStatus struct {
	requestID string
	polls     int // polls left that answer "not processed yet"
	success   bool
	action    string
	status    string
	alertID   string
	alias     string
}

// open reports whether a create with the alert's alias is de-duplicated
// into it: it is open or acknowledged.
func (a *OpsGenieAlert) open() bool { return a.Status != "closed" }

func (a *OpsGenieAlert) clone() OpsGenieAlert {
	c := *a
	c.Tags = slices.Clone(a.Tags)
	c.Notes = slices.Clone(a.Notes)
	c.Responders = slices.Clone(a.Responders)
	c.Details = maps.Clone(a.Details)
	return c
}

// all returns copies of all alerts, in creation order.
func (g *genieAlerts) all() []OpsGenieAlert {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]OpsGenieAlert, 0, len(g.alerts))
	for _, a := range g.alerts {
		out = append(out, a.clone())
	}
	return out
}

// alert returns a copy of the open alert with alias, or else of the
// latest closed one.
func (g *genieAlerts) alert(alias string) (OpsGenieAlert, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a := g.find(alias, false); a != nil {
		return a.clone(), true
	}
	return OpsGenieAlert{}, false
}

// find returns the open alert with alias; unless openOnly, else the
// latest closed one. g.mu must be held.
func (g *genieAlerts) find(alias string, openOnly bool) *OpsGenieAlert {
	var closed *OpsGenieAlert
	for _, a := range g.alerts {
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

// authorized answers 401 unless r carries "Authorization: GenieKey key".
func (g *genieAlerts) authorized(w http.ResponseWriter, r *http.Request, key string) bool {
	if r.Header.Get("Authorization") == "GenieKey "+key {
		return true
	}
	g.reply(w, http.StatusUnauthorized, map[string]any{"message": g.unauthorized})
	return false
}

// byAlias answers 422 unless an action names its alert by alias.
func (g *genieAlerts) byAlias(w http.ResponseWriter, r *http.Request) bool {
	if q := r.URL.Query().Get("identifierType"); q != "alias" {
		g.unprocessable(w, map[string]string{"identifierType": fmt.Sprintf("this fake looks alerts up by alias only, got %q", q)})
		return false
	}
	return true
}

// genieCreate is the create body both APIs take: JSM's documented fields
// and priority.
type genieCreate struct {
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
}

// check returns what is wrong with c, by field, as OpsGenie's limits
// have it.
func (c *genieCreate) check() map[string]string {
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
	return errs
}

// create accepts a checked create (with note, if not empty, added to the
// alert) and processes it: into the open alert with its alias if there
// is one, else into a new alert (P3 by default); or, after
// FailNextProcessing, into a failed request status.
func (g *genieAlerts) create(w http.ResponseWriter, c *genieCreate, note string) {
	g.mu.Lock()
	id := g.nextID("req")
	st := &genieStatus{requestID: id, polls: g.pending, action: "Create", alias: c.Alias}
	if len(g.failProc) > 0 {
		st.status = g.failProc[0]
		g.failProc = g.failProc[1:]
	} else {
		var a *OpsGenieAlert
		if c.Alias != "" {
			a = g.find(c.Alias, true)
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
				ID: g.nextID("alert"), Alias: c.Alias, Message: c.Message,
				Description: c.Description, Priority: prio, Tags: c.Tags,
				Details: c.Details, Entity: c.Entity, Source: c.Source,
				Responders: c.Responders, Status: "open", Count: 1,
			}
			if a.Alias == "" {
				a.Alias = a.ID
			}
			g.alerts = append(g.alerts, a)
			st.status = "Created alert"
		}
		if note != "" {
			a.Notes = append(a.Notes, note)
		}
		st.success, st.alertID, st.alias = true, a.ID, a.Alias
	}
	g.statuses = append(g.statuses, st)
	g.mu.Unlock()
	g.accepted(w, id)
}

// act accepts a checked action (verb notes, close, acknowledge or
// priority) on the alert with alias and processes it. A note or a
// priority goes to the latest alert with the alias (open or closed);
// close and acknowledge only to an open one. An alias without such an
// alert is a failed request status.
func (g *genieAlerts) act(w http.ResponseWriter, alias, verb, note, priority string) {
	g.mu.Lock()
	id := g.nextID("req")
	action := verb
	if name, ok := g.actions[verb]; ok {
		action = name
	}
	st := &genieStatus{requestID: id, action: action, alias: alias}
	a := g.find(alias, verb == "close" || verb == "acknowledge")
	if a == nil {
		st.status = "Alert does not exist"
	} else {
		switch verb {
		case "notes":
			a.Notes = append(a.Notes, note)
		case "close":
			a.Status = "closed"
			a.CloseNote = note
		case "acknowledge":
			a.Status = "acknowledged"
		case "priority":
			a.Priority = priority
		}
		st.success, st.alertID, st.status = true, a.ID, "Request processed"
	}
	g.statuses = append(g.statuses, st)
	g.mu.Unlock()
	g.accepted(w, id)
}

func (g *genieAlerts) accepted(w http.ResponseWriter, requestID string) {
	g.replyWithID(w, http.StatusAccepted, requestID, map[string]any{"result": "Request will be processed"})
}

func (g *genieAlerts) unprocessable(w http.ResponseWriter, errs map[string]string) {
	g.reply(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Request body is not processable. Please check the errors.", "errors": errs,
	})
}

// notFound answers 404 for a route the API does not have.
func (g *genieAlerts) notFound(w http.ResponseWriter, r *http.Request) {
	g.reply(w, http.StatusNotFound, map[string]any{"message": fmt.Sprintf("No handler for %s %s", r.Method, r.URL.Path)})
}

func (g *genieAlerts) reply(w http.ResponseWriter, status int, body map[string]any) {
	g.mu.Lock()
	id := g.nextID("req")
	g.mu.Unlock()
	g.replyWithID(w, status, id, body)
}

func (g *genieAlerts) replyWithID(w http.ResponseWriter, status int, requestID string, body map[string]any) {
	body["took"] = 0.003
	body["requestId"] = requestID
	if g.rateHeaders {
		w.Header().Set("X-Request-Id", requestID)
		w.Header().Set("X-Response-Time", "0.003")
		w.Header().Set("X-RateLimit-State", "OK")
	}
	writeJSON(w, status, "application/json", body)
}

// nextID returns a fresh id; g.mu must be held.
func (g *genieAlerts) nextID(prefix string) string {
	g.seq++
	return fmt.Sprintf("%s-%04d", prefix, g.seq)
}

// strictDecode decodes one JSON object, refusing unknown fields.
func strictDecode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func validOpsGeniePriority(p string) bool {
	switch p {
	case "P1", "P2", "P3", "P4", "P5":
		return true
	}
	return false
}

// RequireGenieLimits checks an OpsGenie or JSM alert made of an incident
// too large for it (package genie's mapping): its message cut to the
// limit with an ellipsis, and its description, entity, tags and details
// each within theirs, the description ending with the count of findings
// left out.
func RequireGenieLimits(t testing.TB, message, description, entity string, tags []string, details map[string]string) {
	t.Helper()
	require.Equal(t, genie.MaxMessage, utf8.RuneCountInString(message))
	require.True(t, strings.HasSuffix(message, "…"))
	require.LessOrEqual(t, utf8.RuneCountInString(description), genie.MaxDescription)
	require.Regexp(t, `\n… and \d+ more \(see the status page\)$`, description)
	require.LessOrEqual(t, utf8.RuneCountInString(entity), genie.MaxEntity)
	require.Len(t, tags, genie.MaxTags)
	for _, tag := range tags {
		require.LessOrEqual(t, utf8.RuneCountInString(tag), genie.MaxTag)
	}
	for k, v := range details {
		require.LessOrEqual(t, utf8.RuneCountInString(v), genie.MaxDetailValue, k)
	}
}
