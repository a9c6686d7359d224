package incident

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Defaults applied by Policy for zero values.
const (
	DefaultConfirmAfter = 1
	DefaultErroredAfter = 3
)

// DefaultSeverity is the severity of each class when the policy does not
// set one.
var DefaultSeverity = map[notify.Class]notify.Severity{
	notify.ClassForbidden:  notify.SeverityHigh,
	notify.ClassDrift:      notify.SeverityModerate,
	notify.ClassValidation: notify.SeverityModerate,
	notify.ClassErrored:    notify.SeverityLow,
}

// classes is every incident class, in the order Decide handles them (and
// so the order of its messages): most severe first.
var classes = []notify.Class{notify.ClassForbidden, notify.ClassDrift, notify.ClassValidation, notify.ClassErrored}

// Policy is a workspace's alerting policy.
type Policy struct {
	// IncludePending makes the drift class also count pending findings
	// (merged but unapplied configuration); opt-in per workspace.
	IncludePending bool
	// ConfirmAfter is how many consecutive successful runs must see a
	// drift or forbidden finding before its incident opens (0: 1).
	ConfirmAfter int
	// ErroredAfter is how many consecutive errored runs open an errored
	// incident (0: 3).
	ErroredAfter int
	// RenotifyAfter re-sends an unchanged open incident this long after its
	// last message (0: never).
	RenotifyAfter time.Duration
	// Severity per class; missing classes use DefaultSeverity. Route
	// overrides are applied later, per notifier, by Enqueue.
	Severity map[notify.Class]notify.Severity
	// Rules set severities from findings (base); the class's severity
	// applies where none matches.
	Rules []SeverityRule
	// Owner, Team, URL and Labels are copied into every message.
	Owner, Team, URL string
	Labels           map[string]string
	// Grouped and Waiting, if set, leave findings out of the drift
	// class: Grouped ones are in a group of several workspaces (their
	// group incident alerts them); Waiting ones may join one soon
	// (grouping.wait), unless the incident already notified them. Set
	// per run by the grouping service (incident/fleet).
	Grouped, Waiting func(drift.Finding) bool
}

func (p Policy) confirmAfter() int {
	if p.ConfirmAfter <= 0 {
		return DefaultConfirmAfter
	}
	return p.ConfirmAfter
}

func (p Policy) erroredAfter() int {
	if p.ErroredAfter <= 0 {
		return DefaultErroredAfter
	}
	return p.ErroredAfter
}

func (p Policy) severity(c notify.Class) notify.Severity {
	if s, ok := p.Severity[c]; ok && s != "" {
		return s
	}
	return DefaultSeverity[c]
}

