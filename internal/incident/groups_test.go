package incident

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident/group"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

// A grouped finding leaves the workspace's drift incident; a waiting one
// does too until the incident has notified it; the rest stays.
func TestDecideLeavesGroupedAndWaitingOut(t *testing.T) {
	grouped := func(f drift.Finding) bool { return f.Address == fBucket.Address }
	waiting := func(f drift.Finding) bool { return f.Address == fSG.Address }

	s := newSim(t, Policy{Grouped: grouped, Waiting: waiting})
	_, msgs := s.run(step{findings: []drift.Finding{fBucket, fSG}})
	require.Empty(t, msgs, "one finding grouped, the other waiting: nothing pages")
	require.Nil(t, s.incident(notify.ClassDrift))

	// The wait is over: the finding opens the workspace's incident alone.
	s.p.Waiting = nil
	_, msgs = s.run(step{at: time.Minute, findings: []drift.Finding{fBucket, fSG}})
	require.Equal(t, []string{"drift:open"}, events(msgs))
	require.Equal(t, []drift.Finding{fSG}, msgs[0].Incident.Findings)

	// Waiting again (say a new group may form): a notified finding stays.
	s.p.Waiting = waiting
	_, msgs = s.run(step{at: 2 * time.Minute, findings: []drift.Finding{fBucket, fSG}})
	require.Empty(t, msgs)
	require.Equal(t, open, s.incident(notify.ClassDrift).State)

	// Grouped now: the incident resolves, saying why.
	s.p.Grouped = func(drift.Finding) bool { return true }
	_, msgs = s.run(step{at: 3 * time.Minute, findings: []drift.Finding{fBucket, fSG}})
	require.Equal(t, []string{"drift:resolve"}, events(msgs))
	require.Equal(t, GroupedReason, msgs[0].Incident.Reason)

	// A clean run's resolve has no such reason.
	s2 := newSim(t, Policy{})
	s2.run(step{findings: []drift.Finding{fSG}})
	_, msgs = s2.run(step{at: time.Minute})
	require.Equal(t, []string{"drift:resolve"}, events(msgs))
	require.Empty(t, msgs[0].Incident.Reason)
}

// groupFleet is n workspaces, ws00.., each with fBucket drifting, and
// their plans: every one routes to pager; ws00 also to chat, whose
// target raises drift to high.
func groupFleet(n int) ([]group.Finding, Fleet) {
	fleet := Fleet{Findings: map[group.Member]drift.Finding{}, Plans: map[string]Plan{},
		Link: func(id string) string { return "https://dw.example/groups/" + id }}
	var fs []group.Finding
	for i := range n {
		ws := fmt.Sprintf("ws%02d", i)
		f := fBucket
		fs = append(fs, group.Of(ws, f, t0.Add(time.Duration(i)*time.Minute)))
		fleet.Findings[group.Member{Workspace: ws, Address: f.Address}] = f
		p := Plan{Targets: []Target{{Notifier: "pager"}}}
		if i == 0 {
			p.Targets = append(p.Targets, Target{Notifier: "chat", Severity: map[notify.Class]notify.Severity{notify.ClassDrift: notify.SeverityHigh}})
		}
		fleet.Plans[ws] = p
	}
	return fs, fleet
}

func decodeMessage(t *testing.T, row store.OutboxMessage) notify.Message {
	t.Helper()
	var m notify.Message
	require.NoError(t, json.Unmarshal(row.Payload, &m))
	return m
}

