package apiclient_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/storetest"
)

// groups is the daemon's group incidents, in memory.
type groups = storetest.Groups

var opened = time.Date(2026, 3, 14, 1, 0, 0, 0, time.UTC)

var testGroups = groups{
	{ID: "g-open", Cause: "shape", Title: "aws_s3_bucket: tags_all changed on 2 resources in 2 workspaces", State: store.IncidentOpen,
		Workspaces: 2, OpenedAt: opened, Members: []store.GroupMember{
			{Workspace: "net", Finding: drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags_all"}}},
			{Workspace: "payments", Finding: drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.data", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags_all"}}},
		}},
	{ID: "g-done", Cause: "commit", Title: "commit 4f1c2e9a0b7d: pending changes on 2 resources in 2 workspaces", State: store.IncidentResolved,
		Workspaces: 2, OpenedAt: opened.Add(-time.Hour), ResolvedAt: opened},
}

// The groups through the real server: the open ones, every one, one by
// id, an unknown id; the read token is sent when a token file is set.
func TestGroups(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{groups: testGroups})
	c := apiclient.New(d.url, d.readTokenFile, nil)
	ctx := t.Context()

	open, err := c.ListGroups(ctx, false)
	require.NoError(t, err)
	require.Len(t, open.Groups, 1)
	g := open.Groups[0]
	require.Equal(t, "g-open", g.ID)
	require.Equal(t, "open", g.State)
	require.Equal(t, opened, g.OpenedAt)
	require.Equal(t, []string{"net", "payments"}, []string{g.Members[0].Workspace, g.Members[1].Workspace})
	require.Equal(t, []string{"tags_all"}, g.Members[1].Attributes)
	require.Contains(t, string(open.Raw), `"cause": "shape"`)
	req := d.last()
	require.Equal(t, "/api/v1/groups", req.URI)
	require.Equal(t, "Bearer "+readToken, req.Authorization)

	all, err := c.ListGroups(ctx, true)
	require.NoError(t, err)
	require.Len(t, all.Groups, 2)
	require.Equal(t, "/api/v1/groups?all=true", d.last().URI)

	one, err := c.GetGroup(ctx, "g-done")
	require.NoError(t, err)
	require.Equal(t, "resolved", one.State)
	require.Equal(t, opened, one.ResolvedAt)
	require.JSONEq(t, `{"id": "g-done", "cause": "commit", "cause_key": "", "title": "commit 4f1c2e9a0b7d: pending changes on 2 resources in 2 workspaces",
		"state": "resolved", "severity": "", "workspaces": 2, "members": [], "opened_at": "2026-03-14T00:00:00Z", "resolved_at": "2026-03-14T01:00:00Z"}`, string(one.Raw))

	_, err = c.GetGroup(ctx, "g-nope")
	require.ErrorIs(t, err, apiclient.ErrNotFound)
	var se *apiclient.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "unknown group", se.Message)

	// Without a token file, no credential: the reads of this daemon are
	// open (token mode's default).
	open, err = apiclient.New(d.url, "", nil).ListGroups(ctx, false)
	require.NoError(t, err)
	require.Len(t, open.Groups, 1)
	require.Empty(t, d.last().Authorization)
	// A token file that holds no token fails before any request.
	n := len(d.reqs())
	_, err = apiclient.New(d.url, writeFile(t, "empty", "\n"), nil).GetGroup(ctx, "g-open")
	var tfe *apiclient.TokenFileError
	require.ErrorAs(t, err, &tfe)
	require.Len(t, d.reqs(), n)
}