// Key returns the stable key of a workspace's incident of class c:
// "dw-<class>-<workspace slug>-<hash>", at most 90 characters of [a-z0-9-].
// The readable part helps a human scanning OpsGenie aliases; the hash (of
// the exact workspace name and class) keeps keys of names that slug alike
// ("Net" and "net") distinct.
func Key(workspace string, class notify.Class) string {
	sum := sha256.Sum256([]byte(workspace + "\x00" + string(class)))
	parts := []string{"dw"}
	for _, p := range []string{slug(string(class), 12), slug(workspace, 60)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(append(parts, hex.EncodeToString(sum[:])[:12]), "-")
}

// slug lowercases s, turns every run of characters outside [a-z0-9] into
// one "-", trims dashes and cuts the result to at most n bytes.
func slug(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > n {
		out = out[:n]
	}
	return strings.Trim(out, "-")
}

// Decide computes the consequences of one finished run of a workspace:
// before and after are its state around the run (store.FinishRun), incidents
// are its stored incidents (any state). It returns the incidents to write
// (only those that changed) and the messages to send, with IDs from newID.
// now is the run's finish time.
//
// Drift and forbidden incidents change only on successful runs; an errored
// run leaves them untouched and drives the errored incident alone. A run
// whose status is not a verdict (neither clean, pending, validation,
// drift, forbidden nor errored) changes nothing. A validation incident
// holds the run's check findings: opened by failing checks, resolved when
// a successful run has none.
func Decide(now time.Time, runID string, p Policy, before, after store.WorkspaceState, incidents []store.Incident, newID func() string) (changed []store.Incident, msgs []notify.Message) {
	if after.Status.Severity() < 0 {
		return nil, nil
	}
	errored := after.Status == drift.StatusErrored
	d := decider{now: now, runID: runID, p: p, before: before, after: after, newID: newID}
	for _, c := range classes {
		cur := find(incidents, after.Workspace, c)
		var next *store.Incident
		var m *notify.Message
		switch {
		case c == notify.ClassErrored:
			next, m = d.errored(cur, errored)
		case errored:
			continue // an error says nothing about drift
		default:
			// A failed apply can turn drift into a planned create (the
			// refreshed state no longer has the resource): an escalated
			// incident counts pending findings too, so it stays open
			// until the workspace is clean.
			pending := p.IncludePending || (cur != nil && cur.State == store.IncidentOpen && escalation(*cur, p, c) > 0)
			all := classFindings(after.Findings, c, pending)
			next, m = d.findings(cur, c, p.ungrouped(c, all, cur))
			if m != nil && m.Event == notify.EventResolve && len(all) > 0 {
				m.Incident.Reason = GroupedReason
			}
		}
		if next != nil {
			changed = append(changed, *next)
		}
		if m != nil {
			msgs = append(msgs, *m)
		}
	}
	return changed, msgs
}

type decider struct {
	now           time.Time
	runID         string
	p             Policy
	before, after store.WorkspaceState
	newID         func() string
}

// find returns the workspace's incident of class c. Matching is by class,
// not by Key, so an incident keeps its stored key (and with it the OpsGenie
// alias and Slack thread) even if Key's scheme ever changes.
func find(incidents []store.Incident, workspace string, c notify.Class) *store.Incident {
	var found *store.Incident
	for i := range incidents {
		in := &incidents[i]
		if in.Class != string(c) || (in.Workspace != "" && in.Workspace != workspace) {
			continue
		}
		// Should there ever be several rows, the live one wins.
		if found == nil || (found.State == store.IncidentResolved && in.State != store.IncidentResolved) {
			found = in
		}
	}
	if found == nil {
		return nil
	}
	cp := clone(*found)
	return &cp
}

func clone(in store.Incident) store.Incident {
	in.Findings = cloneFindings(in.Findings)
	return in
}

// GroupedReason is the reason of a resolve whose findings are all
// alerted by group incidents now.
const GroupedReason = "its drift is alerted as part of a group now"

// ungrouped drops from fs, of class c, the findings Grouped and Waiting
// hold; a waiting finding cur already notified stays.
func (p Policy) ungrouped(c notify.Class, fs []drift.Finding, cur *store.Incident) []drift.Finding {
	if c != notify.ClassDrift {
		return fs
	}
	return slices.DeleteFunc(fs, func(f drift.Finding) bool {
		if p.Grouped != nil && p.Grouped(f) {
			return true
		}
		return p.Waiting != nil && p.Waiting(f) && !(cur != nil && cur.State == store.IncidentOpen &&
			slices.ContainsFunc(cur.Findings, func(n drift.Finding) bool { return n.Address == f.Address && n.Kind == f.Kind }))
	})
}

// classFindings returns the counted findings (never noise or ignored) of
// class c, sorted.
func classFindings(fs []drift.Finding, c notify.Class, includePending bool) []drift.Finding {
	var out []drift.Finding
	for _, f := range fs {
		if f.Ignored {
			continue
		}
		switch {
		case c == notify.ClassForbidden && f.Kind == drift.KindForbidden,
			c == notify.ClassDrift && f.Kind == drift.KindDrift,
			c == notify.ClassDrift && (f.Kind == drift.KindUnmanaged || f.Kind == drift.KindManagedTwice),
			c == notify.ClassDrift && includePending && f.Kind == drift.KindPending,
			c == notify.ClassValidation && f.Kind == drift.KindCheck:
			out = append(out, cloneFinding(f))
		}
	}
	drift.SortFindings(out)
	return out
}

func cloneFindings(fs []drift.Finding) []drift.Finding {
	if fs == nil {
		return nil
	}
	out := make([]drift.Finding, len(fs))
	for i, f := range fs {
		out[i] = cloneFinding(f)
	}
	return out
}

func cloneFinding(f drift.Finding) drift.Finding {
	f.Attributes = slices.Clone(f.Attributes)
	f.SeenIn = slices.Clone(f.SeenIn)
	return f
}

// observe starts or continues the confirmation of an incident that is not
// open: a new row (or a resolved one re-used under its key) becomes pending
// with one observation.
func (d *decider) observe(cur *store.Incident, c notify.Class, observations int, fs []drift.Finding) store.Incident {
	if cur == nil || cur.State == store.IncidentResolved {
		in := store.Incident{
			Key:       Key(d.after.Workspace, c),
			Workspace: d.after.Workspace,
			Class:     string(c),
			State:     store.IncidentPending,
			OpenedAt:  d.now, // first observation: the incident's "since"
		}
		if cur != nil {
			in.Key = cur.Key
			in.NotifiedAt = cur.NotifiedAt
		}
		cur = &in
	}
	cur.Observations = observations
	d.setBase(cur, c, fs, 0)
	return *cur
}

// findings runs the lifecycle of a drift or forbidden incident on a
// successful run that found fs of its class.
func (d *decider) findings(cur *store.Incident, c notify.Class, fs []drift.Finding) (*store.Incident, *notify.Message) {
	if len(fs) == 0 {
		return d.clear(cur, c)
	}
	fp := drift.Fingerprint(d.after.Workspace, fs)
	if cur == nil || cur.State != store.IncidentOpen {
		obs := 1
		if cur != nil && cur.State == store.IncidentPending {
			obs = cur.Observations + 1
		}
		in := d.observe(cur, c, obs, fs)
		if obs < d.p.confirmAfter() {
			return &in, nil
		}
		in.State = store.IncidentOpen
		in.ResolvedAt = time.Time{}
		in.NotifiedAt = d.now
		in.Fingerprint, in.Findings = fp, fs
		return &in, d.message(notify.EventOpen, in, c, fs, "", nil)
	}
	if cur.Fingerprint != fp {
		delta := Diff(cur.Findings, fs)
		was := *cur
		esc := escalation(*cur, d.p, c) // a raise lasts until the incident resolves
		cur.Fingerprint, cur.Findings = fp, fs
		cur.NotifiedAt = d.now
		d.setBase(cur, c, fs, esc)
		return cur, d.withPrev(was, d.message(notify.EventUpdate, *cur, c, fs, "", &delta))
	}
	return d.renotify(cur, c, fs, "")
}

// errored runs the lifecycle of the errored incident.
func (d *decider) errored(cur *store.Incident, errored bool) (*store.Incident, *notify.Message) {
	c := notify.ClassErrored
	if !errored {
		return d.clear(cur, c)
	}
	n := max(d.after.ConsecutiveErrors, 1) // this run errored, whatever the count says
	if cur != nil && cur.State == store.IncidentOpen {
		return d.renotify(cur, c, nil, d.after.Error)
	}
	sev, _ := d.p.base(c, nil)
	unchanged := cur != nil && cur.State == store.IncidentPending && cur.Observations == n &&
		cur.Severity == string(sev)
	in := d.observe(cur, c, n, nil)
	if n < d.p.erroredAfter() {
		if unchanged {
			return nil, nil
		}
		return &in, nil
	}
	in.State = store.IncidentOpen
	in.ResolvedAt = time.Time{}
	in.NotifiedAt = d.now
	in.Fingerprint, in.Findings = "", nil
	return &in, d.message(notify.EventOpen, in, c, nil, d.after.Error, nil)
}

// clear handles a run on which the class is absent: an open incident
// resolves (and says so), a pending one is dropped silently (a flap that
// never confirmed pages nobody).
func (d *decider) clear(cur *store.Incident, c notify.Class) (*store.Incident, *notify.Message) {
	if cur == nil {
		return nil, nil
	}
	switch cur.State {
	case store.IncidentOpen:
		was := *cur
		cur.State = store.IncidentResolved
		cur.ResolvedAt = d.now
		cur.NotifiedAt = d.now
		cur.Observations = 0
		d.setBase(cur, c, cur.Findings, 0) // a failed remediation's raise ends here
		errText := ""
		if c == notify.ClassErrored {
			errText = d.before.Error // the error that had the incident open
		}
		// The resolve message lists what was last notified: what resolved.
		return cur, d.withPrev(was, d.message(notify.EventResolve, *cur, c, cur.Findings, errText, nil))
	case store.IncidentPending:
		cur.State = store.IncidentResolved
		cur.ResolvedAt = d.now
		cur.Observations = 0
		return cur, nil
	}
	return nil, nil
}

// renotify re-sends an unchanged open incident once RenotifyAfter has passed
// since its last message.
func (d *decider) renotify(cur *store.Incident, c notify.Class, fs []drift.Finding, errText string) (*store.Incident, *notify.Message) {
	if d.p.RenotifyAfter <= 0 || d.now.Sub(cur.NotifiedAt) < d.p.RenotifyAfter {
		return nil, nil
	}
	cur.NotifiedAt = d.now
	return cur, d.withPrev(*cur, d.message(notify.EventRenotify, *cur, c, fs, errText, nil))
}

// setBase sets in's severity from its class and findings fs (base),
// raised by esc steps, and the rule that set it.
func (d *decider) setBase(in *store.Incident, c notify.Class, fs []drift.Finding, esc int) {
	sev, rule := d.p.base(c, fs)
	in.Severity, in.SeverityRule = string(Raise(sev, esc)), rule
}

// withPrev records on m the severity of the incident's previous message,
// was's (a route's min_severity compares the two).
func (d *decider) withPrev(was store.Incident, m *notify.Message) *notify.Message {
	m.PrevSeverity = notify.Severity(was.Severity)
	m.PrevEscalated = escalation(was, d.p, m.Incident.Class)
	return m
}

func (d *decider) message(ev notify.Event, in store.Incident, c notify.Class, fs []drift.Finding, errText string, delta *notify.Delta) *notify.Message {
	fs = cloneFindings(fs)
	return &notify.Message{
		ID:    d.newID(),
		Event: ev,
		Incident: notify.Incident{
			Key:       in.Key,
			Workspace: d.after.Workspace,
			Class:     c,
			Severity:  effectiveSeverity(in, d.p, c),
			Escalated: escalation(in, d.p, c),
			Owner:     d.p.Owner,
			Team:      d.p.Team,
			Labels:    maps.Clone(d.p.Labels),
			Since:     in.OpenedAt,
			Findings:  fs,
			Counts:    drift.CountFindings(fs),
			Error:     errText,
			RunID:     d.runID,
			URL:       d.p.URL,
		},
		Delta: delta,
		At:    d.now,
	}
}

// Diff compares the findings last notified with the current ones by
// address: Added and Removed hold addresses present on one side only,
// Changed the current finding of addresses whose kind, action or attribute
// paths differ. Should an address appear more than once on a side (say as
// drift and as pending), its findings are matched by address and kind.
// Each list is sorted like drift.SortFindings.
func Diff(old, cur []drift.Finding) notify.Delta {
	dup := map[string]bool{}
	for _, side := range [][]drift.Finding{old, cur} {
		seen := map[string]bool{}
		for _, f := range side {
			if seen[f.Address] {
				dup[f.Address] = true
			}
			seen[f.Address] = true
		}
	}
	key := func(f drift.Finding) string {
		if dup[f.Address] {
			return f.Address + "\x00" + string(f.Kind)
		}
		return f.Address
	}
	was := make(map[string]drift.Finding, len(old))
	for _, f := range old {
		was[key(f)] = f
	}
	var delta notify.Delta
	now := make(map[string]bool, len(cur))
	for _, f := range cur {
		k := key(f)
		now[k] = true
		o, ok := was[k]
		switch {
		case !ok:
			delta.Added = append(delta.Added, cloneFinding(f))
		case !sameFinding(o, f):
			delta.Changed = append(delta.Changed, cloneFinding(f))
		}
	}
	for _, f := range old {
		if !now[key(f)] {
			delta.Removed = append(delta.Removed, cloneFinding(f))
		}
	}
	for _, l := range [][]drift.Finding{delta.Added, delta.Removed, delta.Changed} {
		drift.SortFindings(l)
	}
	return delta
}

// sameFinding compares what the fingerprint covers.
func sameFinding(a, b drift.Finding) bool {
	if a.Kind != b.Kind || a.Action != b.Action {
		return false
	}
	x, y := slices.Clone(a.Attributes), slices.Clone(b.Attributes)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
