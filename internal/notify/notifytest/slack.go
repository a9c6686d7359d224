package notifytest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// SlackTestToken is the bot token a SlackServer accepts until SetToken.
const SlackTestToken = "xoxb-000000000000-0000000000000-driftwatchtesttoken"

// SlackWebhookChannel is the channel SlackServer.Messages lists incoming
// webhook messages under.
const SlackWebhookChannel = "webhook"

// SlackServer is a local Slack: the Web API methods driftwatch uses
// (chat.postMessage, chat.update, conversations.history,
// conversations.replies) and an incoming webhook, on the wire as Slack
// speaks them (form or JSON bodies, HTTP 200 with {"ok":false,"error":…}).
// It stores messages per channel with unique ts values and threads,
// enforces Slack's Block Kit limits, records every request, and injects
// failures. Use its APIURL with slack.OptionAPIURL and its WebhookURL as a
// webhook URL. It is safe for concurrent use.
//
// Unlike slack-go's slacktest it has chat.update and the conversations
// reads, and starts no goroutines of its own.
type SlackServer struct {
	// URL is the base URL, e.g. http://127.0.0.1:41234.
	URL string

	srv      *httptest.Server
	hookPath string        // /services/T…/B…/<secret>; the secret is random
	stopping chan struct{} // closed at cleanup: delayed answers give up

	mu       sync.Mutex
	token    string
	messages map[string][]*slackMsg // per channel, in posting order
	requests []SlackRequest
	failures []slackFailure
	lose     []string // methods ("" any) whose next response is dropped
	down     bool
	latency  time.Duration
	lastTS   int64 // microseconds
}

// SlackMessage is a stored message.
type SlackMessage struct {
	Channel string
	TS      string
	// ThreadTS is the parent's ts for a thread reply, "" for a top-level
	// message.
	ThreadTS string
	Text     string
	Blocks   json.RawMessage // as posted, "" if none
	Metadata *SlackMetadata
	// Broadcast marks a thread reply also sent to the channel.
	Broadcast bool
	// Edits counts chat.update calls on the message.
	Edits int
}

// SlackMetadata is Slack message metadata.
type SlackMetadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// SlackRequest is one request the server received.
type SlackRequest struct {
	HTTPMethod string
	// Path is the URL path, with the webhook secret replaced by "SECRET".
	Path string
	// Method is the Slack method ("chat.postMessage", …) or "webhook".
	Method      string
	ContentType string
	// Auth says how a token came: "bearer", "form" or "" (never the token).
	Auth string
	// Form holds form fields and query parameters, without "token".
	Form url.Values
	// JSON is a JSON body, without "token".
	JSON map[string]any
	// Status is the HTTP status answered, Error the Slack error ("" if ok).
	Status int
	Error  string
	// Lost is set when the request was processed but its response dropped.
	Lost bool
}

// Param returns a parameter as a string, from the form or the JSON body
// (JSON arrays and objects re-encoded).
func (r SlackRequest) Param(name string) string {
	if r.Form != nil && r.Form.Has(name) {
		return r.Form.Get(name)
	}
	v, ok := r.JSON[name]
	if !ok {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case bool, float64:
		return fmt.Sprint(v)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Blocks decodes the request's blocks (nil if it has none or they are not
// a JSON array).
func (r SlackRequest) Blocks() []map[string]any {
	var out []map[string]any
	if p := r.Param("blocks"); p != "" {
		_ = json.Unmarshal([]byte(p), &out)
	}
	return out
}

// Metadata decodes the request's message metadata (nil if none).
func (r SlackRequest) Metadata() *SlackMetadata {
	return parseSlackMetadata(r.Param("metadata"))
}

type slackFailure struct {
	method     string // "" for any
	status     int
	slackErr   string
	retryAfter time.Duration
	raw        *slackRaw
}

type slackRaw struct {
	retryAfter string
	body       string
	delay      time.Duration
}

type slackMsg struct {
	SlackMessage
	micros int64
}

// NewSlackServer starts a SlackServer on 127.0.0.1, stopped by t.Cleanup.
func NewSlackServer(t *testing.T) *SlackServer {
	t.Helper()
	secret := make([]byte, 12)
	if _, err := rand.Read(secret); err != nil {
		t.Fatalf("slack server: %v", err)
	}
	s := &SlackServer{
		token:    SlackTestToken,
		hookPath: "/services/T0DRIFTW/B0DRIFTW/" + hex.EncodeToString(secret),
		messages: map[string][]*slackMsg{},
		stopping: make(chan struct{}),
	}
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.stopping)
		s.srv.Close()
	})
	return s
}

// APIURL is the Web API base URL, ending in "/" as slack.OptionAPIURL needs.
func (s *SlackServer) APIURL() string { return s.URL + "/api/" }

// WebhookURL is the incoming webhook URL; its random path is the secret.
func (s *SlackServer) WebhookURL() string { return s.URL + s.hookPath }

// SetToken changes the bot token the server accepts.
func (s *SlackServer) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// AddMessage stores msg as if posted (Channel, Text, ThreadTS, Metadata,
// Blocks are used) and returns its ts, e.g. to fill a channel's history.
func (s *SlackServer) AddMessage(msg SlackMessage) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &slackMsg{SlackMessage: msg}
	m.Edits = 0
	m.micros, m.TS = s.nextTS()
	s.messages[m.Channel] = append(s.messages[m.Channel], m)
	return m.TS
}

// Requests returns every request received so far, in order.
func (s *SlackServer) Requests() []SlackRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// RequestsFor returns the requests to one method, in order.
func (s *SlackServer) RequestsFor(method string) []SlackRequest {
	var out []SlackRequest
	for _, r := range s.Requests() {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// Methods returns the method of every request so far, in order, for exact
// sequence assertions.
func (s *SlackServer) Methods() []string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, r.Method)
	}
	return out
}

// ResetRequests forgets the recorded requests (not the messages).
func (s *SlackServer) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// Messages returns a channel's top-level messages (not thread replies,
// even broadcast ones), oldest first. Webhook messages are under
// SlackWebhookChannel.
func (s *SlackServer) Messages(channel string) []SlackMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SlackMessage
	for _, m := range s.messages[channel] {
		if m.ThreadTS == "" {
			out = append(out, m.copy())
		}
	}
	return out
}

// Replies returns the replies in the thread of a parent, oldest first.
func (s *SlackServer) Replies(channel, threadTS string) []SlackMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SlackMessage
	for _, m := range s.messages[channel] {
		if m.ThreadTS == threadTS {
			out = append(out, m.copy())
		}
	}
	return out
}

func (m *slackMsg) copy() SlackMessage {
	c := m.SlackMessage
	c.Blocks = slices.Clone(m.Blocks)
	if m.Metadata != nil {
		md := *m.Metadata
		c.Metadata = &md
	}
	return c
}

// nextTS returns a unique, increasing ts: Slack's "seconds.micros".
func (s *SlackServer) nextTS() (int64, string) {
	us := time.Now().UnixMicro()
	if us <= s.lastTS {
		us = s.lastTS + 1
	}
	s.lastTS = us
	return us, fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}
