package notifytest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TeamsServer is a local Workflows (Power Automate) trigger, "When a
// Teams webhook request is received", on an httptest TLS server on
// 127.0.0.1:
//
//	POST /workflows/{id}/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={sig}
//
// It checks each request as the trigger and the flow's "post card" action
// would: the path names the flow (404 WorkflowNotFound otherwise, and
// after Delete), the sig query parameter is the flow's signature (401
// otherwise), the method is POST, the body is JSON (Content-Type
// application/json) of the shape {"type":"message","attachments":[{
// "contentType":"application/vnd.microsoft.card.adaptive","contentUrl":
// null,"content":{"type":"AdaptiveCard","version":...,"body":[...]}}]}
// (400 otherwise). Errors are Azure's envelope {"error":{"code":...,
// "message":...}}; their codes and texts are illustrative. An accepted
// request gets 202 Accepted with an empty body (or AcceptStatus), and its
// cards are posted to the channel (Cards).
//
// Stricter than the service, where that catches bugs: the service accepts
// any JSON and the flow fails later (only its run history shows it); here
// a payload of the wrong shape is a 400, every card element must be one
// the notifier may use (TextBlock with text, RichTextBlock of TextRuns,
// FactSet with titled facts, Container with items) and every action an
// Action.OpenUrl with an absolute http(s) url, and a body over Teams'
// message limit (28 KB), which the flow would fail to post after a 202,
// is a 413 RequestEntityTooLarge.
type TeamsServer struct {
	Faults

	// Sig is the flow's signature, the URL's sig parameter: a canary that
	// must never appear in errors or logs.
	Sig string
	// WorkflowID names the flow in the URL's path: a canary too.
	WorkflowID string
	// URLFile holds WebhookURL() (for Config.WebhookURLFile).
	URLFile string
	// AcceptStatus is the status of an accepted request (0: 202).
	AcceptStatus int

	httpServer

	mu      sync.Mutex
	deleted bool
	cards   []map[string]any
}

// TeamsMaxMessage is Teams' limit on a message, in bytes (about 28 KB).
const TeamsMaxMessage = 28 * 1024

// Workflows and Adaptive Card constants the server checks.
const (
	teamsCardContentType = "application/vnd.microsoft.card.adaptive"
	teamsTriggerPath     = "/triggers/manual/paths/invoke"
)

// NewTeamsServer starts a server that lives until the test ends.
func NewTeamsServer(t testing.TB) *TeamsServer {
	t.Helper()
	s := &TeamsServer{
		Sig: "canarysig" + randomHex(16), WorkflowID: "canaryflow" + randomHex(8),
		httpServer: httpServer{log: requestLog{maxBody: 4 * TeamsMaxMessage}},
	}
	s.start(t, &s.Faults, s.Wrap(http.HandlerFunc(s.serve)))
	s.URLFile = SecretFile(t, "teams-webhook-url", s.WebhookURL())
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// WebhookURL is the flow's trigger URL, signature included: a secret.
func (s *TeamsServer) WebhookURL() string {
	return s.URLWithSig(s.Sig)
}

// URLWithSig is the trigger URL with another signature (to test a
// refused one).
func (s *TeamsServer) URLWithSig(sig string) string {
	q := url.Values{"api-version": {"2016-06-01"}, "sp": {"/triggers/manual/run"}, "sv": {"1.0"}, "sig": {sig}}
	return s.srv.URL + "/workflows/" + s.WorkflowID + teamsTriggerPath + "?" + q.Encode()
}

// Secrets implements ServerControl: the URL, its signature and the flow's
// ID.
func (s *TeamsServer) Secrets() []string { return []string{s.WebhookURL(), s.Sig, s.WorkflowID} }

// Delete deletes the flow: every request gets 404 from now on.
func (s *TeamsServer) Delete() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleted = true
}

// Cards returns the cards posted to the channel, in order: the content of
// each accepted attachment.
func (s *TeamsServer) Cards() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cards)
}

func (s *TeamsServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	deleted := s.deleted
	s.mu.Unlock()
	if deleted || r.URL.Path != "/workflows/"+s.WorkflowID+teamsTriggerPath {
		teamsError(w, http.StatusNotFound, "WorkflowNotFound", "The workflow could not be found.")
		return
	}
	sig := r.URL.Query().Get("sig")
	switch {
	case sig == "":
		teamsError(w, http.StatusUnauthorized, "DirectApiAuthorizationRequired", "The request must be authenticated only by Shared Access scheme.")
		return
	case subtle.ConstantTimeCompare([]byte(sig), []byte(s.Sig)) != 1:
		// The real message may quote the signature: this one does, so the
		// notifier must redact it.
		teamsError(w, http.StatusUnauthorized, "DirectApiInvalidAuthorizationSignature", "The provided authorization signature '"+sig+"' is not valid.")
		return
	}
	if r.Method != http.MethodPost {
		teamsError(w, http.StatusMethodNotAllowed, "TriggerRequestMethodNotValid", "The HTTP method for this request is not valid: expected 'Post' and actual '"+r.Method+"'.")
		return
	}
	body, _ := io.ReadAll(r.Body)
	if len(body) > TeamsMaxMessage {
		teamsError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", fmt.Sprintf("The message is %d bytes; Teams allows %d (this fake).", len(body), TeamsMaxMessage))
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		teamsError(w, http.StatusBadRequest, "InvalidRequestContent", "The request content type must be 'application/json'.")
		return
	}
	cards, reason := parseTeamsMessage(body)
	if reason != "" {
		teamsError(w, http.StatusBadRequest, "InvalidRequestContent", reason)
		return
	}
	s.mu.Lock()
	s.cards = append(s.cards, cards...)
	status := s.AcceptStatus
	s.mu.Unlock()
	if status == 0 {
		status = http.StatusAccepted
	}
	w.WriteHeader(status)
}

