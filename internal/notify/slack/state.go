package slack

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// parentState is what the bot stores per incident key. The store keys it
// by (notifier, incident key) and an incident key is reused by the next
// incident of the same workspace and class, so the state also says which
// incident it belongs to (ParentMessageID, Since) and whether it ended.
type parentState struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	// ParentMessageID is the notify.Message ID that created the parent; it
	// is also in the parent's Slack metadata.
	ParentMessageID string `json:"parent_message_id,omitempty"`
	// Since is the incident's opening time (Unix seconds; 0 if unknown).
	Since    int64 `json:"since,omitempty"`
	Resolved bool  `json:"resolved,omitempty"`
	// PendingReply is the ID of a message whose thread reply may have been
	// posted without the delivery being recorded (written before posting):
	// a retry that finds it looks the reply up before posting again.
	PendingReply string `json:"pending_reply,omitempty"`
}

func decodeState(b []byte) (*parentState, error) {
	if len(b) == 0 {
		return nil, nil //nolint:nilnil // no state is not an error
	}
	var st parentState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("decode state: %w", err)
	}
	if st.Channel == "" || st.TS == "" {
		return nil, fmt.Errorf("decode state: no channel or ts")
	}
	return &st, nil
}

func (st parentState) encode() []byte {
	b, _ := json.Marshal(st) // cannot fail: strings, an int and bools
	return b
}

// sameIncident reports whether st belongs to m's incident rather than to an
// earlier incident of the same key: not resolved, and opened at the same
// time when both times are known. strict requires both times to be known.
func (st *parentState) sameIncident(m notify.Message, strict bool) bool {
	if st == nil || st.Resolved {
		return false
	}
	if st.Since == 0 || m.Incident.Since.IsZero() {
		return !strict
	}
	return st.Since == m.Incident.Since.Unix()
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
