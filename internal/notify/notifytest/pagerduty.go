package notifytest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// PagerDutyServer is a local PagerDuty Events API v2 on an httptest TLS
// server on 127.0.0.1:
//
//	POST /v2/enqueue   an alert event: trigger, acknowledge or resolve
//
// It validates each event as the service documents: Content-Type
// application/json, a JSON body of at most 512 KB, a routing_key of 32
// characters, event_action trigger, acknowledge or resolve, a dedup_key
// of at most 255 characters (required for acknowledge and resolve), and
// for a trigger a payload with a summary (at most 1024 characters), a
// source and a severity of critical, error, warning or info; link hrefs
// and image srcs are required. A valid event gets 202
// {"status":"success","message":"Event processed","dedup_key":...}, an
// invalid one 400 {"status":"invalid event","message":"Event object is
// invalid","errors":[...]}.
//
// Like the service it de-duplicates: a trigger whose dedup_key matches an
// open (triggered or acknowledged) alert is added to that alert's log;
// otherwise it opens a new alert (with a generated dedup_key if none was
// sent). Acknowledge and resolve apply to the open alert with their
// dedup_key and are dropped, still with 202, when there is none.
// Stricter than the service, where that catches bugs: unknown fields are
// refused (400), a timestamp must be RFC 3339, and a routing key other
// than RoutingKey is a 400 (the service's answer to an unknown key is not
// documented). Error texts are illustrative, not copied from the service.
type PagerDutyServer struct {
	Faults

	// RoutingKey is the only key accepted: a random 32-character canary
	// that must never appear in errors or logs.
	RoutingKey string
	// KeyFile holds RoutingKey (for Config.RoutingKeyFile).
	KeyFile string

	httpServer

	mu     sync.Mutex
	seq    int
	alerts []*PagerDutyAlert
}

// PagerDutyRequest is one request as received, injected failures
// included.
type PagerDutyRequest = Request

// PagerDutyEvent is an alert event as the server decodes it.
type PagerDutyEvent struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"`
	DedupKey    string            `json:"dedup_key"`
	Payload     *PagerDutyPayload `json:"payload"`
	Images      []PagerDutyImage  `json:"images"`
	Links       []PagerDutyLink   `json:"links"`
	Client      string            `json:"client"`
	ClientURL   string            `json:"client_url"`
}

// PagerDutyPayload is an event's payload.
type PagerDutyPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp"`
	Component     string         `json:"component"`
	Group         string         `json:"group"`
	Class         string         `json:"class"`
	CustomDetails map[string]any `json:"custom_details"`
}

// PagerDutyLink is a link of an event.
type PagerDutyLink struct {
	Href string `json:"href"`
	Text string `json:"text"`
}

// PagerDutyImage is an image of an event.
type PagerDutyImage struct {
	Src  string `json:"src"`
	Href string `json:"href"`
	Alt  string `json:"alt"`
}

// PagerDutyAlert is an alert as the server holds it.
type PagerDutyAlert struct {
	DedupKey string
	// Status is triggered, acknowledged or resolved.
	Status string
	// Summary and Severity are the first trigger's (this fake does not
	// change them on a de-duplicated trigger; see Log for later ones).
	Summary  string
	Severity string
	// Log holds every event applied to the alert, in order.
	Log []PagerDutyEvent
}

// Triggers counts the trigger events in the alert's log.
func (a PagerDutyAlert) Triggers() int {
	n := 0
	for _, e := range a.Log {
		if e.EventAction == "trigger" {
			n++
		}
	}
	return n
}

// NewPagerDutyServer starts a server that lives until the test ends.
func NewPagerDutyServer(t testing.TB) *PagerDutyServer {
	t.Helper()
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	s := &PagerDutyServer{
		RoutingKey: "canarypd" + hex.EncodeToString(b), // 8 + 24 = 32
		httpServer: httpServer{log: requestLog{maxBody: pdMaxEvent + 1}},
	}
	s.KeyFile = SecretFile(t, "pagerduty-routing-key", s.RoutingKey)
	s.start(t, &s.Faults, s.Wrap(http.HandlerFunc(s.serve)))
	return s
}

// URL is the server's base URL (https://127.0.0.1:port), the value for
// the notifier's url.
func (s *PagerDutyServer) URL() string { return s.srv.URL }

// Secrets implements ServerControl.
func (s *PagerDutyServer) Secrets() []string { return []string{s.RoutingKey} }

// Alerts returns copies of all alerts, in creation order.
func (s *PagerDutyServer) Alerts() []PagerDutyAlert {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PagerDutyAlert, 0, len(s.alerts))
	for _, a := range s.alerts {
		c := *a
		c.Log = slices.Clone(a.Log)
		out = append(out, c)
	}
	return out
}

// Alert returns the open alert with dedupKey, or else the latest
// resolved one.
func (s *PagerDutyServer) Alert(dedupKey string) (PagerDutyAlert, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.find(dedupKey, false)
	if a == nil {
		return PagerDutyAlert{}, false
	}
	c := *a
	c.Log = slices.Clone(a.Log)
	return c, true
}

