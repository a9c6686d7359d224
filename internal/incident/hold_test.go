package incident

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

// held plays the decider through a silence: every message of the run
// sequence is queued as one notifier's held rows.
func held(t *testing.T, s *sim, steps ...step) []store.OutboxMessage {
	t.Helper()
	var q []store.OutboxMessage
	for _, st := range steps {
		_, msgs := s.run(st)
		rows, err := Enqueue(t0, msgs, []Target{{Notifier: "pager"}})
		require.NoError(t, err)
		q = append(q, rows...)
	}
	return q
}

func released(t *testing.T, q []store.OutboxMessage) *notify.Message {
	t.Helper()
	c := Collapse(q)
	if c == nil {
		return nil
	}
	require.Equal(t, q[len(q)-1].ID, c.ID, "the newest message's id: a retry after a crash is the same delivery")
	var m notify.Message
	require.NoError(t, json.Unmarshal(c.Payload, &m))
	return &m
}

func TestCollapse(t *testing.T) {
	t.Run("opened while held: one open with the newest findings", func(t *testing.T) {
		s := newSim(t, Policy{RenotifyAfter: time.Minute})
		m := released(t, held(t, s,
			step{findings: []drift.Finding{fSG}},
			step{at: time.Hour, findings: []drift.Finding{fSG, fBucket}},
			step{at: 2 * time.Hour, findings: []drift.Finding{fSG, fBucket}},
		))
		require.Equal(t, notify.EventOpen, m.Event)
		require.Nil(t, m.Delta)
		require.Equal(t, []drift.Finding{fBucket, fSG}, m.Incident.Findings)
		require.Equal(t, t0, m.Incident.Since)
	})
	t.Run("opened and resolved while held: nothing", func(t *testing.T) {
		s := newSim(t, Policy{})
		require.Nil(t, released(t, held(t, s, step{findings: []drift.Finding{fSG}}, step{at: time.Hour})))
	})
	t.Run("open before, resolved while held: one resolve", func(t *testing.T) {
		s := newSim(t, Policy{})
		s.run(step{findings: []drift.Finding{fSG}})
		m := released(t, held(t, s, step{at: time.Hour, findings: []drift.Finding{fSG, fBucket}}, step{at: 2 * time.Hour}))
		require.Equal(t, notify.EventResolve, m.Event)
		require.Nil(t, m.Delta)
	})
	t.Run("open before, changed while held: one update over the whole hold", func(t *testing.T) {
		s := newSim(t, Policy{})
		s.run(step{findings: []drift.Finding{fSG, fBucket}})
		m := released(t, held(t, s,
			step{at: time.Hour, findings: []drift.Finding{fBucketMore}},                // SG removed, bucket changed
			step{at: 2 * time.Hour, findings: []drift.Finding{fBucketMore, fPending2}}, // role added
			step{at: 3 * time.Hour, findings: []drift.Finding{fBucketMore}},            // role removed again
		))
		require.Equal(t, notify.EventUpdate, m.Event)
		require.Equal(t, &notify.Delta{Removed: []drift.Finding{fSG}, Changed: []drift.Finding{fBucketMore}}, m.Delta)
		require.Equal(t, []drift.Finding{fBucketMore}, m.Incident.Findings)
	})
	t.Run("open before, back as it was: nothing", func(t *testing.T) {
		s := newSim(t, Policy{})
		s.run(step{findings: []drift.Finding{fSG}})
		require.Nil(t, released(t, held(t, s,
			step{at: time.Hour, findings: []drift.Finding{fSG, fBucket}},
			step{at: 2 * time.Hour, findings: []drift.Finding{fSG}},
		)))
	})
	t.Run("a changed finding removed later is removed", func(t *testing.T) {
		s := newSim(t, Policy{})
		s.run(step{findings: []drift.Finding{fSG, fBucket}})
		m := released(t, held(t, s,
			step{at: time.Hour, findings: []drift.Finding{fSG, fBucketMore}},
			step{at: 2 * time.Hour, findings: []drift.Finding{fSG}},
		))
		require.Equal(t, notify.EventUpdate, m.Event)
		require.Len(t, m.Delta.Removed, 1)
		require.Equal(t, fBucket.Address, m.Delta.Removed[0].Address)
		require.NotContains(t, m.Delta.Removed[0].Attributes, unknownAttributes)
		require.Empty(t, m.Delta.Added)
		require.Empty(t, m.Delta.Changed)
	})
	t.Run("only renotified while held: nothing", func(t *testing.T) {
		s := newSim(t, Policy{RenotifyAfter: time.Minute})
		s.run(step{findings: []drift.Finding{fSG}})
		q := held(t, s, step{at: time.Hour, findings: []drift.Finding{fSG}})
		require.Len(t, q, 1)
		require.Equal(t, notify.EventRenotify, decodePayload(t, q[0].Payload).Event)
		require.Nil(t, released(t, q))
	})
}

var fPending2 = drift.Finding{Kind: drift.KindDrift, Address: "aws_iam_role.ci", Type: "aws_iam_role", Action: "delete"}
