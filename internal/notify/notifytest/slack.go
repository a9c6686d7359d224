package notifytest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
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

// FailNext makes the next n requests (any method) fail without effect:
// HTTP status (200 for an ok:false answer), Slack error slackErr in the
// body ("" for none), and a Retry-After header when retryAfter > 0
// (rounded up to whole seconds).
func (s *SlackServer) FailNext(n int, status int, slackErr string, retryAfter time.Duration) {
	s.FailNextOn("", n, status, slackErr, retryAfter)
}

// FailNextOn is FailNext for requests to one method ("chat.update",
// "webhook", …) only.
func (s *SlackServer) FailNextOn(method string, n int, status int, slackErr string, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, slackFailure{method: method, status: status, slackErr: slackErr, retryAfter: retryAfter})
	}
}

// FailNextRaw answers the next request (any method) with exactly this:
// the status, a Retry-After header if retryAfter is not empty, and body
// as application/json, after holding the answer back for delay (until the
// client gives up or the server stops, whichever is first).
func (s *SlackServer) FailNextRaw(status int, retryAfter, body string, delay time.Duration) {
	if status == 0 {
		status = http.StatusInternalServerError
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, slackFailure{status: status, raw: &slackRaw{retryAfter: retryAfter, body: body, delay: delay}})
}

// LoseNext processes the next n requests to method ("" any) normally but
// drops their responses (the connection closes): a post that happened
// although the client saw an error, as after a timeout or a crash.
func (s *SlackServer) LoseNext(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.lose = append(s.lose, method)
	}
}

// Down makes the server close every connection without answering until Up.
func (s *SlackServer) Down() {
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	s.srv.CloseClientConnections()
}

// Up undoes Down.
func (s *SlackServer) Up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
}

// SetLatency delays every answer by d (0: none), for timeout tests.
func (s *SlackServer) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
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

type slackAnswer struct {
	raw        *slackRaw
	status     int
	retryAfter time.Duration
	body       any    // JSON-encoded unless text is set
	text       string // plain-text body (webhooks)
	slackErr   string
}

func okAnswer(fields map[string]any) slackAnswer {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["ok"] = true
	return slackAnswer{status: http.StatusOK, body: fields}
}

func errAnswer(slackErr string) slackAnswer {
	return slackAnswer{status: http.StatusOK, body: map[string]any{"ok": false, "error": slackErr}, slackErr: slackErr}
}

func hookError(status int, code string) slackAnswer {
	return slackAnswer{status: status, text: code, slackErr: code}
}

// ServeHTTP implements http.Handler.
func (s *SlackServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down, latency := s.down, s.latency
	s.mu.Unlock()
	if down {
		closeConn(w)
		return
	}
	if !s.wait(r, latency) {
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	req, token := parseSlackRequest(r, body, s.hookPath)

	s.mu.Lock()
	var ans slackAnswer
	f, failed := s.takeFailure(req.Method)
	if failed {
		ans = f
	} else {
		ans = s.dispatch(&req, token)
	}
	lost := s.takeLose(req.Method)
	req.Status, req.Error, req.Lost = ans.status, ans.slackErr, lost
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	if ans.raw != nil {
		if !s.wait(r, ans.raw.delay) {
			return
		}
		if ans.raw.retryAfter != "" {
			w.Header().Set("Retry-After", ans.raw.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ans.status)
		_, _ = io.WriteString(w, ans.raw.body)
		return
	}

	if lost {
		closeConn(w)
		return
	}
	if ans.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((ans.retryAfter+time.Second-1)/time.Second)))
	}
	if ans.body == nil {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(ans.status)
		_, _ = io.WriteString(w, ans.text)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(ans.status)
	_ = json.NewEncoder(w).Encode(ans.body)
}

// wait holds a request for d; false if the client or the server gave up.
func (s *SlackServer) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.stopping:
	}
	return false
}

func closeConn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // closes the connection without a response
}

