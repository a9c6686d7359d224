package app

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
)

// finishDrift records a run of ws that found fs, through the daemon's
// alert plan (as the run lifecycle does).
func finishDrift(t *testing.T, d *daemon, ws string, at time.Time, fs ...drift.Finding) {
	t.Helper()
	r := store.Run{ID: drift.NewRunID(), Workspace: ws, Trigger: "manual", StartedAt: at}
	require.NoError(t, d.store.StartRun(t.Context(), r))
	r.FinishedAt, r.Status, r.Findings = at, drift.StatusOf(fs), fs
	_, _, err := d.store.FinishRunWithOutcome(t.Context(), r, d.inv.Outcome(ws, at, r.ID))
	require.NoError(t, err)
}

// A silence holds a workspace's notifications (the incident is still
// recorded), survives a restart, and once expired its held messages go
// out as one.
func TestSilenceHoldsAndReleases(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, "off", "off")
	d := newTestDaemon(t, path, nil, nil)
	c := d.control()

	for name, tc := range map[string]struct {
		req  server.SilenceRequest
		want string
	}{
		"neither":    {server.SilenceRequest{For: time.Hour, Comment: "x", CreatedBy: "a"}, "name a workspace or labels (not both)"},
		"no comment": {server.SilenceRequest{Workspace: "net", For: time.Hour, CreatedBy: "a"}, "comment is required"},
		"too long":   {server.SilenceRequest{Workspace: "net", For: 31 * 24 * time.Hour, Comment: "x", CreatedBy: "a"}, "for must be between 1m0s and 720h0m0s"},
		"no author":  {server.SilenceRequest{Workspace: "net", For: time.Hour, Comment: "x"}, "created_by is required"},
	} {
		_, err := c.AddSilence(t.Context(), tc.req)
		require.True(t, server.IsSilenceError(err), "%s: %v", name, err)
		require.ErrorContains(t, err, tc.want, name)
	}
	_, err := c.AddSilence(t.Context(), server.SilenceRequest{Workspace: "nope", For: time.Hour, Comment: "x", CreatedBy: "a"})
	require.ErrorIs(t, err, server.ErrUnknownWorkspace)
	d.leader.SetLeading(false)
	_, err = c.AddSilence(t.Context(), server.SilenceRequest{Workspace: "net", For: time.Hour, Comment: "x", CreatedBy: "a"})
	require.ErrorIs(t, err, server.ErrUnavailable)
	require.EqualError(t, err, leader.ErrStandby.Error())
	d.leader.SetLeading(true)

	sil, err := c.AddSilence(t.Context(), server.SilenceRequest{Workspace: "net", For: time.Hour, Comment: "firewall migration", CreatedBy: "alice"})
	require.NoError(t, err)
	require.Equal(t, time.Hour, sil.EndsAt.Sub(sil.StartsAt))

	now := time.Now().UTC()
	fSG := drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update", Attributes: []string{"ingress"}}
	fDB := drift.Finding{Kind: drift.KindDrift, Address: "aws_db_instance.main", Type: "aws_db_instance", Action: "update", Attributes: []string{"instance_class"}}
	finishDrift(t, d, "net", now, fSG)
	finishDrift(t, d, "net", now.Add(time.Second), fSG, fDB)
	finishDrift(t, d, "db", now, fDB)
	ins, err := d.store.Incidents(t.Context(), "net")
	require.NoError(t, err)
	require.Len(t, ins, 1)
	require.Equal(t, store.IncidentOpen, ins[0].State, "a silenced incident is recorded")
	due, err := d.store.DueMessages(t.Context(), now.Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1, "only db's message is due")
	require.Equal(t, "dw-drift-db", due[0].IncidentKey[:len("dw-drift-db")])
	stats, err := d.store.OutboxStats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, stats["hook"].Held)

	d.silences.Release(t.Context(), now.Add(time.Minute))
	due, err = d.store.DueMessages(t.Context(), now.Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1, "still silenced: nothing released")

	// A restarted daemon on the same store still holds net.
	d2 := newTestDaemon(t, path, nil, nil)
	held := d2.inv.Snapshot().Plans["net"].Held(now.Add(time.Minute))
	require.True(t, held, "silences survive a restart")
	list, err := d2.control().Silences(t.Context())
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "alice", list[0].CreatedBy)

	_, err = c.ExpireSilence(t.Context(), sil.ID, "bob")
	require.NoError(t, err)
	_, err = c.ExpireSilence(t.Context(), "nope", "bob")
	require.ErrorIs(t, err, store.ErrNotFound)
	d.silences.Release(t.Context(), time.Now())
	due, err = d.store.DueMessages(t.Context(), time.Now().Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 2, "db's and net's one collapsed message")
	var m notify.Message
	require.NoError(t, json.Unmarshal(due[1].Payload, &m))
	require.Equal(t, notify.EventOpen, m.Event, "the notifier never heard of it: one open")
	require.Equal(t, []drift.Finding{fDB, fSG}, m.Incident.Findings, "with what the incident holds now")
	wss, err := d.store.HeldWorkspaces(t.Context())
	require.NoError(t, err)
	require.Empty(t, wss)
}

// A maintenance window holds the workspaces it matches while it is on.
func TestMaintenanceWindowHolds(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, "off", "off")
	appendConfig(t, path, `maintenance_windows:
  - name: always
    schedule: "* * * * *"
    duration: 2m
    match: { workspaces: ["ne*"] }
`)
	d := newTestDaemon(t, path, nil, nil)
	now := time.Now().UTC()
	require.True(t, d.inv.Snapshot().Plans["net"].Held(now))
	require.False(t, d.inv.Snapshot().Plans["db"].Held(now))
	ws := d.control().MaintenanceWindows(now)
	require.Len(t, ws, 1)
	require.True(t, ws[0].Active)
	require.Equal(t, "UTC", ws[0].TimeZone)
	require.True(t, ws[0].Ends.After(now))
}

func appendConfig(t *testing.T, path, extra string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(b, extra...), 0o644))
}