// parseTeamsMessage returns the cards of a message, or why it is refused.
func parseTeamsMessage(body []byte) ([]map[string]any, string) {
	var msg struct {
		Type        string            `json:"type"`
		Attachments []json.RawMessage `json:"attachments"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, "The request content is not valid JSON: " + err.Error()
	}
	if msg.Type != "message" {
		return nil, fmt.Sprintf("'type' must be 'message', not %q.", msg.Type)
	}
	if len(msg.Attachments) == 0 {
		return nil, "'attachments' is missing or empty: the flow posts attachments[0].content."
	}
	var cards []map[string]any
	for i, raw := range msg.Attachments {
		var a map[string]any
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Sprintf("'attachments[%d]' is not an object.", i)
		}
		if ct := a["contentType"]; ct != teamsCardContentType {
			return nil, fmt.Sprintf("'attachments[%d].contentType' must be %q, not %v.", i, teamsCardContentType, ct)
		}
		if u, ok := a["contentUrl"]; ok && u != nil {
			return nil, fmt.Sprintf("'attachments[%d].contentUrl' must be null: the card is inline.", i)
		}
		c, ok := a["content"].(map[string]any)
		if !ok {
			return nil, fmt.Sprintf("'attachments[%d].content' is missing.", i)
		}
		if reason := checkAdaptiveCard(c); reason != "" {
			return nil, fmt.Sprintf("'attachments[%d].content': %s", i, reason)
		}
		cards = append(cards, c)
	}
	return cards, ""
}

// checkAdaptiveCard returns why c is not a card the notifier may send.
func checkAdaptiveCard(c map[string]any) string {
	if c["type"] != "AdaptiveCard" {
		return "'type' must be 'AdaptiveCard'."
	}
	if v, _ := c["version"].(string); v == "" {
		return "'version' is required."
	}
	body, ok := c["body"].([]any)
	if !ok || len(body) == 0 {
		return "'body' must be a non-empty array."
	}
	for i, e := range body {
		if r := checkCardElement(e); r != "" {
			return fmt.Sprintf("body[%d]: %s", i, r)
		}
	}
	if acts, ok := c["actions"]; ok {
		list, ok := acts.([]any)
		if !ok {
			return "'actions' must be an array."
		}
		for i, a := range list {
			m, _ := a.(map[string]any)
			if m["type"] != "Action.OpenUrl" {
				return fmt.Sprintf("actions[%d]: only Action.OpenUrl is expected (this fake).", i)
			}
			if t, _ := m["title"].(string); t == "" {
				return fmt.Sprintf("actions[%d]: 'title' is required.", i)
			}
			u, err := url.Parse(fmt.Sprint(m["url"]))
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return fmt.Sprintf("actions[%d]: 'url' must be an absolute http(s) URL.", i)
			}
		}
	}
	return ""
}

func checkCardElement(e any) string {
	m, ok := e.(map[string]any)
	if !ok {
		return "not an object."
	}
	switch m["type"] {
	case "TextBlock":
		if t, _ := m["text"].(string); strings.TrimSpace(t) == "" {
			return "TextBlock: 'text' is required."
		}
	case "RichTextBlock":
		inl, _ := m["inlines"].([]any)
		if len(inl) == 0 {
			return "RichTextBlock: 'inlines' is required."
		}
		for j, x := range inl {
			run, _ := x.(map[string]any)
			if run["type"] != "TextRun" {
				return fmt.Sprintf("RichTextBlock inlines[%d]: must be a TextRun.", j)
			}
			if t, _ := run["text"].(string); t == "" {
				return fmt.Sprintf("RichTextBlock inlines[%d]: 'text' is required.", j)
			}
		}
	case "FactSet":
		facts, _ := m["facts"].([]any)
		if len(facts) == 0 {
			return "FactSet: 'facts' is required."
		}
		for j, x := range facts {
			f, _ := x.(map[string]any)
			if t, _ := f["title"].(string); t == "" {
				return fmt.Sprintf("FactSet facts[%d]: 'title' is required.", j)
			}
			if _, ok := f["value"].(string); !ok {
				return fmt.Sprintf("FactSet facts[%d]: 'value' is required.", j)
			}
		}
	case "Container":
		items, _ := m["items"].([]any)
		if len(items) == 0 {
			return "Container: 'items' is required."
		}
		for j, x := range items {
			if r := checkCardElement(x); r != "" {
				return fmt.Sprintf("items[%d]: %s", j, r)
			}
		}
	default:
		return fmt.Sprintf("element type %v is not expected (this fake).", m["type"])
	}
	return ""
}

func teamsError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, "application/json; charset=utf-8", map[string]any{"error": map[string]any{"code": code, "message": message}})
}
