package apiclient_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
)

// silences is the daemon's silences over the real sqlite store, and one
// maintenance window, "patch", on for prod-* until an hour from now.
type silences struct{ d *testDaemon }

func (m silences) Silences(ctx context.Context) ([]store.Silence, error) {
	return m.d.st.Silences(ctx, time.Now())
}

func (m silences) AddSilence(ctx context.Context, req server.SilenceRequest) (store.Silence, error) {
	if req.Workspace != "" && req.Workspace != "net" && req.Workspace != "payments" {
		return store.Silence{}, server.ErrUnknownWorkspace
	}
	if req.For > 7*24*time.Hour {
		return store.Silence{}, &server.SilenceError{Reason: "for: at most 168h"}
	}
	m.d.mu.Lock()
	m.d.n++
	id := fmt.Sprintf("sil-%d", m.d.n)
	m.d.mu.Unlock()
	now := time.Now().Truncate(time.Second)
	start := req.StartsAt
	if start.IsZero() {
		start = now
	}
	x := store.Silence{ID: id, Workspace: req.Workspace, Labels: req.Labels, StartsAt: start, EndsAt: start.Add(req.For),
		Comment: req.Comment, CreatedBy: req.CreatedBy, CreatedAt: now}
	return x, m.d.st.AddSilence(ctx, x)
}

func (m silences) ExpireSilence(ctx context.Context, id, _ string) (store.Silence, error) {
	return m.d.st.ExpireSilence(ctx, id, time.Now())
}

func (m silences) MaintenanceWindows(now time.Time) []server.MaintenanceWindow {
	return []server.MaintenanceWindow{{Name: "patch", Workspaces: []string{"prod-*"}, Schedule: "0 2 * * 6", TimeZone: "UTC",
		Duration: 2 * time.Hour, Active: true, Ends: now.Add(time.Hour).Truncate(time.Second), NextStart: now.Add(167 * time.Hour).Truncate(time.Second)}}
}

// Silences round trip through the real server and store: added with the
// API token, listed without a credential, expired; refusals are
// *StatusErrors with the daemon's reason.
func TestSilences(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{})
	c := apiclient.New(d.url, d.apiTokenFile, nil)
	ctx := t.Context()

	added, err := c.AddSilence(ctx, apiclient.NewSilence{Workspace: "net", For: 4 * time.Hour, Comment: "migration", CreatedBy: "alice"})
	require.NoError(t, err)
	require.Equal(t, "net", added.Workspace)
	require.Equal(t, 4*time.Hour, added.EndsAt.Sub(added.StartsAt.Time))
	require.True(t, added.Active)
	req := d.last()
	require.Equal(t, "Bearer "+apiToken, req.Authorization)
	require.Equal(t, "application/json", req.ContentType)
	require.JSONEq(t, `{"workspace": "net", "for": "4h0m0s", "comment": "migration", "created_by": "alice"}`, req.Body)

	start := time.Date(2030, 1, 2, 22, 0, 0, 0, time.UTC)
	later, err := c.AddSilence(ctx, apiclient.NewSilence{Labels: map[string]string{"env": "prod"}, For: time.Hour, StartsAt: start, Comment: "game day"})
	require.NoError(t, err)
	require.JSONEq(t, `{"labels": {"env": "prod"}, "for": "1h0m0s", "starts_at": "2030-01-02T22:00:00Z", "comment": "game day"}`, d.last().Body)
	require.False(t, later.Active)
	require.True(t, start.Equal(later.StartsAt.Time))

	list, err := c.ListSilences(ctx)
	require.NoError(t, err)
	require.Empty(t, d.last().Authorization, "an open read sends no credential")
	require.Len(t, list.Silences, 2)
	require.Equal(t, added.ID, list.Silences[0].ID)
	require.Equal(t, "token:api (claimed: alice)", list.Silences[0].CreatedBy, "the authenticated token, with the name the client claims")
	require.Equal(t, map[string]string{"env": "prod"}, list.Silences[1].Labels)
	require.Len(t, list.Windows, 1)
	w := list.Windows[0]
	require.Equal(t, []string{"prod-*"}, w.Workspaces)
	require.Equal(t, "2h0m0s", w.Duration)
	require.True(t, w.Active)
	require.False(t, w.Ends.IsZero())

	expired, err := c.ExpireSilence(ctx, added.ID, "bob")
	require.NoError(t, err)
	require.False(t, expired.Active)
	require.Equal(t, http.MethodDelete, d.last().Method)
	require.Equal(t, "/api/v1/silences/"+added.ID+"?by=bob", d.last().URI)
	list, err = c.ListSilences(ctx)
	require.NoError(t, err)
	require.Len(t, list.Silences, 1)

	for _, tc := range []struct {
		s    apiclient.NewSilence
		code int
		msg  string
	}{
		{apiclient.NewSilence{Workspace: "nope", For: time.Hour, Comment: "x"}, 404, "unknown workspace"},
		{apiclient.NewSilence{Workspace: "net", For: 800 * time.Hour, Comment: "x"}, 400, "for: at most 168h"},
		{apiclient.NewSilence{Workspace: "net", For: time.Hour}, 400, "comment is required: why notifications are held"},
	} {
		_, err := c.AddSilence(ctx, tc.s)
		var se *apiclient.StatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, tc.code, se.Code)
		require.Equal(t, tc.msg, se.Message)
	}
	_, err = c.ExpireSilence(ctx, "nope", "")
	require.ErrorIs(t, err, apiclient.ErrNotFound)

	_, err = apiclient.New(d.url, d.readTokenFile, nil).AddSilence(ctx, apiclient.NewSilence{Workspace: "net", For: time.Hour, Comment: "x"})
	require.ErrorIs(t, err, apiclient.ErrForbidden, "the read token has the viewer role")
	require.NotContains(t, err.Error(), "CANARY")
}
