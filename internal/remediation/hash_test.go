package remediation

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

// Two workspaces whose drift has the same shape (the same addresses,
// actions and attribute paths) have the same change-set hash, by design:
// the hash names the change, the remediation's id names the workspace.
// Approving one, even with the hash both share, leaves the other pending.
func TestSameShapeSameHashApprovesOne(t *testing.T) {
	f := newOffFixture(t, "{ mode: approve }", "{ mode: approve }")
	net := f.propose(t, "net", store.RemediationPending)
	db := f.propose(t, "db", store.RemediationPending)
	require.Equal(t, net.ChangeSetHash, db.ChangeSetHash, "the same change, whatever the workspace")
	require.NotEqual(t, net.ID, db.ID)

	_, err := f.c.Approve(t.Context(), net.ID, db.ChangeSetHash)
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, f.get(t, net.ID).State)
	require.Equal(t, store.RemediationPending, f.get(t, db.ID).State, "approving net's remediation approves nothing of db's")
}