func parseSlackRequest(r *http.Request, body []byte, hookPath string) (SlackRequest, string) {
	req := SlackRequest{HTTPMethod: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type")}
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/"):
		req.Method = strings.TrimPrefix(r.URL.Path, "/api/")
	case strings.HasPrefix(r.URL.Path, "/services/"):
		req.Method = "webhook"
		if r.URL.Path == hookPath {
			req.Path = hookPath[:strings.LastIndex(hookPath, "/")+1] + "SECRET"
		}
	default:
		req.Method = r.URL.Path
	}
	mediaType, _, _ := mime.ParseMediaType(req.ContentType)
	req.Form = r.URL.Query()
	var token string
	switch mediaType {
	case "application/json":
		if err := json.Unmarshal(body, &req.JSON); err != nil {
			req.JSON = nil
		}
		if t, ok := req.JSON["token"].(string); ok {
			token = t
			req.Auth = "json"
			delete(req.JSON, "token")
		}
	default:
		if form, err := url.ParseQuery(string(body)); err == nil {
			for k, v := range form {
				req.Form[k] = append(req.Form[k], v...)
			}
		}
	}
	if req.Form.Has("token") {
		token, req.Auth = req.Form.Get("token"), "form"
		req.Form.Del("token")
	}
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		token, req.Auth = strings.TrimPrefix(h, "Bearer "), "bearer"
	}
	if len(req.Form) == 0 {
		req.Form = nil
	}
	return req, token
}

func (s *SlackServer) takeFailure(method string) (slackAnswer, bool) {
	for i, f := range s.failures {
		if f.method != "" && f.method != method {
			continue
		}
		s.failures = slices.Delete(s.failures, i, i+1)
		ans := slackAnswer{status: f.status, retryAfter: f.retryAfter, slackErr: f.slackErr, raw: f.raw}
		switch {
		case f.raw != nil:
		case method == "webhook":
			ans.text = f.slackErr
		case f.slackErr != "":
			ans.body = map[string]any{"ok": false, "error": f.slackErr}
		default:
			ans.text = http.StatusText(f.status)
		}
		return ans, true
	}
	return slackAnswer{}, false
}

func (s *SlackServer) takeLose(method string) bool {
	for i, m := range s.lose {
		if m == "" || m == method {
			s.lose = slices.Delete(s.lose, i, i+1)
			return true
		}
	}
	return false
}

// dispatch answers a request; s.mu is held.
func (s *SlackServer) dispatch(req *SlackRequest, token string) slackAnswer {
	if req.Method == "webhook" {
		if !strings.HasSuffix(req.Path, "/SECRET") {
			return hookError(http.StatusNotFound, "no_service")
		}
		return s.webhook(req)
	}
	if !strings.HasPrefix(req.Path, "/api/") {
		return slackAnswer{status: http.StatusNotFound, text: "not found"}
	}
	handler, ok := map[string]func(*SlackRequest) slackAnswer{
		"chat.postMessage":      s.postMessage,
		"chat.update":           s.update,
		"conversations.history": s.history,
		"conversations.replies": s.replies,
	}[req.Method]
	if !ok {
		return errAnswer("unknown_method")
	}
	switch {
	case token == "":
		return errAnswer("not_authed")
	case token != s.token:
		return errAnswer("invalid_auth")
	}
	return handler(req)
}

func (s *SlackServer) webhook(req *SlackRequest) slackAnswer {
	if req.JSON == nil {
		return hookError(http.StatusBadRequest, "invalid_payload")
	}
	text, blocks := req.Param("text"), req.Param("blocks")
	if text == "" && blocks == "" {
		return hookError(http.StatusBadRequest, "no_text")
	}
	if blocks != "" {
		if err := SlackCheckBlocks([]byte(blocks)); err != nil {
			return hookError(http.StatusBadRequest, "invalid_blocks")
		}
	}
	m := &slackMsg{SlackMessage: SlackMessage{Channel: SlackWebhookChannel, Text: text, Blocks: json.RawMessage(blocks)}}
	m.micros, m.TS = s.nextTS()
	s.messages[SlackWebhookChannel] = append(s.messages[SlackWebhookChannel], m)
	return slackAnswer{status: http.StatusOK, text: "ok"}
}