// find returns the open alert with key; unless openOnly, else the latest
// resolved one. s.mu must be held.
func (s *PagerDutyServer) find(key string, openOnly bool) *PagerDutyAlert {
	var resolved *PagerDutyAlert
	for _, a := range s.alerts {
		if a.DedupKey != key {
			continue
		}
		if a.Status != "resolved" {
			return a
		}
		resolved = a
	}
	if openOnly {
		return nil
	}
	return resolved
}

// Events API v2 limits.
const (
	pdMaxEvent    = 512000
	pdMaxSummary  = 1024
	pdMaxDedupKey = 255
	pdKeyLen      = 32
)

func (s *PagerDutyServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v2/enqueue" {
		pdReply(w, http.StatusNotFound, map[string]any{"status": "not found", "message": "No route for " + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		pdReply(w, http.StatusMethodNotAllowed, map[string]any{"status": "method not allowed", "message": "Use POST"})
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		pdInvalid(w, "Content-Type must be application/json")
		return
	}
	body, _ := io.ReadAll(r.Body)
	if len(body) > pdMaxEvent {
		pdInvalid(w, fmt.Sprintf("Event is larger than %d bytes", pdMaxEvent))
		return
	}
	var ev PagerDutyEvent
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		pdInvalid(w, "Event is not valid JSON: "+err.Error())
		return
	}
	if errs := s.validate(ev); len(errs) > 0 {
		pdInvalid(w, errs...)
		return
	}

	s.mu.Lock()
	key := ev.DedupKey
	switch ev.EventAction {
	case "trigger":
		a := (*PagerDutyAlert)(nil)
		if key != "" {
			a = s.find(key, true)
		} else {
			s.seq++
			key = fmt.Sprintf("generated-%04d", s.seq)
		}
		if a == nil {
			a = &PagerDutyAlert{DedupKey: key, Status: "triggered", Summary: ev.Payload.Summary, Severity: ev.Payload.Severity}
			s.alerts = append(s.alerts, a)
		}
		a.Log = append(a.Log, ev)
	case "acknowledge", "resolve":
		if a := s.find(key, true); a != nil {
			a.Status = map[string]string{"acknowledge": "acknowledged", "resolve": "resolved"}[ev.EventAction]
			a.Log = append(a.Log, ev)
		}
	}
	s.mu.Unlock()
	pdReply(w, http.StatusAccepted, map[string]any{"status": "success", "message": "Event processed", "dedup_key": key})
}

// validate returns why ev is invalid, if it is.
func (s *PagerDutyServer) validate(ev PagerDutyEvent) []string {
	var errs []string
	switch {
	case len(ev.RoutingKey) != pdKeyLen:
		errs = append(errs, fmt.Sprintf("Length of 'routing_key' is incorrect (should be %d characters)", pdKeyLen))
	case ev.RoutingKey != s.RoutingKey:
		errs = append(errs, "'routing_key' is not the key of an integration")
	}
	if utf8.RuneCountInString(ev.DedupKey) > pdMaxDedupKey {
		errs = append(errs, fmt.Sprintf("'dedup_key' is longer than %d characters", pdMaxDedupKey))
	}
	switch ev.EventAction {
	case "trigger":
		p := ev.Payload
		if p == nil {
			errs = append(errs, "'payload' is missing or blank")
			break
		}
		if strings.TrimSpace(p.Summary) == "" {
			errs = append(errs, "'payload.summary' is missing or blank")
		}
		if utf8.RuneCountInString(p.Summary) > pdMaxSummary {
			errs = append(errs, fmt.Sprintf("'payload.summary' is longer than %d characters", pdMaxSummary))
		}
		if strings.TrimSpace(p.Source) == "" {
			errs = append(errs, "'payload.source' is missing or blank")
		}
		switch p.Severity {
		case "critical", "error", "warning", "info":
		default:
			errs = append(errs, "'payload.severity' is invalid (must be one of the following: 'critical', 'warning', 'error' or 'info')")
		}
		if p.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339, p.Timestamp); err != nil {
				errs = append(errs, "'payload.timestamp' is not an RFC 3339 timestamp (this fake)")
			}
		}
	case "acknowledge", "resolve":
		if ev.DedupKey == "" {
			errs = append(errs, "'dedup_key' is missing or blank")
		}
	default:
		errs = append(errs, "'event_action' is invalid (must be one of the following: 'trigger', 'acknowledge' or 'resolve')")
	}
	for i, l := range ev.Links {
		if l.Href == "" {
			errs = append(errs, fmt.Sprintf("'links[%d].href' is missing or blank", i))
		}
	}
	for i, im := range ev.Images {
		if !strings.HasPrefix(im.Src, "https://") {
			errs = append(errs, fmt.Sprintf("'images[%d].src' must be an https URL", i))
		}
	}
	return errs
}

func pdInvalid(w http.ResponseWriter, errs ...string) {
	pdReply(w, http.StatusBadRequest, map[string]any{"status": "invalid event", "message": "Event object is invalid", "errors": errs})
}

func pdReply(w http.ResponseWriter, status int, body map[string]any) {
	writeJSON(w, status, "application/json", body)
}
