package notifytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

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
