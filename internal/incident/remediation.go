package incident

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Raise returns s raised by steps (info < low < moderate < high <
// critical), capped at critical. An unknown severity is returned as it is.
func Raise(s notify.Severity, steps int) notify.Severity {
	i := s.Rank()
	if i < 0 || steps <= 0 {
		return s
	}
	return severityOrder[min(i+steps, len(severityOrder)-1)]
}

// severityOrder is every severity, lowest first: a raise moves one step
// right, up to critical.
var severityOrder = []notify.Severity{
	notify.SeverityInfo, notify.SeverityLow, notify.SeverityModerate, notify.SeverityHigh, notify.SeverityCritical,
}

// escalation is how many steps failed remediations raised an open drift
// incident above its base severity (from its class and its findings
// last notified): the stored severity minus the base, never negative. Only the drift class is ever raised (a
// remediation reverts drift), so other classes are never escalated.
func escalation(in store.Incident, p Policy, c notify.Class) int {
	if c != notify.ClassDrift || in.State != store.IncidentOpen {
		return 0
	}
	base, _ := p.base(c, in.Findings)
	stored, policy := notify.Severity(in.Severity).Rank(), base.Rank()
	if stored < 0 || policy < 0 || stored <= policy {
		return 0
	}
	return stored - policy
}

// effectiveSeverity is the severity of an incident's messages: its base,
// raised by the incident's escalation.
func effectiveSeverity(in store.Incident, p Policy, c notify.Class) notify.Severity {
	base, _ := p.base(c, in.Findings)
	return Raise(base, escalation(in, p, c))
}

// Remediation announces a remediation of a workspace's drift on the page
// the on-call already has: the workspace's open drift incident. It returns
// the message (nil when no drift incident is open, e.g. confirm_after not
// reached yet: the remediation is recorded but pages nobody) and, for a
// failed apply (failed or verification_failed), the incident with its
// severity raised one step, capped at critical. The raise is stored in
// store.Incident.Severity, so every later message of the incident keeps it
// until the incident resolves. The message lists the findings last
// notified; its RunID is the apply run's (the detecting run's for a
// proposal), Incident.URL the status page and Remediation.URL the run's
// page.
func Remediation(now time.Time, p Policy, workspace, runID string, rem notify.Remediation, incidents []store.Incident, newID func() string) (changed *store.Incident, msg *notify.Message) {
	c := notify.ClassDrift
	cur := find(incidents, workspace, c)
	if cur == nil || cur.State != store.IncidentOpen {
		return nil, nil
	}
	was := *cur
	if rem.Result.Failed() {
		cur.Severity = string(Raise(effectiveSeverity(*cur, p, c), 1))
		changed = cur
	}
	d := decider{now: now, runID: runID, p: p, after: store.WorkspaceState{Workspace: workspace}, newID: newID}
	msg = d.withPrev(was, d.message(notify.EventRemediation, *cur, c, cur.Findings, "", nil))
	msg.Remediation = &rem
	return changed, msg
}
