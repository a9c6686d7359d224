package incident

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	fBucket = drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update",
		Attributes: []string{"versioning", "tags.owner"}}
	fBucketMore = drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update",
		Attributes: []string{"versioning", "tags.owner", "acl"}}
	fSG      = drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "delete"}
	fPending = drift.Finding{Kind: drift.KindPending, Address: "aws_iam_role.ci", Type: "aws_iam_role", Action: "create",
		Attributes: []string{}}
	fNoise     = drift.Finding{Kind: drift.KindNoise, Address: "data.aws_caller_identity.me", Type: "aws_caller_identity", Action: "read"}
	fIgnored   = drift.Finding{Kind: drift.KindDrift, Address: "aws_instance.bastion", Type: "aws_instance", Action: "update", Attributes: []string{"ami"}, Ignored: true}
	fUnmanaged = drift.Finding{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="/srv/hand"]`, Type: "dwtest_file", Action: "none", Detail: "/srv/hand"}
	fTwice     = drift.Finding{Kind: drift.KindManagedTwice, Address: `dwtest_file[filename="/srv/s"]`, Type: "dwtest_file", Action: "none",
		ManagedBy: []string{"a: dwtest_file.s", "b: dwtest_file.s"}}
	fForbidden = drift.Finding{Kind: drift.KindForbidden, Address: "helm_release.app", Type: "helm_release", Action: "no-op",
		SeenIn: []string{drift.SeenInConfig, drift.SeenInState}}
)

// step is one finished run: findings on success, or err (non-empty) for an
// errored run, at t0 plus at.
type step struct {
	at       time.Duration
	findings []drift.Finding
	err      string
	status   drift.Status // overrides the status the store would compute
	// want is the messages the run sends, as "class:event".
	want []string
	// states, if set, is every class's incident state after the run
	// ("" for no incident).
	states map[notify.Class]store.IncidentState
}

// sim plays the store: it finishes runs like store.FinishRun (an errored
// run keeps the previous findings and counts consecutive errors) and
// applies Decide's changes by key.
type sim struct {
	t         *testing.T
	ws        string
	p         Policy
	state     store.WorkspaceState
	incidents []store.Incident
	runs, ids int
	sent      []notify.Message
}

func newSim(t *testing.T, p Policy) *sim {
	return &sim{t: t, ws: "net", p: p, state: store.WorkspaceState{Workspace: "net"}}
}

func (s *sim) run(st step) ([]store.Incident, []notify.Message) {
	s.t.Helper()
	s.runs++
	now := t0.Add(st.at)
	before := s.state
	after := before
	after.LastRunID = fmt.Sprintf("run-%d", s.runs)
	after.LastRunAt = now
	if st.err != "" {
		after.Status = drift.StatusErrored
		after.Error = st.err
		after.ConsecutiveErrors++
	} else {
		after.Status = drift.StatusOf(st.findings)
		after.Findings = st.findings
		after.Fingerprint = drift.Fingerprint(s.ws, st.findings)
		after.Error = ""
		after.ConsecutiveErrors = 0
		after.LastSuccessAt = now
	}
	if st.status != "" {
		after.Status = st.status
	}
	s.state = after
	changed, msgs := Decide(now, after.LastRunID, s.p, before, after, slices.Clone(s.incidents), func() string {
		s.ids++
		return fmt.Sprintf("msg-%d", s.ids)
	})
	for _, c := range changed {
		i := slices.IndexFunc(s.incidents, func(in store.Incident) bool { return in.Key == c.Key })
		if i < 0 {
			s.incidents = append(s.incidents, c)
		} else {
			s.incidents[i] = c
		}
	}
	s.sent = append(s.sent, msgs...)
	return changed, msgs
}

func (s *sim) incident(c notify.Class) *store.Incident {
	for i := range s.incidents {
		if s.incidents[i].Class == string(c) {
			return &s.incidents[i]
		}
	}
	return nil
}

func events(msgs []notify.Message) []string {
	out := []string{}
	for _, m := range msgs {
		out = append(out, string(m.Incident.Class)+":"+string(m.Event))
	}
	return out
}

const (
	open     = store.IncidentOpen
	pending  = store.IncidentPending
	resolved = store.IncidentResolved
)

func TestDecideTransitions(t *testing.T) {
	errText := "plan: exit status 1: Error: Failed to query available provider packages"
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{
			name: "drift opens, stays silent while unchanged, resolves on a clean run",
			steps: []step{
				{findings: []drift.Finding{fBucket}, want: []string{"drift:open"},
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: open}},
				{at: time.Hour, findings: []drift.Finding{fBucket}, want: nil},
				{at: 2 * time.Hour, findings: []drift.Finding{fBucket, fNoise}, want: nil},
				{at: 3 * time.Hour, findings: nil, want: []string{"drift:resolve"},
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: resolved}},
				{at: 4 * time.Hour, findings: nil, want: nil},
			},
		},
		{
			name: "a scan's unmanaged and managed-twice resources open a drift incident, deleting them resolves it",
			steps: []step{
				{findings: []drift.Finding{fUnmanaged, fTwice}, want: []string{"drift:open"},
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: open}},
				{at: time.Hour, findings: []drift.Finding{fTwice}, want: []string{"drift:update"}},
				{at: 2 * time.Hour, findings: []drift.Finding{{Kind: drift.KindUnmanaged, Address: "x", Type: "x", Ignored: true}}, want: []string{"drift:resolve"},
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: resolved}},
			},
		},
		{
			name: "a clean workspace never creates an incident",
			steps: []step{
				{findings: nil, want: nil, states: map[notify.Class]store.IncidentState{}},
				{at: time.Hour, findings: []drift.Finding{fNoise, fIgnored}, want: nil, states: map[notify.Class]store.IncidentState{}},
			},
		},
		{
			name: "changed fingerprint updates, a removed address too",
			steps: []step{
				{findings: []drift.Finding{fBucket}, want: []string{"drift:open"}},
				{at: time.Hour, findings: []drift.Finding{fBucketMore}, want: []string{"drift:update"}},
				{at: 2 * time.Hour, findings: []drift.Finding{fBucketMore, fSG}, want: []string{"drift:update"}},
				{at: 3 * time.Hour, findings: []drift.Finding{fSG}, want: []string{"drift:update"}},
				{at: 4 * time.Hour, findings: []drift.Finding{fSG}, want: nil},
			},
		},
		{
			name: "a resolved incident re-opens under the same key",
			steps: []step{
				{findings: []drift.Finding{fBucket}, want: []string{"drift:open"}},
				{at: time.Hour, want: []string{"drift:resolve"}},
				{at: 2 * time.Hour, findings: []drift.Finding{fBucket}, want: []string{"drift:open"},
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: open}},
			},
		},
		{
			name:   "confirm_after=2: a flap pages nobody",
			policy: Policy{ConfirmAfter: 2},
			steps: []step{
				{findings: []drift.Finding{fBucket}, want: nil, states: map[notify.Class]store.IncidentState{notify.ClassDrift: pending}},
				{at: time.Hour, want: nil, states: map[notify.Class]store.IncidentState{notify.ClassDrift: resolved}},
				{at: 2 * time.Hour, findings: []drift.Finding{fBucket}, want: nil, states: map[notify.Class]store.IncidentState{notify.ClassDrift: pending}},
				{at: 3 * time.Hour, want: nil, states: map[notify.Class]store.IncidentState{notify.ClassDrift: resolved}},
				{at: 4 * time.Hour, findings: []drift.Finding{fBucket}, want: nil},
				{at: 5 * time.Hour, findings: []drift.Finding{fBucket}, want: []string{"drift:open"},
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: open}},
				{at: 6 * time.Hour, want: []string{"drift:resolve"}},
			},
		},
		{
			name:   "confirm_after=2: consecutive observations may differ",
			policy: Policy{ConfirmAfter: 2},
			steps: []step{
				{findings: []drift.Finding{fBucket}, want: nil},
				{at: time.Hour, findings: []drift.Finding{fSG}, want: []string{"drift:open"}},
			},
		},
		{
			name:   "confirm_after=2: an errored run neither confirms nor resets",
			policy: Policy{ConfirmAfter: 2},
			steps: []step{
				{findings: []drift.Finding{fBucket}, want: nil},
				{at: time.Hour, err: errText, want: nil,
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: pending, notify.ClassErrored: pending}},
				{at: 2 * time.Hour, findings: []drift.Finding{fBucket}, want: []string{"drift:open"},
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: open, notify.ClassErrored: resolved}},
			},
		},
		{
			name: "errored_after=3 (default) opens on the third error and resolves on recovery",
			steps: []step{
				{err: errText, want: nil, states: map[notify.Class]store.IncidentState{notify.ClassErrored: pending}},
				{at: time.Hour, err: errText, want: nil},
				{at: 2 * time.Hour, err: errText, want: []string{"errored:open"},
					states: map[notify.Class]store.IncidentState{notify.ClassErrored: open}},
				{at: 3 * time.Hour, err: "a different error", want: nil},
				{at: 4 * time.Hour, findings: nil, want: []string{"errored:resolve"},
					states: map[notify.Class]store.IncidentState{notify.ClassErrored: resolved}},
			},
		},
		{
			name: "transient errors below errored_after page nobody",
			steps: []step{
				{err: errText, want: nil},
				{at: time.Hour, err: errText, want: nil},
				{at: 2 * time.Hour, want: nil, states: map[notify.Class]store.IncidentState{notify.ClassErrored: resolved}},
				{at: 3 * time.Hour, err: errText, want: nil},
				{at: 4 * time.Hour, err: errText, want: nil},
				{at: 5 * time.Hour, err: errText, want: []string{"errored:open"}},
			},
		},
		{
			name:   "errored_after=1",
			policy: Policy{ErroredAfter: 1},
			steps: []step{
				{err: errText, want: []string{"errored:open"}},
				{at: time.Hour, findings: []drift.Finding{fBucket}, want: []string{"drift:open", "errored:resolve"}},
			},
		},
		{
			name: "errored runs leave drift and forbidden open, recovery with the same findings is silent for them",
			steps: []step{
				{findings: []drift.Finding{fBucket, fForbidden}, want: []string{"forbidden:open", "drift:open"}},
				{at: time.Hour, err: errText, want: nil},
				{at: 2 * time.Hour, err: errText, want: nil},
				{at: 3 * time.Hour, err: errText, want: []string{"errored:open"},
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: open, notify.ClassForbidden: open, notify.ClassErrored: open}},
				{at: 4 * time.Hour, findings: []drift.Finding{fBucket, fForbidden}, want: []string{"errored:resolve"}},
			},
		},
		{
			name: "recovery with clean findings resolves everything",
			steps: []step{
				{findings: []drift.Finding{fBucket, fForbidden}, want: []string{"forbidden:open", "drift:open"}},
				{at: time.Hour, err: errText, want: nil},
				{at: 2 * time.Hour, err: errText, want: nil},
				{at: 3 * time.Hour, err: errText, want: []string{"errored:open"}},
				{at: 4 * time.Hour, want: []string{"forbidden:resolve", "drift:resolve", "errored:resolve"}},
			},
		},
		{
			name: "forbidden and drift are separate incidents",
			steps: []step{
				{findings: []drift.Finding{fForbidden}, want: []string{"forbidden:open"}},
				{at: time.Hour, findings: []drift.Finding{fForbidden, fBucket}, want: []string{"drift:open"}},
				{at: 2 * time.Hour, findings: []drift.Finding{fForbidden}, want: []string{"drift:resolve"},
					states: map[notify.Class]store.IncidentState{notify.ClassForbidden: open, notify.ClassDrift: resolved}},
			},
		},
		{
			name: "include_pending off: pending findings alone open nothing and do not change the fingerprint",
			steps: []step{
				{findings: []drift.Finding{fPending}, want: nil, states: map[notify.Class]store.IncidentState{}},
				{at: time.Hour, findings: []drift.Finding{fBucket}, want: []string{"drift:open"}},
				{at: 2 * time.Hour, findings: []drift.Finding{fBucket, fPending}, want: nil},
				{at: 3 * time.Hour, findings: []drift.Finding{fPending}, want: []string{"drift:resolve"}},
			},
		},
		{
			name:   "include_pending on: pending findings count as drift",
			policy: Policy{IncludePending: true},
			steps: []step{
				{findings: []drift.Finding{fPending}, want: []string{"drift:open"}},
				{at: time.Hour, findings: []drift.Finding{fBucket, fPending}, want: []string{"drift:update"}},
				{at: 2 * time.Hour, findings: []drift.Finding{fBucket}, want: []string{"drift:update"}},
				{at: 3 * time.Hour, want: []string{"drift:resolve"}},
			},
		},
		{
			name:   "renotify after the interval since the last message",
			policy: Policy{RenotifyAfter: time.Hour},
			steps: []step{
				{findings: []drift.Finding{fBucket}, want: []string{"drift:open"}},
				{at: 30 * time.Minute, findings: []drift.Finding{fBucket}, want: nil},
				{at: 59 * time.Minute, findings: []drift.Finding{fBucket}, want: nil},
				{at: 60 * time.Minute, findings: []drift.Finding{fBucket}, want: []string{"drift:renotify"}},
				{at: 90 * time.Minute, findings: []drift.Finding{fBucketMore}, want: []string{"drift:update"}},
				{at: 140 * time.Minute, findings: []drift.Finding{fBucketMore}, want: nil},
				{at: 150 * time.Minute, findings: []drift.Finding{fBucketMore}, want: []string{"drift:renotify"}},
				{at: 300 * time.Minute, err: "boom", want: nil}, // errored runs renotify nothing of drift
				{at: 301 * time.Minute, findings: []drift.Finding{fBucketMore}, want: []string{"drift:renotify"}},
			},
		},
		{
			name:   "renotify of an open errored incident",
			policy: Policy{RenotifyAfter: time.Hour, ErroredAfter: 2},
			steps: []step{
				{err: errText, want: nil},
				{at: time.Minute, err: errText, want: []string{"errored:open"}},
				{at: 30 * time.Minute, err: errText, want: nil},
				{at: 61 * time.Minute, err: errText, want: []string{"errored:renotify"}},
			},
		},
		{
			name:   "no renotify when the interval is zero",
			policy: Policy{},
			steps: []step{
				{findings: []drift.Finding{fBucket}, want: []string{"drift:open"}},
				{at: 1000 * time.Hour, findings: []drift.Finding{fBucket}, want: nil},
			},
		},
		{
			name: "a status that is not a verdict changes nothing",
			steps: []step{
				{findings: []drift.Finding{fBucket}, want: []string{"drift:open"}},
				{at: time.Hour, status: store.RunInterrupted, want: nil,
					states: map[notify.Class]store.IncidentState{notify.ClassDrift: open}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, tc.policy)
			for i, st := range tc.steps {
				_, msgs := s.run(st)
				want := st.want
				if want == nil {
					want = []string{}
				}
				require.Equal(t, want, events(msgs), "run %d", i+1)
				if st.states != nil {
					got := map[notify.Class]store.IncidentState{}
					for _, in := range s.incidents {
						got[notify.Class(in.Class)] = in.State
					}
					require.Equal(t, st.states, got, "run %d", i+1)
				}
			}
			// Invariants over the whole history.
			for _, in := range s.incidents {
				require.Equal(t, Key(s.ws, notify.Class(in.Class)), in.Key)
				require.Equal(t, s.ws, in.Workspace)
			}
			seen := map[string]bool{}
			for _, m := range s.sent {
				require.False(t, seen[m.ID], "message id %s reused", m.ID)
				seen[m.ID] = true
			}
		})
	}
}

func TestDecideOnlyReturnsChangedIncidents(t *testing.T) {
	s := newSim(t, Policy{})
	changed, _ := s.run(step{findings: []drift.Finding{fBucket}})
	require.Len(t, changed, 1)
	changed, msgs := s.run(step{at: time.Hour, findings: []drift.Finding{fBucket}})
	require.Empty(t, changed, "an unchanged open incident is not rewritten")
	require.Empty(t, msgs)

	s = newSim(t, Policy{})
	s.run(step{err: "x"})
	changed, _ = s.run(step{err: "x"})
	require.Len(t, changed, 1, "the pending errored incident counts errors")
	require.Equal(t, 2, changed[0].Observations)
}

func TestDecideIncidentRows(t *testing.T) {
	s := newSim(t, Policy{ConfirmAfter: 2, Severity: map[notify.Class]notify.Severity{notify.ClassDrift: notify.SeverityCritical}})
	s.run(step{findings: []drift.Finding{fBucket}})
	key := Key("net", notify.ClassDrift)
	require.Equal(t, store.Incident{
		Key: key, Workspace: "net", Class: "drift", State: pending, Observations: 1,
		OpenedAt: t0, Severity: "critical",
	}, *s.incident(notify.ClassDrift))

	s.run(step{at: time.Hour, findings: []drift.Finding{fSG, fBucket, fNoise}})
	want := store.Incident{
		Key: key, Workspace: "net", Class: "drift", State: open, Observations: 2,
		OpenedAt: t0, NotifiedAt: t0.Add(time.Hour), Severity: "critical",
		Fingerprint: drift.Fingerprint("net", []drift.Finding{fBucket, fSG}),
		Findings:    []drift.Finding{fBucket, fSG},
	}
	require.Empty(t, cmp.Diff(want, *s.incident(notify.ClassDrift)))

	s.run(step{at: 2 * time.Hour})
	want.State, want.ResolvedAt, want.NotifiedAt, want.Observations = resolved, t0.Add(2*time.Hour), t0.Add(2*time.Hour), 0
	require.Empty(t, cmp.Diff(want, *s.incident(notify.ClassDrift)), "a resolved incident keeps what was last notified")

	s.run(step{at: 3 * time.Hour, findings: []drift.Finding{fSG}})
	require.Empty(t, cmp.Diff(store.Incident{
		Key: key, Workspace: "net", Class: "drift", State: pending, Observations: 1,
		OpenedAt: t0.Add(3 * time.Hour), NotifiedAt: t0.Add(2 * time.Hour), Severity: "critical",
	}, *s.incident(notify.ClassDrift)), "re-observed: a new opening time, nothing notified yet")

	_, msgs := s.run(step{at: 4 * time.Hour, findings: []drift.Finding{fSG}})
	require.Len(t, msgs, 1)
	require.Equal(t, t0.Add(3*time.Hour), msgs[0].Incident.Since, "since is the first observation")
	require.Equal(t, t0.Add(3*time.Hour), s.incident(notify.ClassDrift).OpenedAt)
	require.True(t, s.incident(notify.ClassDrift).ResolvedAt.IsZero())
}

func TestDecideMessages(t *testing.T) {
	p := Policy{
		Owner: "team-net", Team: "net-oncall", URL: "https://driftwatch.example/workspaces/net",
		Labels:   map[string]string{"env": "prod"},
		Severity: map[notify.Class]notify.Severity{notify.ClassForbidden: notify.SeverityCritical},
	}
	s := newSim(t, p)
	_, msgs := s.run(step{findings: []drift.Finding{fSG, fNoise, fIgnored, fPending, fForbidden, fBucket}})
	want := []notify.Message{
		{
			ID: "msg-1", Event: notify.EventOpen, At: t0,
			Incident: notify.Incident{
				Key: Key("net", notify.ClassForbidden), Workspace: "net", Class: notify.ClassForbidden,
				Severity: notify.SeverityCritical, Owner: "team-net", Team: "net-oncall",
				Labels: map[string]string{"env": "prod"}, Since: t0,
				Findings: []drift.Finding{fForbidden}, Counts: drift.Counts{Forbidden: 1},
				RunID: "run-1", URL: "https://driftwatch.example/workspaces/net",
			},
		},
		{
			ID: "msg-2", Event: notify.EventOpen, At: t0,
			Incident: notify.Incident{
				Key: Key("net", notify.ClassDrift), Workspace: "net", Class: notify.ClassDrift,
				Severity: notify.SeverityModerate, Owner: "team-net", Team: "net-oncall",
				Labels: map[string]string{"env": "prod"}, Since: t0,
				// Counted only (no noise, ignored or, without include_pending,
				// pending), sorted by address.
				Findings: []drift.Finding{fBucket, fSG}, Counts: drift.Counts{Drift: 2},
				RunID: "run-1", URL: "https://driftwatch.example/workspaces/net",
			},
		},
	}
	require.Empty(t, cmp.Diff(want, msgs))

	// The message does not alias the policy or the stored incident.
	msgs[1].Incident.Labels["env"] = "changed"
	msgs[1].Incident.Findings[0].Attributes[0] = "changed"
	require.Equal(t, "prod", p.Labels["env"])
	require.Equal(t, fBucket, s.incident(notify.ClassDrift).Findings[0])

	_, msgs = s.run(step{at: time.Hour, findings: []drift.Finding{fBucketMore, fPending, fForbidden}})
	require.Empty(t, cmp.Diff([]notify.Message{{
		ID: "msg-3", Event: notify.EventUpdate, At: t0.Add(time.Hour),
		Incident: notify.Incident{
			Key: Key("net", notify.ClassDrift), Workspace: "net", Class: notify.ClassDrift,
			Severity: notify.SeverityModerate, Owner: "team-net", Team: "net-oncall",
			Labels: map[string]string{"env": "prod"}, Since: t0,
			Findings: []drift.Finding{fBucketMore}, Counts: drift.Counts{Drift: 1},
			RunID: "run-2", URL: "https://driftwatch.example/workspaces/net",
		},
		Delta:        &notify.Delta{Removed: []drift.Finding{fSG}, Changed: []drift.Finding{fBucketMore}},
		PrevSeverity: notify.SeverityModerate,
	}}, msgs))

	_, msgs = s.run(step{at: 2 * time.Hour, findings: []drift.Finding{fForbidden}})
	require.Len(t, msgs, 1)
	require.Equal(t, notify.EventResolve, msgs[0].Event)
	require.Equal(t, []drift.Finding{fBucketMore}, msgs[0].Incident.Findings, "a resolve lists what resolved")
	require.Equal(t, drift.Counts{Drift: 1}, msgs[0].Incident.Counts)
	require.Equal(t, t0, msgs[0].Incident.Since)
	require.Nil(t, msgs[0].Delta)
}

func TestDecideErroredMessages(t *testing.T) {
	s := newSim(t, Policy{ErroredAfter: 2})
	s.run(step{err: "init: module not found"})
	_, msgs := s.run(step{at: time.Hour, err: "plan: timeout after 30m0s"})
	require.Len(t, msgs, 1)
	m := msgs[0]
	require.Equal(t, notify.EventOpen, m.Event)
	require.Equal(t, notify.ClassErrored, m.Incident.Class)
	require.Equal(t, notify.SeverityLow, m.Incident.Severity)
	require.Equal(t, "plan: timeout after 30m0s", m.Incident.Error)
	require.Equal(t, t0, m.Incident.Since, "since the first error")
	require.Empty(t, m.Incident.Findings)
	require.Equal(t, Key("net", notify.ClassErrored), m.Incident.Key)

	_, msgs = s.run(step{at: 2 * time.Hour})
	require.Len(t, msgs, 1)
	require.Equal(t, notify.EventResolve, msgs[0].Event)
	require.Equal(t, "plan: timeout after 30m0s", msgs[0].Incident.Error, "a resolve names the error that cleared")
}

func TestDecideUsesStoredKey(t *testing.T) {
	// A row written under an older key scheme keeps its key (and so its
	// OpsGenie alias and Slack thread).
	incidents := []store.Incident{{Key: "legacy-key", Workspace: "net", Class: "drift", State: open,
		OpenedAt: t0, NotifiedAt: t0, Fingerprint: "old", Findings: []drift.Finding{fSG}}}
	after := store.WorkspaceState{Workspace: "net", Status: drift.StatusDrift, Findings: []drift.Finding{fBucket}}
	changed, msgs := Decide(t0.Add(time.Hour), "r", Policy{}, store.WorkspaceState{Workspace: "net"}, after, incidents, func() string { return "id" })
	require.Len(t, changed, 1)
	require.Equal(t, "legacy-key", changed[0].Key)
	require.Equal(t, "legacy-key", msgs[0].Incident.Key)
	require.Equal(t, fSG, incidents[0].Findings[0], "the input is not modified")
}

func TestDiff(t *testing.T) {
	fDrifted := drift.Finding{Kind: drift.KindDrift, Address: "aws_iam_role.ci", Action: "update", Attributes: []string{"name"}}
	tests := []struct {
		name     string
		old, cur []drift.Finding
		want     notify.Delta
	}{
		{"nothing", nil, nil, notify.Delta{}},
		{"same", []drift.Finding{fBucket}, []drift.Finding{fBucket}, notify.Delta{}},
		{"attribute order does not matter", []drift.Finding{fBucket},
			[]drift.Finding{{Kind: fBucket.Kind, Address: fBucket.Address, Type: fBucket.Type, Action: fBucket.Action, Attributes: []string{"tags.owner", "versioning"}}},
			notify.Delta{}},
		{"added", []drift.Finding{fBucket}, []drift.Finding{fSG, fBucket}, notify.Delta{Added: []drift.Finding{fSG}}},
		{"removed", []drift.Finding{fBucket, fSG}, []drift.Finding{fBucket}, notify.Delta{Removed: []drift.Finding{fSG}}},
		{"changed attributes", []drift.Finding{fBucket}, []drift.Finding{fBucketMore}, notify.Delta{Changed: []drift.Finding{fBucketMore}}},
		{"changed action", []drift.Finding{fSG}, []drift.Finding{{Kind: drift.KindDrift, Address: fSG.Address, Type: fSG.Type, Action: "update"}},
			notify.Delta{Changed: []drift.Finding{{Kind: drift.KindDrift, Address: fSG.Address, Type: fSG.Type, Action: "update"}}}},
		{"changed kind", []drift.Finding{fPending}, []drift.Finding{fDrifted}, notify.Delta{Changed: []drift.Finding{fDrifted}}},
		{"all three, sorted", []drift.Finding{fSG, fBucket, fPending}, []drift.Finding{fForbidden, fBucketMore},
			notify.Delta{
				Added:   []drift.Finding{fForbidden},
				Removed: []drift.Finding{fSG, fPending},
				Changed: []drift.Finding{fBucketMore},
			}},
		{"an address twice is matched by kind", []drift.Finding{fPending}, []drift.Finding{fDrifted, fPending},
			notify.Delta{Added: []drift.Finding{fDrifted}}},
		{"everything resolved", []drift.Finding{fBucket}, nil, notify.Delta{Removed: []drift.Finding{fBucket}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Empty(t, cmp.Diff(tc.want, Diff(tc.old, tc.cur)))
		})
	}
}

var keyRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func TestKey(t *testing.T) {
	// Pinned: a key must never change between releases, or open incidents
	// would be orphaned (OpsGenie alerts never closed).
	key := Key("net", notify.ClassDrift)
	require.Equal(t, "dw-drift-net-c1ed6833621a", key)
	require.Equal(t, key, Key("net", notify.ClassDrift), "the same key every time")

	names := []string{
		"net", "Net", "NET", "n-e-t", "n_e_t", "n.e.t", "net-", "prod/eu-west-1/vpc", "prod-eu-west-1-vpc",
		"", "---", "日本語", "ünïcödé", strings.Repeat("a", 300), strings.Repeat("a", 301), strings.Repeat("ab-", 100),
	}
	seen := map[string]string{}
	for _, ws := range names {
		for _, c := range classes {
			k := Key(ws, c)
			require.Regexp(t, keyRE, k, "workspace %q", ws)
			require.NotContains(t, k, "/")
			require.LessOrEqual(t, len(k), 100)
			require.True(t, strings.HasPrefix(k, "dw-"))
			id := ws + "|" + string(c)
			require.NotContains(t, seen, k, "%s collides with %s", id, seen[k])
			seen[k] = id
		}
	}
	require.Contains(t, Key("prod/eu-west-1/vpc", notify.ClassForbidden), "-forbidden-prod-eu-west-1-vpc-")
	require.Regexp(t, keyRE, Key("x", notify.Class("Weird Class/1")))
}

func TestPolicyDefaults(t *testing.T) {
	var p Policy
	require.Equal(t, 1, p.confirmAfter())
	require.Equal(t, 3, p.erroredAfter())
	require.Equal(t, notify.SeverityHigh, p.severity(notify.ClassForbidden))
	require.Equal(t, notify.SeverityModerate, p.severity(notify.ClassDrift))
	require.Equal(t, notify.SeverityLow, p.severity(notify.ClassErrored))
	p.Severity = map[notify.Class]notify.Severity{notify.ClassDrift: notify.SeverityInfo, notify.ClassErrored: ""}
	require.Equal(t, notify.SeverityInfo, p.severity(notify.ClassDrift))
	require.Equal(t, notify.SeverityLow, p.severity(notify.ClassErrored), "an empty override is no override")
}

// Failing checks open a validation incident of their own (moderate by
// default, configurable), beside a drift incident; an errored run leaves
// it alone; it resolves when the checks pass again.
func TestDecideValidation(t *testing.T) {
	fCheck := drift.Finding{Kind: drift.KindCheck, Address: "check.health", Type: "check", Action: "fail", Attributes: []string{}, Detail: "n is 5"}
	fCheckAgain := fCheck
	fCheckAgain.Detail = "n is 6"
	s := newSim(t, Policy{ErroredAfter: 3})
	_, msgs := s.run(step{findings: []drift.Finding{fCheck, fBucket}})
	require.Equal(t, []string{"drift:open", "validation:open"}, events(msgs))
	v := msgs[1]
	require.Equal(t, notify.SeverityModerate, v.Incident.Severity)
	require.Equal(t, []drift.Finding{fCheck}, v.Incident.Findings, "the validation incident holds the check findings only")
	require.Equal(t, "Checks failing in net: 1 check", notify.Title(v.Incident))

	_, msgs = s.run(step{at: time.Hour, findings: []drift.Finding{fCheckAgain}})
	require.Equal(t, []string{"drift:resolve"}, events(msgs), "a new message for the same failing check changes nothing")
	_, msgs = s.run(step{at: 2 * time.Hour, err: "plan: boom"})
	require.Empty(t, events(msgs))
	require.Equal(t, open, s.incident(notify.ClassValidation).State, "an errored run says nothing about checks")
	_, msgs = s.run(step{at: 3 * time.Hour})
	require.Equal(t, []string{"validation:resolve"}, events(msgs))

	s = newSim(t, Policy{Severity: map[notify.Class]notify.Severity{notify.ClassValidation: notify.SeverityCritical}})
	_, msgs = s.run(step{findings: []drift.Finding{fCheck}})
	require.Equal(t, []string{"validation:open"}, events(msgs))
	require.Equal(t, notify.SeverityCritical, msgs[0].Incident.Severity)
}
