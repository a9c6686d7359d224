package notifytest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// SlackSigner signs requests the way Slack signs the requests it sends to
// an app's interactivity Request URL: X-Slack-Request-Timestamp is the
// Unix time, X-Slack-Signature is "v0=" and the hex HMAC-SHA256, keyed by
// the app's signing secret, of "v0:" + timestamp + ":" + the raw body.
type SlackSigner struct {
	// Secret is the signing secret.
	Secret string
}

// Signature is the X-Slack-Signature of body sent at timestamp ts (Unix
// seconds, as sent).
func (s SlackSigner) Signature(ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(s.Secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// Request is a signed POST of body to target, sent at at, as Slack sends
// it (form-encoded).
func (s SlackSigner) Request(target string, body []byte, at time.Time) *http.Request {
	ts := strconv.FormatInt(at.Unix(), 10)
	r := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Slack-Request-Timestamp", ts)
	r.Header.Set("X-Slack-Signature", s.Signature(ts, body))
	return r
}

// SlackActionPayload is a block_actions interaction payload: a user
// clicked button actionID (carrying value) on a message in channel.
type SlackActionPayload struct {
	UserID, UserName string
	Channel          string // channel ID
	MessageTS        string
	ActionID, Value  string
	ResponseURL      string
	// Blocks are the clicked message's blocks (JSON array), "" for none.
	Blocks string
}

// Body is the form body Slack posts for p: payload=<JSON>.
func (p SlackActionPayload) Body() []byte {
	msg := map[string]any{"type": "message", "ts": p.MessageTS, "text": "Remediation awaiting approval"}
	if p.Blocks != "" {
		msg["blocks"] = json.RawMessage(p.Blocks)
	}
	payload := map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": p.UserID, "username": p.UserName, "name": p.UserName, "team_id": "T0DRIFTW0"},
		"api_app_id":   "A0DRIFTW0",
		"team":         map[string]any{"id": "T0DRIFTW0", "domain": "driftwatch"},
		"container":    map[string]any{"type": "message", "message_ts": p.MessageTS, "channel_id": p.Channel, "is_ephemeral": false},
		"trigger_id":   "1.2.3",
		"channel":      map[string]any{"id": p.Channel, "name": "ops"},
		"message":      msg,
		"response_url": p.ResponseURL,
		"actions": []map[string]any{{
			"type": "button", "action_id": p.ActionID, "block_id": "driftwatch_remediation_actions",
			"text": map[string]any{"type": "plain_text", "text": "Approve"}, "value": p.Value, "action_ts": "1793700000.000100",
		}},
	}
	b, _ := json.Marshal(payload) // plain maps: cannot fail
	return []byte(url.Values{"payload": {string(b)}}.Encode())
}

// SlackResponse is one message a response_url received.
type SlackResponse struct {
	Path            string
	ContentType     string
	ReplaceOriginal bool            `json:"replace_original"`
	ResponseType    string          `json:"response_type"`
	Text            string          `json:"text"`
	Blocks          json.RawMessage `json:"blocks"`
}

// SlackResponseServer stands in for Slack's response_url endpoints
// (https://hooks.slack.com/actions/...): it records every JSON message
// posted to it and answers "ok" as Slack does.
type SlackResponseServer struct {
	*httptest.Server

	mu   sync.Mutex
	got  []SlackResponse
	errs []error
}

// NewSlackResponseServer starts a response_url receiver on 127.0.0.1,
// closed when the test ends. Requests that are not a POST of a JSON
// object with text are recorded as errors (Errors).
func NewSlackResponseServer(t testing.TB) *SlackResponseServer {
	s := &SlackResponseServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *SlackResponseServer) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	resp := SlackResponse{Path: r.URL.Path, ContentType: r.Header.Get("Content-Type")}
	if err == nil {
		err = json.Unmarshal(body, &resp)
	}
	switch {
	case err != nil:
	case r.Method != http.MethodPost:
		err = fmt.Errorf("method %s, want POST", r.Method)
	case resp.Text == "":
		err = errors.New("no text")
	case len(resp.Blocks) > 0:
		err = SlackCheckBlocks(resp.Blocks)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs = append(s.errs, err)
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	s.got = append(s.got, resp)
	_, _ = io.WriteString(w, "ok")
}

// ResponseURL is a response_url on this server, as a payload carries it.
func (s *SlackResponseServer) ResponseURL(id string) string {
	return s.URL + "/actions/T0DRIFTW0/" + id + "/hook"
}

// Responses returns the messages received so far.
func (s *SlackResponseServer) Responses() []SlackResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SlackResponse(nil), s.got...)
}

