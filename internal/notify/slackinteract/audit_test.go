package slackinteract

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/slack"
	"github.com/driftwatch/driftwatch/internal/store"
)

// decisions collects what OnDecision is told.
type decisions struct {
	mu  sync.Mutex
	got []Decision
}

func (d *decisions) note(_ context.Context, x Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, x)
}

func (d *decisions) all() []Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Decision(nil), d.got...)
}

// auditFixture is newFixture whose handler tells ds of every decision.
func auditFixture(t *testing.T, ds *decisions) *fixture {
	t.Helper()
	f := newFixture(t)
	f.h.o.OnDecision = ds.note
	return f
}

// Every click on a driftwatch button that passed the signature check is
// told to OnDecision, with who clicked and how it went: decided, refused
// (not an approver, another channel) or failed (the Decider's refusal).
func TestOnDecision(t *testing.T) {
	conflict := fmt.Errorf("remediation %q: %w: it is applied", "rem-1", store.ErrConflict)
	for _, tc := range []struct {
		name   string
		action string
		tune   func(p *payloadArgs)
		err    error
		want   Decision
	}{
		{"approved", slack.ActionApprove, nil, nil,
			Decision{Actor: "slack:U0APPROVE1 (alice)", Action: "approve", Result: store.AuditOK}},
		{"rejected", slack.ActionReject, nil, nil,
			Decision{Actor: "slack:U0APPROVE1 (alice)", Action: "reject", Result: store.AuditOK}},
		{"not an approver", slack.ActionApprove, func(p *payloadArgs) { p.user, p.name = "U0STRANGER", "mallory" }, nil,
			Decision{Actor: "slack:U0STRANGER (mallory)", Action: "approve", Result: store.AuditDenied, Detail: "not an approver of this notifier"}},
		{"other channel", slack.ActionReject, func(p *payloadArgs) { p.channel = "C0ELSEWHERE" }, nil,
			Decision{Actor: "slack:U0APPROVE1 (alice)", Action: "reject", Result: store.AuditDenied, Detail: "clicked outside the notifier's channel"}},
		{"conflict", slack.ActionReject, nil, conflict,
			Decision{Actor: "slack:U0APPROVE1 (alice)", Action: "reject", Result: store.AuditError, Detail: "conflict"}},
		{"hash mismatch", slack.ActionApprove, nil, errMismatch,
			Decision{Actor: "slack:U0APPROVE1 (alice)", Action: "approve", Result: store.AuditError, Detail: "change set changed"}},
		{"internal error", slack.ActionApprove, nil, fmt.Errorf("disk on fire"),
			Decision{Actor: "slack:U0APPROVE1 (alice)", Action: "approve", Result: store.AuditError, Detail: "internal error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := &decisions{}
			f := auditFixture(t, ds)
			f.dec.err = tc.err
			p := f.payload(tc.action)
			if tc.tune != nil {
				a := payloadArgs{p.UserID, p.UserName, p.Channel}
				tc.tune(&a)
				p.UserID, p.UserName, p.Channel = a.user, a.name, a.channel
			}
			require.Equal(t, http.StatusOK, f.serve(t, f.signer, p, now.Add(-time.Second)))
			want := tc.want
			want.At, want.Remediation, want.Notifier = now, "rem-1", "slack-oncall"
			require.Equal(t, []Decision{want}, ds.all())
		})
	}
}

type payloadArgs struct{ user, name, channel string }

// Requests that fail authentication, and clicks that are not driftwatch
// buttons, decide nothing and are not told.
func TestOnDecisionNotForRefusedRequests(t *testing.T) {
	ds := &decisions{}
	f := auditFixture(t, ds)
	forger := f.signer
	forger.Secret = "forged-secret"
	require.Equal(t, http.StatusUnauthorized, f.serve(t, forger, f.payload(slack.ActionApprove), now))
	require.Equal(t, http.StatusUnauthorized, f.serve(t, f.signer, f.payload(slack.ActionApprove), now.Add(-time.Hour)))
	p := f.payload("something_else")
	require.Equal(t, http.StatusOK, f.serve(t, f.signer, p, now))
	require.Empty(t, ds.all())
	require.Empty(t, f.dec.Calls())
}