// messageContent validates and returns text, blocks and metadata.
func messageContent(req *SlackRequest, needContent bool) (text string, blocks json.RawMessage, md *SlackMetadata, slackErr string) {
	text = req.Param("text")
	if b := req.Param("blocks"); b != "" {
		if err := SlackCheckBlocks([]byte(b)); err != nil {
			code, _, _ := strings.Cut(err.Error(), ":")
			return "", nil, nil, code
		}
		blocks = json.RawMessage(b)
	}
	if needContent && text == "" && len(blocks) == 0 {
		return "", nil, nil, "no_text"
	}
	if utf8.RuneCountInString(text) > 40000 {
		return "", nil, nil, "msg_too_long"
	}
	if raw := req.Param("metadata"); raw != "" {
		if md = parseSlackMetadata(raw); md == nil || md.EventType == "" {
			return "", nil, nil, "invalid_metadata_format"
		}
	}
	return text, blocks, md, ""
}

func (s *SlackServer) postMessage(req *SlackRequest) slackAnswer {
	channel := req.Param("channel")
	if channel == "" {
		return errAnswer("channel_not_found")
	}
	text, blocks, md, slackErr := messageContent(req, true)
	if slackErr != "" {
		return errAnswer(slackErr)
	}
	m := &slackMsg{SlackMessage: SlackMessage{Channel: channel, Text: text, Blocks: blocks, Metadata: md}}
	if thread := req.Param("thread_ts"); thread != "" {
		if s.find(channel, thread) == nil {
			return errAnswer("thread_not_found")
		}
		m.ThreadTS = thread
		m.Broadcast = truthy(req.Param("reply_broadcast"))
	}
	m.micros, m.TS = s.nextTS()
	s.messages[channel] = append(s.messages[channel], m)
	return okAnswer(map[string]any{"channel": channel, "ts": m.TS, "message": s.wire(m, true)})
}

func (s *SlackServer) update(req *SlackRequest) slackAnswer {
	channel, ts := req.Param("channel"), req.Param("ts")
	if channel == "" {
		return errAnswer("channel_not_found")
	}
	m := s.find(channel, ts)
	if m == nil {
		for _, r := range s.messages[channel] {
			if r.TS == ts {
				m = r // a reply can be updated too
			}
		}
	}
	if m == nil {
		return errAnswer("message_not_found")
	}
	text, blocks, md, slackErr := messageContent(req, false)
	if slackErr != "" {
		return errAnswer(slackErr)
	}
	if req.Param("text") != "" || req.Param("blocks") == "" {
		m.Text = text
	}
	if req.Param("blocks") != "" {
		m.Blocks = blocks
	}
	if md != nil {
		m.Metadata = md
	}
	m.Edits++
	return okAnswer(map[string]any{"channel": channel, "ts": m.TS, "text": m.Text, "message": s.wire(m, true)})
}

func (s *SlackServer) history(req *SlackRequest) slackAnswer {
	channel := req.Param("channel")
	if channel == "" {
		return errAnswer("channel_not_found")
	}
	lo, hi, inclusive, ok := bounds(req)
	if !ok {
		return errAnswer("invalid_ts_oldest")
	}
	withMD := truthy(req.Param("include_all_metadata"))
	var all []map[string]any
	msgs := s.messages[channel]
	for i := len(msgs) - 1; i >= 0; i-- { // newest first
		m := msgs[i]
		if m.ThreadTS != "" && !m.Broadcast {
			continue
		}
		if !inRange(m.micros, lo, hi, inclusive) {
			continue
		}
		all = append(all, s.wire(m, withMD))
	}
	page, hasMore, next, slackErr := paginate(all, req)
	if slackErr != "" {
		return errAnswer(slackErr)
	}
	return okAnswer(map[string]any{
		"messages": page, "has_more": hasMore, "pin_count": 0,
		"response_metadata": map[string]any{"next_cursor": next},
	})
}