func TestGroupsLifecycle(t *testing.T) {
	ids := 0
	newID := func() string { ids++; return fmt.Sprintf("m%d", ids) }
	fs, fleet := groupFleet(12)
	groups, rest := group.Compute(fs, nil, group.Options{})
	require.Empty(t, rest)
	require.Len(t, groups, 1)
	g := groups[0]

	// Twelve workspaces, one group: one open message per notifier.
	changed, out, err := Groups(t0.Add(time.Hour), groups, fleet, nil, newID)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	in := changed[0]
	require.Equal(t, g.ID, in.ID)
	require.Equal(t, "dw-group-"+g.ID[2:], in.Key)
	require.Equal(t, store.IncidentOpen, in.State)
	require.Equal(t, "aws_s3_bucket: tags.owner, versioning changed on 12 resources in 12 workspaces", in.Title)
	require.Len(t, in.Members, 12)
	require.Equal(t, "ws00", in.Members[0].Workspace)
	require.Equal(t, fBucket, in.Members[0].Finding)
	require.Equal(t, string(notify.SeverityModerate), in.Severity)
	require.Len(t, out, 2)
	require.Equal(t, []string{"pager", "chat"}, []string{out[0].Notifier, out[1].Notifier}, "once each, in the first workspace's order")
	for _, row := range out {
		require.Equal(t, in.Key, row.IncidentKey)
		m := decodeMessage(t, row)
		require.Equal(t, notify.EventOpen, m.Event)
		require.Equal(t, "aws_s3_bucket: tags.owner, versioning changed", m.Incident.Workspace)
		require.Equal(t, "Terraform drift, one cause: "+in.Title, notify.Title(m.Incident))
		require.Equal(t, g.ID, m.Incident.Group.ID)
		require.Len(t, m.Incident.Group.Workspaces, 12)
		require.Len(t, m.Incident.Findings, 12)
		require.Equal(t, "ws00: aws_s3_bucket.logs", m.Incident.Findings[0].Address)
		require.Equal(t, "https://dw.example/groups/"+g.ID, m.Incident.URL)
	}
	require.Equal(t, notify.SeverityHigh, decodeMessage(t, out[1]).Incident.Severity, "the route's override applies")

	// The same group again: nothing.
	stored := changed
	changed, out, err = Groups(t0.Add(2*time.Hour), groups, fleet, stored, newID)
	require.NoError(t, err)
	require.Empty(t, changed)
	require.Empty(t, out)

	// Six fixed: the open group stays, six members removed.
	open := map[string]bool{g.ID: true}
	groups, _ = group.Compute(fs[6:], nil, group.Options{Open: open})
	changed, out, err = Groups(t0.Add(3*time.Hour), groups, fleet, stored, newID)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	require.Len(t, changed[0].Members, 6)
	require.Equal(t, in.OpenedAt, changed[0].OpenedAt)
	m := decodeMessage(t, out[0])
	require.Equal(t, notify.EventUpdate, m.Event)
	require.Len(t, m.Delta.Removed, 6)
	require.Equal(t, "ws00: aws_s3_bucket.logs", m.Delta.Removed[0].Address)
	require.Len(t, out, 1, "ws00, the one routed to chat, left the group: only pager hears")

	// Down to one: still open (it keeps its last member).
	stored = changed
	groups, rest = group.Compute(fs[11:], nil, group.Options{Open: open})
	require.Empty(t, rest)
	changed, _, err = Groups(t0.Add(4*time.Hour), groups, fleet, stored, newID)
	require.NoError(t, err)
	require.Equal(t, store.IncidentOpen, changed[0].State)

	// The last one clean: resolved, its last members named.
	stored = changed
	changed, out, err = Groups(t0.Add(5*time.Hour), nil, fleet, stored, newID)
	require.NoError(t, err)
	require.Equal(t, store.IncidentResolved, changed[0].State)
	require.Equal(t, t0.Add(5*time.Hour), changed[0].ResolvedAt)
	m = decodeMessage(t, out[0])
	require.Equal(t, notify.EventResolve, m.Event)
	require.Equal(t, "aws_s3_bucket: tags.owner, versioning changed", m.Incident.Workspace)
	require.Len(t, m.Incident.Findings, 1)

	// Drifting again reopens it under the same key.
	stored = changed
	groups, _ = group.Compute(fs, nil, group.Options{})
	changed, out, err = Groups(t0.Add(6*time.Hour), groups, fleet, stored, newID)
	require.NoError(t, err)
	require.Equal(t, store.IncidentOpen, changed[0].State)
	require.Equal(t, in.Key, changed[0].Key)
	require.Equal(t, t0.Add(6*time.Hour), changed[0].OpenedAt)
	require.Equal(t, notify.EventOpen, decodeMessage(t, out[0]).Event)
}

// A member workspace's severity rule raises the whole group.
func TestGroupsSeverityIsTheHighestMembers(t *testing.T) {
	fs, fleet := groupFleet(3)
	p := fleet.Plans["ws02"]
	p.Policy.Rules = []SeverityRule{{Name: "buckets", Severity: notify.SeverityCritical, Types: []string{"aws_s3_bucket"}}}
	fleet.Plans["ws02"] = p
	groups, _ := group.Compute(fs, nil, group.Options{})
	changed, _, err := Groups(t0, groups, fleet, nil, func() string { return "m" })
	require.NoError(t, err)
	require.Equal(t, string(notify.SeverityCritical), changed[0].Severity)
}
