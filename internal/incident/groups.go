package incident

import (
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident/group"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Fleet is what Groups knows of the fleet besides its groups.
type Fleet struct {
	// Findings holds every member's finding, by workspace and address.
	Findings map[group.Member]drift.Finding
	// Plans are the workspaces' alert plans: a group's messages go to the
	// union of its member workspaces' targets (the first workspace by
	// name wins a notifier's overrides), at the highest severity any
	// member workspace's policy gives its members. A workspace without a
	// plan (removed) adds nothing.
	Plans map[string]Plan
	// Link is a group's page (server.external_url), "" without one.
	Link func(id string) string
}

// Groups decides the group incidents after the fleet's groups were
// computed (group.Compute over every workspace's latest findings): a
// group without a live incident opens one, a live one whose members
// changed is updated (its delta names members as "WORKSPACE: ADDRESS"),
// and a live incident whose group is gone (its last member clean)
// resolves. It returns the changed rows and their outbox messages, due at
// now, IDs from newID. Like Decide it is pure.
//
// A silence or maintenance window holds a workspace's own incidents, not
// a group's: a group's messages are never held.
func Groups(now time.Time, groups []group.Group, fleet Fleet, stored []store.GroupIncident, newID func() string) (changed []store.GroupIncident, out []store.OutboxMessage, err error) {
	live := map[string]store.GroupIncident{}
	for _, in := range stored {
		if in.State == store.IncidentOpen {
			live[in.ID] = in
		}
	}
	emit := func(in store.GroupIncident, m notify.Message) error {
		rows, err := fleet.enqueue(now, in.Members, m)
		out = append(out, rows...)
		return err
	}
	for _, g := range groups {
		members := fleet.members(g)
		cur, ok := live[g.ID]
		delete(live, g.ID)
		fp := drift.Fingerprint(g.ID, addressed(members))
		if ok && cur.Fingerprint == fp {
			continue
		}
		next := store.GroupIncident{
			ID: g.ID, Key: GroupKey(g.ID), Cause: string(g.Cause), CauseKey: g.Key, Title: g.Title,
			State: store.IncidentOpen, Members: members, Workspaces: g.Workspaces,
			FirstSeen: g.FirstSeen, LastSeen: g.LastSeen, OpenedAt: now, NotifiedAt: now,
			Fingerprint: fp, Severity: string(fleet.severity(members)),
		}
		ev, delta := notify.EventOpen, (*notify.Delta)(nil)
		if ok {
			next.OpenedAt = cur.OpenedAt
			ev = notify.EventUpdate
			d := Diff(addressed(cur.Members), addressed(members))
			delta = &d
		}
		m := groupMessage(newID(), ev, next, g.Subject, fleet.link(g.ID), now)
		m.Delta = delta
		if ok {
			m.PrevSeverity = notify.Severity(cur.Severity)
		}
		changed = append(changed, next)
		if err := emit(next, m); err != nil {
			return nil, nil, err
		}
	}
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		in := live[id]
		prev := in.Severity
		in.State, in.ResolvedAt, in.NotifiedAt = store.IncidentResolved, now, now
		m := groupMessage(newID(), notify.EventResolve, in, groupSubject(in), fleet.link(id), now)
		m.PrevSeverity = notify.Severity(prev)
		changed = append(changed, in)
		if err := emit(in, m); err != nil {
			return nil, nil, err
		}
	}
	return changed, out, nil
}

// GroupKey is the incident key of group id's messages: "dw-group-<hash>".
func GroupKey(id string) string { return "dw-group-" + strings.TrimPrefix(id, "g-") }

// groupMessage is a group incident's message: its Workspace is the
// group's subject and its findings' addresses name their workspaces.
func groupMessage(id string, ev notify.Event, in store.GroupIncident, subject, url string, now time.Time) notify.Message {
	fs := addressed(in.Members)
	return notify.Message{
		ID:    id,
		Event: ev,
		Incident: notify.Incident{
			Key:       in.Key,
			Workspace: subject,
			Class:     notify.ClassDrift,
			Severity:  notify.Severity(in.Severity),
			Since:     in.OpenedAt,
			Findings:  fs,
			Counts:    drift.CountFindings(fs),
			URL:       url,
			Group:     &notify.Group{ID: in.ID, Cause: in.Cause, Title: in.Title, Workspaces: memberWorkspaces(in.Members)},
		},
		At: now,
	}
}

// groupSubject is a stored group's subject: its title without the counts
// group.Compute adds (" on N resources in M workspaces").
func groupSubject(in store.GroupIncident) string {
	if i := strings.LastIndex(in.Title, " on "); i > 0 {
		return in.Title[:i]
	}
	return in.Title
}

// memberWorkspaces are the distinct workspaces of members, sorted.
func memberWorkspaces(members []store.GroupMember) []string {
	out := []string{}
	for _, m := range members {
		out = append(out, m.Workspace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// addressed are members' findings with "WORKSPACE: ADDRESS" addresses,
// sorted.
func addressed(members []store.GroupMember) []drift.Finding {
	out := make([]drift.Finding, 0, len(members))
	for _, m := range members {
		f := cloneFinding(m.Finding)
		f.Address = m.Workspace + ": " + f.Address
		out = append(out, f)
	}
	drift.SortFindings(out)
	return out
}

// members are g's members with their findings.
func (f Fleet) members(g group.Group) []store.GroupMember {
	out := make([]store.GroupMember, 0, len(g.Members))
	for _, m := range g.Members {
		out = append(out, store.GroupMember{Workspace: m.Workspace, Finding: cloneFinding(f.Findings[m])})
	}
	return out
}

func (f Fleet) link(id string) string {
	if f.Link == nil {
		return ""
	}
	return f.Link(id)
}

// severity is the highest severity a member workspace's policy gives
// its members' findings.
func (f Fleet) severity(members []store.GroupMember) notify.Severity {
	byWS := map[string][]drift.Finding{}
	for _, m := range members {
		byWS[m.Workspace] = append(byWS[m.Workspace], m.Finding)
	}
	best := DefaultSeverity[notify.ClassDrift]
	first := true
	for ws, fs := range byWS {
		p, ok := f.Plans[ws]
		if !ok {
			continue
		}
		if sev, _ := p.Policy.base(notify.ClassDrift, fs); first || sev.Rank() > best.Rank() {
			best, first = sev, false
		}
	}
	return best
}

// enqueue is m's outbox rows: one per notifier of the member workspaces'
// targets.
func (f Fleet) enqueue(now time.Time, members []store.GroupMember, m notify.Message) ([]store.OutboxMessage, error) {
	var targets []Target
	for _, ws := range memberWorkspaces(members) {
		p, ok := f.Plans[ws]
		if !ok {
			continue
		}
		for _, t := range p.Targets {
			if !slices.ContainsFunc(targets, func(o Target) bool { return o.Notifier == t.Notifier }) {
				targets = append(targets, t)
			}
		}
	}
	return Enqueue(now, []notify.Message{m}, targets)
}
