package remediation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

// TestDecisionActor: an approval or rejection records who decided: the
// caller Options.Caller names (the server's signed-in user or token),
// else the actor WithActor put on the context (a Slack user), else "api".
func TestDecisionActor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caller string // "": Options.Caller names nobody
		actor  string // "": no WithActor
		reject bool
		want   string
	}{
		{name: "api approve", want: "api"},
		{name: "api reject", reject: true, want: "api"},
		{name: "slack approve", actor: "slack:U0123ABCD (alice)", want: "slack:U0123ABCD (alice)"},
		{name: "slack reject", actor: "slack:U0123ABCD", reject: true, want: "slack:U0123ABCD"},
		{name: "token approve", caller: "token:ci", want: "token:ci"},
		{name: "signed-in reject", caller: "alice@example.com", reject: true, want: "alice@example.com"},
		{name: "caller before actor", caller: "alice@example.com", actor: "slack:U0123ABCD", want: "alice@example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newOffFixture(t, approveMode, approveMode)
			f.c.caller = func(context.Context) string { return tc.caller }
			r := f.propose(t, "net", store.RemediationPending)
			ctx := t.Context()
			if tc.actor != "" {
				ctx = WithActor(ctx, tc.actor)
			}
			var (
				out store.Remediation
				err error
			)
			if tc.reject {
				out, err = f.c.Reject(ctx, r.ID)
			} else {
				out, err = f.c.Approve(ctx, r.ID, r.ChangeSetHash)
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, out.DecidedBy)
			require.Equal(t, tc.want, f.get(t, r.ID).DecidedBy, "stored")
		})
	}
}
