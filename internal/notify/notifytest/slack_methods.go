package notifytest

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

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
