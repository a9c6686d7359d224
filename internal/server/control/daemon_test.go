package control

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/store"
)

type fakeOutbox struct {
	stats map[string]store.OutboxCounts
	err   error
}

type fakeRuns struct {
	next map[string]time.Time
	log  *runlog.Log
}

func (f fakeRuns) Next(w string) (time.Time, bool) { t, ok := f.next[w]; return t, ok }
func (fakeRuns) Trigger(w string) (string, error)  { return "", errors.New("trigger " + w) }
func (fakeRuns) Cancel(id string) (bool, error)    { return true, errors.New("cancel " + id) }
func (f fakeRuns) Live(id string) *runlog.Log      { return f.log }
func (fakeRuns) Held(w string) string {
	if w == "db" {
		return "account=1 until 06:05:00 UTC (1 throttled plan in a row)"
	}
	return ""
}

// Ready makes a fakeOutbox the Leader too.
func (fakeOutbox) Ready() error { return errors.New("standby") }
func (f fakeOutbox) OutboxStats(context.Context) (map[string]store.OutboxCounts, error) {
	return f.stats, f.err
}

// A Daemon lists the current config's workspaces with their next run and
// its notifiers with their outbox counts, and forwards the rest with its
// errors unchanged.
func TestDaemon(t *testing.T) {
	next := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	oldest := next.Add(-time.Hour)
	cfg := &config.Config{
		Workspaces: []config.Workspace{{Name: "net", Owner: "team-net", Schedule: "@hourly", Labels: map[string]string{"env": "prod"}}, {Name: "db"}},
		Notifiers:  []config.Notifier{{Name: "hook"}, {Name: "quiet"}},
	}
	log := runlog.New(0, nil)
	ob := fakeOutbox{stats: map[string]store.OutboxCounts{"hook": {Pending: 2, Dead: 1, LastError: "boom", OldestPending: oldest}}}
	d := Daemon{Config: func() *config.Config { return cfg }, Runs: fakeRuns{next: map[string]time.Time{"net": next}, log: log},
		Leader: ob, Outbox: ob}

	require.Equal(t, []WorkspaceInfo{
		{Name: "net", Owner: "team-net", Schedule: "@hourly", Labels: map[string]string{"env": "prod"}, NextRun: next},
		{Name: "db", Held: "account=1 until 06:05:00 UTC (1 throttled plan in a row)"},
	}, d.Workspaces())

	ns, err := d.Notifiers(t.Context())
	require.NoError(t, err)
	require.Len(t, ns, 2)
	require.Equal(t, "hook", ns[0].Name)
	require.Equal(t, 2, ns[0].Pending)
	require.Equal(t, 1, ns[0].Dead)
	require.Equal(t, "boom", ns[0].LastError)
	require.Equal(t, &oldest, ns[0].OldestPending)
	require.Equal(t, "quiet", ns[1].Name)
	require.Nil(t, ns[1].OldestPending, "nothing pending: no oldest")

	d.Outbox = fakeOutbox{err: errors.New("store down")}
	_, err = d.Notifiers(t.Context())
	require.EqualError(t, err, "store down")

	_, err = d.Trigger("net")
	require.EqualError(t, err, "trigger net")
	queued, err := d.Cancel("r1")
	require.True(t, queued)
	require.EqualError(t, err, "cancel r1")
	require.Same(t, log, d.LiveLog("r1"))
	require.EqualError(t, d.Ready(), "standby")
}

// A scans: entry's workspace is listed marked Scan (Trends counts it
// apart); a workspace is not.
func TestDaemonMarksScans(t *testing.T) {
	cfg := &config.Config{Workspaces: []config.Workspace{{Name: "net"}, {Name: "buckets", Scan: &config.Scan{Name: "buckets"}}}}
	d := Daemon{Config: func() *config.Config { return cfg }, Runs: fakeRuns{}}
	require.Equal(t, []WorkspaceInfo{{Name: "net"}, {Name: "buckets", Scan: true}}, d.Workspaces())
}
