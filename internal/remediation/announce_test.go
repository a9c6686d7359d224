package remediation

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

func TestRemediationNote(t *testing.T) {
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	base := store.Remediation{ID: "rem1", Workspace: "net", DetectRunID: "det1", Mode: "approve",
		ChangeSet: []byte(`{"entries":[{"address":"a.b","action":"update"},{"address":"a.c","action":"create"}]}`),
		ExpiresAt: at.Add(time.Hour), ChangeSetHash: "cs-1"}
	for _, tc := range []struct {
		state  store.RemediationState
		reason string
		apply  string
		want   notify.Remediation
		ok     bool
	}{
		{state: store.RemediationPending, ok: true,
			want: notify.Remediation{ID: "rem1", Mode: "approve", Result: notify.RemediationAwaitingApproval, Resources: 2, ExpiresAt: at.Add(time.Hour),
				ChangeSetHash: "cs-1"}},
		{state: store.RemediationApproved, ok: true,
			want: notify.Remediation{ID: "rem1", Mode: "approve", Result: notify.RemediationApproved, Resources: 2}},
		{state: store.RemediationApplied, apply: "app1", ok: true,
			want: notify.Remediation{ID: "rem1", Mode: "approve", Result: notify.RemediationApplied, Resources: 2, ApplyRunID: "app1",
				URL: "https://dw.example/runs/app1"}},
		{state: store.RemediationFailed, apply: "app1", reason: "apply: Error:\n  Cannot write file", ok: true,
			want: notify.Remediation{ID: "rem1", Mode: "approve", Result: notify.RemediationFailed, Reason: "apply: Error: Cannot write file",
				Resources: 2, ApplyRunID: "app1", URL: "https://dw.example/runs/app1"}},
		{state: store.RemediationVerificationFailed, apply: "app1", ok: true,
			want: notify.Remediation{ID: "rem1", Mode: "approve", Result: notify.RemediationVerificationFailed, Resources: 2, ApplyRunID: "app1",
				URL: "https://dw.example/runs/app1"}},
		{state: store.RemediationRefused, reason: "forbidden: helm_release.x", ok: true,
			want: notify.Remediation{ID: "rem1", Mode: "approve", Result: notify.RemediationRefused, Reason: "forbidden: helm_release.x", Resources: 2}},
		{state: store.RemediationRunning},
		{state: store.RemediationRejected},
		{state: store.RemediationExpired},
	} {
		t.Run(string(tc.state), func(t *testing.T) {
			r := base
			r.State, r.Reason, r.ApplyRunID = tc.state, tc.reason, tc.apply
			got, ok := remediationNote(r, "https://dw.example")
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}

	// No external_url: no link. A long reason is one capped line.
	r := base
	r.State, r.ApplyRunID = store.RemediationFailed, "app1"
	r.Reason = strings.Repeat("x", 1000)
	got, _ := remediationNote(r, "")
	require.Empty(t, got.URL)
	require.Len(t, []rune(got.Reason), maxRemediationReason)
}