// Errors returns the requests refused so far, as errors.
func (s *SlackResponseServer) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// Slack's limits on interactive elements.
const (
	slackMaxActionElements = 25
	slackMaxActionID       = 255
	slackMaxButtonValue    = 2000
	slackMaxButtonText     = 75
	slackMaxConfirmTitle   = 100
	slackMaxConfirmText    = 300
	slackMaxConfirmButton  = 30
)

// SlackCheckActions checks the actions blocks of a JSON block array
// against Slack's limits on buttons (action_id, value, text, confirm
// dialog) and fails if there is none.
func SlackCheckActions(blocks []byte) error {
	var bs []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type     string          `json:"type"`
			ActionID string          `json:"action_id"`
			Value    string          `json:"value"`
			Text     json.RawMessage `json:"text"`
			Style    string          `json:"style"`
			Confirm  *struct {
				Title, Text, Confirm, Deny json.RawMessage
			} `json:"confirm"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(blocks, &bs); err != nil {
		return fmt.Errorf("invalid_blocks: %w", err)
	}
	plain := func(where string, raw json.RawMessage, limit int) error {
		var t struct{ Type, Text string }
		if err := json.Unmarshal(raw, &t); err != nil || t.Type != "plain_text" || t.Text == "" {
			return fmt.Errorf("invalid_blocks: %s must be non-empty plain_text", where)
		}
		if utf8.RuneCountInString(t.Text) > limit {
			return fmt.Errorf("invalid_blocks: %s longer than %d", where, limit)
		}
		return nil
	}
	found := 0
	ids := map[string]bool{}
	for i, b := range bs {
		if b.Type != "actions" {
			continue
		}
		found++
		if len(b.Elements) == 0 || len(b.Elements) > slackMaxActionElements {
			return fmt.Errorf("invalid_blocks: block %d: actions with %d elements", i, len(b.Elements))
		}
		for j, e := range b.Elements {
			where := fmt.Sprintf("block %d element %d", i, j)
			var err error
			switch {
			case e.Type != "button":
				err = fmt.Errorf("invalid_blocks: %s: type %q, want button", where, e.Type)
			case e.ActionID == "" || len(e.ActionID) > slackMaxActionID || ids[e.ActionID]:
				err = fmt.Errorf("invalid_blocks: %s: action_id missing, too long or repeated", where)
			case len(e.Value) > slackMaxButtonValue:
				err = fmt.Errorf("invalid_blocks: %s: value longer than %d", where, slackMaxButtonValue)
			case e.Style != "" && e.Style != "primary" && e.Style != "danger":
				err = fmt.Errorf("invalid_blocks: %s: style %q", where, e.Style)
			}
			ids[e.ActionID] = true
			err = errors.Join(err, plain(where+" text", e.Text, slackMaxButtonText))
			if c := e.Confirm; c != nil {
				err = errors.Join(err,
					plain(where+" confirm title", c.Title, slackMaxConfirmTitle),
					plain(where+" confirm text", c.Text, slackMaxConfirmText),
					plain(where+" confirm button", c.Confirm, slackMaxConfirmButton),
					plain(where+" deny button", c.Deny, slackMaxConfirmButton))
			}
			if err != nil {
				return err
			}
		}
	}
	if found == 0 {
		return errors.New("no actions block")
	}
	return nil
}
