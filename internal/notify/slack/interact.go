package slack

import (
	"encoding/json"
	"errors"
	"fmt"

	slackgo "github.com/slack-go/slack"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// The buttons of an awaiting-approval remediation message. The daemon's
// interactivity endpoint (internal/notify/slackinteract) answers them.
const (
	// ActionsBlockID is the block_id of the actions block that holds the
	// buttons; the endpoint drops that block when it replaces the message.
	ActionsBlockID = "driftwatch_remediation_actions"
	// ActionApprove is the Approve button's action_id.
	ActionApprove = "driftwatch_approve"
	// ActionReject is the Reject button's action_id.
	ActionReject = "driftwatch_reject"
)

// maxActionValue is Slack's limit on a button's value.
const maxActionValue = 2000

// ActionValue is what a button carries: the notifier that posted it (whose
// signing secret and approvers apply), the remediation and the change set
// hash the message showed (an approval is for that hash only; "" when the
// message did not carry one).
type ActionValue struct {
	Notifier    string `json:"notifier"`
	Remediation string `json:"remediation"`
	Hash        string `json:"hash,omitempty"`
}

// String encodes v as a button value (JSON).
func (v ActionValue) String() string {
	b, _ := json.Marshal(v) // three strings: cannot fail
	return string(b)
}

// ParseActionValue decodes a button value written by ActionValue.String.
// Notifier and Remediation are required.
func ParseActionValue(s string) (ActionValue, error) {
	var v ActionValue
	if len(s) > maxActionValue {
		return v, errors.New("button value too long")
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return ActionValue{}, errors.New("button value is not a driftwatch action value")
	}
	if v.Notifier == "" || v.Remediation == "" {
		return ActionValue{}, errors.New("button value lacks the notifier or the remediation")
	}
	return v, nil
}

// actionsBlock is the Approve / Reject buttons of an awaiting-approval
// remediation message posted by the notifier named notifier, or nil for
// any other message (and for an ID too long to carry). Both buttons ask
// for confirmation: an approval reverts resources, a rejection is final
// for that change set.
func actionsBlock(notifier string, m notify.Message) slackgo.Block {
	r := m.Remediation
	if m.Event != notify.EventRemediation || r == nil || r.Result != notify.RemediationAwaitingApproval || r.ID == "" {
		return nil
	}
	value := ActionValue{Notifier: notifier, Remediation: r.ID, Hash: r.ChangeSetHash}.String()
	if len(value) > maxActionValue {
		return nil
	}
	ws := notify.Truncate(notify.OneLine(m.Incident.Workspace), 100)
	plain := func(s string) *slackgo.TextBlockObject {
		return slackgo.NewTextBlockObject(slackgo.PlainTextType, s, true, false)
	}
	approve := slackgo.NewButtonBlockElement(ActionApprove, value, plain("Approve")).
		WithStyle(slackgo.StylePrimary).
		WithConfirm(slackgo.NewConfirmationBlockObject(plain("Approve remediation?"),
			plain(fmt.Sprintf("Revert %s in %s to the Terraform configuration.", resources(r.Resources), ws)),
			plain("Approve"), plain("Cancel")))
	reject := slackgo.NewButtonBlockElement(ActionReject, value, plain("Reject")).
		WithStyle(slackgo.StyleDanger).
		WithConfirm(slackgo.NewConfirmationBlockObject(plain("Reject remediation?"),
			plain("The same change set will not be proposed again."),
			plain("Reject"), plain("Cancel")))
	return slackgo.NewActionBlock(ActionsBlockID, approve, reject)
}

// actions is the notifier's actions block for m, if it answers buttons
// (Config.Interactive) and m awaits approval; else nil.
func (n *Notifier) actions(m notify.Message) []slackgo.Block {
	if !n.interactive {
		return nil
	}
	if b := actionsBlock(n.name, m); b != nil {
		return []slackgo.Block{b}
	}
	return nil
}
