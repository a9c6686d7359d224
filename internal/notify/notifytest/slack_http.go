package notifytest

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

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
