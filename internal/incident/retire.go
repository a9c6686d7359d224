package incident

import (
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

// RemovedReason is why Retire resolves a workspace's incidents.
const RemovedReason = "workspace removed"

// Retire resolves the incidents of a workspace that left the config (a
// discovered root deleted from its tree, an entry removed): every open
// incident resolves with a resolve message, like a clean run would, and a
// pending one resolves silently. The rows stay (resolved), so the history
// is kept and a workspace that comes back reuses its keys. runID is what
// the messages link to (the run that last saw the incident is a fine
// choice); now is the retirement time. Resolved incidents and other
// workspaces' rows are left alone.
func Retire(now time.Time, runID string, p Policy, workspace string, incidents []store.Incident, newID func() string) (changed []store.Incident, msgs []notify.Message) {
	d := decider{now: now, runID: runID, p: p, after: store.WorkspaceState{Workspace: workspace}, newID: newID}
	seen := map[notify.Class]bool{}
	for _, in := range incidents {
		c := notify.Class(in.Class)
		if seen[c] {
			continue
		}
		seen[c] = true
		next, m := d.clear(find(incidents, workspace, c), c)
		if next != nil {
			changed = append(changed, *next)
		}
		if m != nil {
			m.Incident.Reason = RemovedReason
			msgs = append(msgs, *m)
		}
	}
	return changed, msgs
}

// RetireOutcome is Retire's consequences under p as store rows: the
// incidents to write and, by Enqueue, one outbox message per notifier
// target of each resolve message.
func (p Plan) RetireOutcome(now time.Time, runID, workspace string, newID func() string) func(incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
	return func(incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		changed, msgs := Retire(now, runID, p.Policy, workspace, incidents, newID)
		out, err := p.Enqueue(now, msgs)
		if err != nil {
			// Enqueue only fails on a payload that cannot be encoded: a bug.
			panic(fmt.Sprintf("driftwatch/incident: enqueue: %v", err))
		}
		return changed, out
	}
}