func (s *SlackServer) replies(req *SlackRequest) slackAnswer {
	channel, ts := req.Param("channel"), req.Param("ts")
	if channel == "" {
		return errAnswer("channel_not_found")
	}
	parent := s.find(channel, ts)
	if parent == nil {
		return errAnswer("thread_not_found")
	}
	lo, hi, inclusive, ok := bounds(req)
	if !ok {
		return errAnswer("invalid_ts_oldest")
	}
	withMD := truthy(req.Param("include_all_metadata"))
	var all []map[string]any
	for _, m := range s.messages[channel] {
		if m.ThreadTS == ts && inRange(m.micros, lo, hi, inclusive) {
			all = append(all, s.wire(m, withMD))
		}
	}
	page, hasMore, next, slackErr := paginate(all, req)
	if slackErr != "" {
		return errAnswer(slackErr)
	}
	if req.Param("cursor") == "" {
		page = append([]map[string]any{s.wire(parent, withMD)}, page...) // the parent leads the first page
	}
	return okAnswer(map[string]any{
		"messages": page, "has_more": hasMore,
		"response_metadata": map[string]any{"next_cursor": next},
	})
}

// find returns the top-level message ts of a channel.
func (s *SlackServer) find(channel, ts string) *slackMsg {
	for _, m := range s.messages[channel] {
		if m.TS == ts && m.ThreadTS == "" {
			return m
		}
	}
	return nil
}

// wire is a message as the Web API returns it.
func (s *SlackServer) wire(m *slackMsg, withMetadata bool) map[string]any {
	out := map[string]any{
		"type": "message", "user": "U0DRIFTBOT", "bot_id": "B0DRIFTBOT", "text": m.Text, "ts": m.TS,
	}
	if len(m.Blocks) > 0 {
		out["blocks"] = m.Blocks
	}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
		out["parent_user_id"] = "U0DRIFTBOT"
		if m.Broadcast {
			out["subtype"] = "thread_broadcast"
		}
	} else {
		var n int
		var latest string
		for _, r := range s.messages[m.Channel] {
			if r.ThreadTS == m.TS {
				n, latest = n+1, r.TS
			}
		}
		if n > 0 {
			out["thread_ts"], out["reply_count"], out["latest_reply"] = m.TS, n, latest
		}
	}
	if m.Edits > 0 {
		out["edited"] = map[string]any{"user": "U0DRIFTBOT", "ts": m.TS}
	}
	if withMetadata && m.Metadata != nil {
		out["metadata"] = m.Metadata
	}
	return out
}

func bounds(req *SlackRequest) (lo, hi int64, inclusive, ok bool) {
	lo, hi = -1, -1
	if v := req.Param("oldest"); v != "" && v != "0" {
		if lo, ok = parseTS(v); !ok {
			return 0, 0, false, false
		}
	}
	if v := req.Param("latest"); v != "" {
		if hi, ok = parseTS(v); !ok {
			return 0, 0, false, false
		}
	}
	return lo, hi, truthy(req.Param("inclusive")), true
}

func inRange(us, lo, hi int64, inclusive bool) bool {
	if lo >= 0 && (us < lo || (us == lo && !inclusive)) {
		return false
	}
	if hi >= 0 && (us > hi || (us == hi && !inclusive)) {
		return false
	}
	return true
}

// paginate applies limit (default 100, at most 999) and an opaque cursor.
func paginate(all []map[string]any, req *SlackRequest) (page []map[string]any, hasMore bool, next string, slackErr string) {
	limit := 100
	if v := req.Param("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, false, "", "invalid_limit"
		}
		if n > 0 {
			limit = min(n, 999)
		}
	}
	offset := 0
	if c := req.Param("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		if err != nil || !strings.HasPrefix(string(raw), "offset:") {
			return nil, false, "", "invalid_cursor"
		}
		if offset, err = strconv.Atoi(strings.TrimPrefix(string(raw), "offset:")); err != nil || offset < 0 {
			return nil, false, "", "invalid_cursor"
		}
	}
	if offset > len(all) {
		offset = len(all)
	}
	end := min(offset+limit, len(all))
	page = all[offset:end]
	if page == nil {
		page = []map[string]any{}
	}
	if end < len(all) {
		hasMore, next = true, base64.StdEncoding.EncodeToString([]byte("offset:"+strconv.Itoa(end)))
	}
	return page, hasMore, next, ""
}

// parseTS reads "seconds[.micros]" into microseconds.
func parseTS(v string) (int64, bool) {
	secs, frac, _ := strings.Cut(v, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || s < 0 {
		return 0, false
	}
	var us int64
	if frac != "" {
		if len(frac) > 6 {
			frac = frac[:6]
		}
		frac += strings.Repeat("0", 6-len(frac))
		if us, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return 0, false
		}
	}
	return s*1e6 + us, true
}

