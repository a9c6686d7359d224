package pages

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/view"
)

func TestStatusSummary(t *testing.T) {
	ws := func(ss ...drift.Status) []view.WorkspaceView {
		var out []view.WorkspaceView
		for _, s := range ss {
			out = append(out, view.WorkspaceView{Status: s})
		}
		return out
	}
	tests := []struct {
		name    string
		vs      []view.WorkspaceView
		verdict string
		tone    string
	}{
		{"none", nil, "No workspaces", "warn"},
		{"all clean", ws(drift.StatusClean, drift.StatusClean), "All 2 clean", ""},
		{"pending", ws(drift.StatusClean, drift.StatusPending), "No drift · 1 with pending changes", "warn"},
		{"unchecked", ws(drift.StatusClean, view.StatusUnknown), "No drift · 1 not checked yet", "warn"},
		{"bad", ws(drift.StatusErrored, drift.StatusDrift, drift.StatusPending, drift.StatusClean), "2 of 4 need attention", "bad"},
		{"forbidden", ws(drift.StatusForbidden), "1 of 1 need attention", "bad"},
		{"failing checks", ws(drift.StatusValidation, drift.StatusClean), "1 of 2 need attention", "bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, verdict, tone := statusSummary(tt.vs)
			require.Equal(t, tt.verdict, verdict)
			require.Equal(t, tt.tone, tone)
			require.Len(t, items, 7)
		})
	}
}
