package incident

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

func retireIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("m%d", n) }
}

func TestRetire(t *testing.T) {
	opened := t0.Add(-time.Hour)
	incidents := []store.Incident{
		{Key: Key("net", notify.ClassDrift), Workspace: "net", Class: string(notify.ClassDrift), State: store.IncidentOpen,
			Observations: 2, OpenedAt: opened, NotifiedAt: opened, Findings: []drift.Finding{fBucket}, Severity: "moderate"},
		{Key: Key("net", notify.ClassForbidden), Workspace: "net", Class: string(notify.ClassForbidden), State: store.IncidentPending,
			Observations: 1, OpenedAt: opened},
		{Key: Key("net", notify.ClassErrored), Workspace: "net", Class: string(notify.ClassErrored), State: store.IncidentResolved,
			OpenedAt: opened.Add(-time.Hour), ResolvedAt: opened},
	}
	changed, msgs := Retire(t0, "run-9", Policy{Owner: "@net", URL: "http://dw/workspaces/net"}, "net", incidents, retireIDs())

	require.Len(t, changed, 2, "the resolved errored incident is left alone")
	drifted, forbidden := changed[0], changed[1]
	require.Equal(t, string(notify.ClassDrift), drifted.Class)
	require.Equal(t, store.IncidentResolved, drifted.State)
	require.Equal(t, t0, drifted.ResolvedAt)
	require.Equal(t, []drift.Finding{fBucket}, drifted.Findings, "history: what was last notified stays on the row")
	require.Equal(t, incidents[0].Key, drifted.Key, "the stored key is kept")
	require.Equal(t, string(notify.ClassForbidden), forbidden.Class)
	require.Equal(t, store.IncidentResolved, forbidden.State)

	require.Len(t, msgs, 1, "a pending incident resolves silently")
	m := msgs[0]
	require.Equal(t, notify.EventResolve, m.Event)
	require.Equal(t, RemovedReason, m.Incident.Reason, "the resolve says why")
	require.Equal(t, "m1", m.ID)
	require.Equal(t, "net", m.Incident.Workspace)
	require.Equal(t, notify.ClassDrift, m.Incident.Class)
	require.Equal(t, "run-9", m.Incident.RunID)
	require.Equal(t, "@net", m.Incident.Owner)
	require.Equal(t, []drift.Finding{fBucket}, m.Incident.Findings, "the resolve lists what resolved")
	require.Equal(t, t0, m.At)
}

func TestRetireNothingOpen(t *testing.T) {
	incidents := []store.Incident{
		{Key: Key("net", notify.ClassDrift), Workspace: "net", Class: string(notify.ClassDrift), State: store.IncidentResolved},
		{Key: Key("db", notify.ClassDrift), Workspace: "db", Class: string(notify.ClassDrift), State: store.IncidentOpen},
	}
	changed, msgs := Retire(t0, "r", Policy{}, "net", incidents, retireIDs())
	require.Empty(t, changed, "another workspace's incident is not touched")
	require.Empty(t, msgs)
}

func TestRetireOutcomeEnqueuesPerNotifier(t *testing.T) {
	p := Plan{Targets: []Target{{Notifier: "slack"}, {Notifier: "pager"}}}
	incidents := []store.Incident{{Key: Key("net", notify.ClassErrored), Workspace: "net", Class: string(notify.ClassErrored),
		State: store.IncidentOpen, OpenedAt: t0.Add(-time.Hour)}}
	changed, out := p.RetireOutcome(t0, "r", "net", retireIDs())(incidents)
	require.Len(t, changed, 1)
	require.Len(t, out, 2)
	require.Equal(t, "slack", out[0].Notifier)
	require.Equal(t, "pager", out[1].Notifier)
	require.Equal(t, incidents[0].Key, out[0].IncidentKey)
}