func truthy(v string) bool { return v == "1" || v == "true" }

func parseSlackMetadata(raw string) *SlackMetadata {
	if raw == "" {
		return nil
	}
	var md SlackMetadata
	if err := json.Unmarshal([]byte(raw), &md); err != nil {
		return nil
	}
	return &md
}

// Slack's Block Kit limits (api.slack.com/reference/block-kit/blocks).
const (
	slackMaxBlocks    = 50
	slackMaxSection   = 3000
	slackMaxHeader    = 150
	slackMaxField     = 2000
	slackMaxFields    = 10
	slackMaxContext   = 10
	slackMaxTotalText = 12000 // msg_blocks_too_long is reported at about 13k; we are stricter
)

// SlackCheckBlocks applies Slack's Block Kit limits to a JSON array of
// blocks: at most 50 blocks; header text plain_text and at most 150
// characters; section text at most 3000, at most 10 fields of at most 2000;
// at most 10 context elements; no empty text; and at most 12000 characters
// of text in all. The error starts with the code Slack would answer
// ("invalid_blocks: …" or "msg_blocks_too_long: …").
func SlackCheckBlocks(blocks []byte) error {
	var bs []map[string]any
	if err := json.Unmarshal(blocks, &bs); err != nil {
		return fmt.Errorf("invalid_blocks: not a JSON array of objects: %w", err)
	}
	if len(bs) > slackMaxBlocks {
		return fmt.Errorf("invalid_blocks: %d blocks, more than %d", len(bs), slackMaxBlocks)
	}
	total := 0
	text := func(i int, where string, v any, limit int, plainOnly bool) error {
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("invalid_blocks: block %d: %s is not a text object", i, where)
		}
		typ, _ := obj["type"].(string)
		s, _ := obj["text"].(string)
		switch {
		case typ != "plain_text" && typ != "mrkdwn", plainOnly && typ != "plain_text":
			return fmt.Errorf("invalid_blocks: block %d: %s has type %q", i, where, typ)
		case s == "":
			return fmt.Errorf("invalid_blocks: block %d: %s is empty", i, where)
		case utf8.RuneCountInString(s) > limit:
			return fmt.Errorf("invalid_blocks: block %d: %s has %d characters, more than %d", i, where, utf8.RuneCountInString(s), limit)
		}
		if _, has := obj["emoji"]; has && typ == "mrkdwn" {
			return fmt.Errorf("invalid_blocks: block %d: %s: emoji on mrkdwn", i, where)
		}
		total += utf8.RuneCountInString(s)
		return nil
	}
	for i, b := range bs {
		typ, _ := b["type"].(string)
		var err error
		switch typ {
		case "header":
			err = text(i, "header text", b["text"], slackMaxHeader, true)
		case "section":
			fields, _ := b["fields"].([]any)
			if b["text"] == nil && len(fields) == 0 {
				err = fmt.Errorf("invalid_blocks: block %d: section without text or fields", i)
				break
			}
			if b["text"] != nil {
				err = text(i, "section text", b["text"], slackMaxSection, false)
			}
			if len(fields) > slackMaxFields {
				err = errors.Join(err, fmt.Errorf("invalid_blocks: block %d: %d fields, more than %d", i, len(fields), slackMaxFields))
			}
			for j, f := range fields {
				err = errors.Join(err, text(i, fmt.Sprintf("field %d", j), f, slackMaxField, false))
			}
		case "context":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > slackMaxContext {
				err = fmt.Errorf("invalid_blocks: block %d: context with %d elements", i, len(els))
				break
			}
			for j, e := range els {
				if obj, ok := e.(map[string]any); ok && (obj["type"] == "mrkdwn" || obj["type"] == "plain_text") {
					err = errors.Join(err, text(i, fmt.Sprintf("context element %d", j), e, slackMaxSection, false))
				}
			}
		case "":
			err = fmt.Errorf("invalid_blocks: block %d has no type", i)
		}
		if err != nil {
			return err
		}
	}
	if total > slackMaxTotalText {
		return fmt.Errorf("msg_blocks_too_long: %d characters of block text, more than %d", total, slackMaxTotalText)
	}
	return nil
}
