package incident

import (
	"encoding/json"
	"slices"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Collapse is what one notifier's held messages of one incident (oldest
// first) add up to once its silence or maintenance window ends: one
// message saying what changed since the notifier last heard of the
// incident, not the backlog. It is nil when there is nothing to say: the
// incident opened and resolved while held, or it is as it was. A payload
// that does not decode (never written by this package) keeps the newest
// message as it is.
//
//   - The notifier had not heard of it (the first held message opens it):
//     the newest state as an open, unless it ended resolved.
//   - It had: a resolve if it ended resolved; else an update with the
//     findings' change over the whole hold (and the severity it had
//     before), if the findings or the severity changed.
func Collapse(q []store.OutboxMessage) *store.OutboxMessage {
	if len(q) == 0 {
		return nil
	}
	last := q[len(q)-1]
	msgs := make([]notify.Message, len(q))
	for i, m := range q {
		if err := json.Unmarshal(m.Payload, &msgs[i]); err != nil {
			return &last
		}
	}
	m, ok := collapse(msgs)
	if !ok {
		return nil
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return &last
	}
	last.Payload = payload
	return &last
}

// collapse is Collapse on decoded messages.
func collapse(msgs []notify.Message) (notify.Message, bool) {
	first, last := msgs[0], msgs[len(msgs)-1]
	heard := first.Event != notify.EventOpen
	out := last
	out.Remediation = nil
	switch {
	case last.Event == notify.EventResolve:
		if !heard {
			return notify.Message{}, false
		}
		out.Delta = nil
		out.PrevSeverity, out.PrevEscalated = first.PrevSeverity, first.PrevEscalated
		return out, true
	case !heard:
		out.Event, out.Delta = notify.EventOpen, nil
		out.PrevSeverity, out.PrevEscalated = "", 0
		return out, true
	}
	before := heardFindings(first)
	delta := Diff(before, last.Incident.Findings)
	for i, f := range delta.Removed {
		delta.Removed[i].Attributes = slices.DeleteFunc(f.Attributes, func(a string) bool { return a == unknownAttributes })
	}
	if len(delta.Added)+len(delta.Removed)+len(delta.Changed) == 0 && last.Incident.Severity == first.PrevSeverity {
		return notify.Message{}, false
	}
	out.Event, out.Delta = notify.EventUpdate, &delta
	out.PrevSeverity, out.PrevEscalated = first.PrevSeverity, first.PrevEscalated
	return out, true
}

// unknownAttributes marks a finding whose attribute paths before a change
// are not known (an update's Changed holds only the new ones): it differs
// from every real finding.
const unknownAttributes = "\x00unknown"

// heardFindings are the findings the notifier last heard of before m (an
// update, renotify or remediation of an incident it had heard of): m's,
// less what m's delta added, plus what it removed; a changed finding's
// old attribute paths are unknown.
func heardFindings(m notify.Message) []drift.Finding {
	if m.Delta == nil {
		return m.Incident.Findings
	}
	d := m.Delta
	key := func(f drift.Finding) string { return f.Address + "\x00" + string(f.Kind) }
	added := map[string]bool{}
	for _, f := range d.Added {
		added[key(f)] = true
	}
	changed := map[string]bool{}
	for _, f := range d.Changed {
		changed[key(f)] = true
	}
	var out []drift.Finding
	for _, f := range m.Incident.Findings {
		switch k := key(f); {
		case added[k]:
		case changed[k]:
			f = cloneFinding(f)
			f.Attributes = append(f.Attributes, unknownAttributes)
			out = append(out, f)
		default:
			out = append(out, f)
		}
	}
	out = append(out, d.Removed...)
	drift.SortFindings(out)
	return out
}
