package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// This file and outbox.go implement store.AlertStore. The interface's
// comments are the contract; these are the choices this implementation
// makes where they are silent:
//
//   - "Older" and "oldest" in the outbox mean enqueued earlier: each message
//     gets a sequence number when it is inserted (the order of decide's
//     enqueue slice within one FinishRunWithOutcome, commit order across
//     calls). CreatedAt is stored and returned but orders nothing, so a
//     clock that steps back cannot reorder an incident's messages.
//   - A message is pending while it is neither delivered nor dead.
//     Delivered and dead are final: MarkFailed on a delivered message and
//     MarkDelivered on a delivered one change nothing; a dead message stays
//     dead whatever a later MarkFailed says. MarkDelivered on a dead message
//     (a late success) records the delivery.
//   - Notifier state replaces: MarkDelivered and SaveNotifierState store
//     exactly the bytes given, and an empty or nil state deletes the row, so
//     NotifierState is nil again (a notifier can forget an incident).
//   - Prune (store.Store) also trims these tables; see pruneAlerts.

const incidentColumns = `key, workspace, class, state, observations, opened_at, notified_at, resolved_at, fingerprint, findings, severity, severity_rule`

const outboxColumns = `id, notifier, incident_key, payload, created_at, attempts, next_attempt, last_error, delivered_at, dead, held`

// pendingOutbox is the condition of a pending message: neither delivered nor
// dead. The partial indexes of migration 2 use the same expression, which
// SQLite requires to match them.
const pendingOutbox = `delivered_at IS NULL AND dead = 0`

// FinishRunWithOutcome is FinishRun plus, in the same write transaction,
// decide's consequences: it reads the workspace's incidents (every state),
// calls decide(before, after, incidents), upserts the incidents decide
// returns and enqueues its messages. If anything fails, including decide
// panicking, nothing is written: the run stays running and can be finished
// again. A nil decide makes it FinishRun.
//
// decide runs while this Store's only write connection and the database's
// write lock are held: it must be quick and must not call this Store's
// write methods (they would wait for the connection decide holds, for
// ever). Reads are allowed and see the database as it was before this
// transaction. before and after are copies: changing them does not change
// what FinishRunWithOutcome returns.
//
// What decide returns is checked, and any violation is an error that rolls
// everything back:
//   - every incident has a Key, Class and State (pending, open or
//     resolved), belongs to the run's workspace (an empty Workspace is
//     taken as the run's), and appears once; a key stored for another
//     workspace is refused rather than moved;
//   - every message has an ID that is neither repeated nor already in the
//     outbox, a Notifier, a non-empty Payload and an IncidentKey that names
//     one of the workspace's incidents (stored, or returned by this decide).
//     A zero CreatedAt becomes the run's FinishedAt and a zero NextAttempt
//     becomes CreatedAt (due at once); Attempts, LastError, DeliveredAt and
//     Dead are ignored: a new message is pending with no attempts.
func (s *Store) FinishRunWithOutcome(ctx context.Context, r store.Run, decide store.Outcome) (before, after store.WorkspaceState, err error) {
	return s.finishRun(ctx, r, decide)
}

// applyOutcome is FinishRunWithOutcome's part of the transaction, after
// the run and the state are written.
func (s *Store) applyOutcome(ctx context.Context, tx *sql.Tx, run store.Run, before, after store.WorkspaceState, decide store.Outcome) error {
	incidents, err := workspaceIncidents(ctx, tx, run.Workspace)
	if err != nil {
		return err
	}
	changed, enqueue, err := callDecide(s, run.Workspace, "run "+after.LastRunID, func() ([]store.Incident, []store.OutboxMessage) {
		return decide(cloneState(before), cloneState(after), incidents)
	})
	if err != nil {
		return err
	}
	return writeConsequences(ctx, tx, run.Workspace, incidents, changed, enqueue, run.FinishedAt)
}

// workspaceIncidents reads a workspace's incidents (every state) inside tx.
func workspaceIncidents(ctx context.Context, tx *sql.Tx, ws string) ([]store.Incident, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+incidentColumns+` FROM incidents WHERE workspace = ? ORDER BY key`, ws)
	if err != nil {
		return nil, fmt.Errorf("incidents of %q: %w", ws, err)
	}
	incidents, err := collectIncidents(rows)
	if err != nil {
		return nil, fmt.Errorf("incidents of %q: %w", ws, err)
	}
	return incidents, nil
}

// writeConsequences checks and writes what a decide (or a remediation's
// alert) returned for workspace ws, whose stored incidents are incidents:
// see FinishRunWithOutcome for the rules. A message's zero CreatedAt
// becomes at.
func writeConsequences(ctx context.Context, tx *sql.Tx, ws string, incidents, changed []store.Incident, enqueue []store.OutboxMessage, at time.Time) error {
	known := make(map[string]bool, len(incidents))
	for _, in := range incidents {
		known[in.Key] = true
	}
	seen := make(map[string]bool, len(changed))
	for _, in := range changed {
		if in.Workspace == "" {
			in.Workspace = ws
		}
		if err := checkIncident(in, ws); err != nil {
			return fmt.Errorf("decide: incident %q: %w", in.Key, err)
		}
		if seen[in.Key] {
			return fmt.Errorf("decide: incident %q is returned twice", in.Key)
		}
		seen[in.Key] = true
		if err := upsertIncident(ctx, tx, in); err != nil {
			return fmt.Errorf("decide: incident %q: %w", in.Key, err)
		}
		known[in.Key] = true
	}
	return enqueueMessages(ctx, tx, "the workspace's", known, enqueue, at)
}

// enqueueMessages checks and inserts the messages a decide returned:
// each needs an ID that is neither repeated nor already in the outbox, a
// Notifier, a Payload and an IncidentKey among known (whose names those
// incidents in errors). A zero CreatedAt becomes at, a zero NextAttempt
// CreatedAt; the rest of a message's delivery fields are ignored.
func enqueueMessages(ctx context.Context, tx *sql.Tx, whose string, known map[string]bool, enqueue []store.OutboxMessage, at time.Time) error {
	ids := make(map[string]bool, len(enqueue))
	for _, m := range enqueue {
		if err := checkMessage(m, whose, known); err != nil {
			return fmt.Errorf("decide: message %q: %w", m.ID, err)
		}
		if ids[m.ID] {
			return fmt.Errorf("decide: message %q is enqueued twice", m.ID)
		}
		ids[m.ID] = true
		if m.CreatedAt.IsZero() {
			m.CreatedAt = at
		}
		if m.NextAttempt.IsZero() {
			m.NextAttempt = m.CreatedAt
		}
		if err := insertMessage(ctx, tx, m); err != nil {
			return fmt.Errorf("decide: message %q: %w", m.ID, err)
		}
	}
	return nil
}

// callDecide calls decide (a run's Outcome, a remediation's alert, a
// retirement or the groups' decide, for what; ws is the workspace, if
// one), turning a panic into an error (and a log line with the stack,
// which the error would make unreadable).
func callDecide[T any](s *Store, ws, what string, decide func() ([]T, []store.OutboxMessage)) (changed []T, enqueue []store.OutboxMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			attrs := []any{"for", what, "panic", fmt.Sprint(p), "stack", string(debug.Stack())}
			if ws != "" {
				attrs = append([]any{"workspace", ws}, attrs...)
			}
			s.logger.Error("decide panicked; the transaction is rolled back", attrs...)
			changed, enqueue, err = nil, nil, fmt.Errorf("decide panicked: %v", p)
		}
	}()
	changed, enqueue = decide()
	return changed, enqueue, nil
}

func checkIncident(in store.Incident, workspace string) error {
	switch {
	case in.Key == "":
		return errors.New("key is required")
	case in.Workspace != workspace:
		return fmt.Errorf("belongs to workspace %q, not the run's %q", in.Workspace, workspace)
	case in.Class == "":
		return errors.New("class is required")
	}
	switch in.State {
	case store.IncidentPending, store.IncidentOpen, store.IncidentResolved:
		return nil
	}
	return fmt.Errorf("unknown state %q", in.State)
}

func checkMessage(m store.OutboxMessage, whose string, incidents map[string]bool) error {
	switch {
	case m.ID == "":
		return errors.New("id is required")
	case m.Notifier == "":
		return errors.New("notifier is required")
	case len(m.Payload) == 0:
		return errors.New("payload is required")
	case m.IncidentKey == "":
		return errors.New("incident key is required")
	case !incidents[m.IncidentKey]:
		return fmt.Errorf("incident %q is not one of %s incidents", m.IncidentKey, whose)
	}
	return nil
}

func upsertIncident(ctx context.Context, tx *sql.Tx, in store.Incident) error {
	var times [3]sql.NullInt64
	for i, t := range []time.Time{in.OpenedAt, in.NotifiedAt, in.ResolvedAt} {
		var err error
		if times[i], err = nanos(t); err != nil {
			return err
		}
	}
	findings, err := json.Marshal(in.Findings)
	if err != nil {
		return fmt.Errorf("encode findings: %w", err)
	}
	// The WHERE makes a key of another workspace a no-op, found below,
	// rather than moving the incident.
	res, err := tx.ExecContext(ctx, `INSERT INTO incidents (`+incidentColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET
	class = excluded.class,
	state = excluded.state,
	observations = excluded.observations,
	opened_at = excluded.opened_at,
	notified_at = excluded.notified_at,
	resolved_at = excluded.resolved_at,
	fingerprint = excluded.fingerprint,
	findings = excluded.findings,
	severity = excluded.severity,
	severity_rule = excluded.severity_rule
WHERE incidents.workspace = excluded.workspace`,
		in.Key, in.Workspace, in.Class, string(in.State), in.Observations, times[0], times[1], times[2], in.Fingerprint, string(findings), in.Severity, in.SeverityRule)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		var other string
		if err := tx.QueryRowContext(ctx, `SELECT workspace FROM incidents WHERE key = ?`, in.Key).Scan(&other); err != nil {
			return err
		}
		return fmt.Errorf("the key belongs to an incident of workspace %q", other)
	}
	return nil
}

func insertMessage(ctx context.Context, tx *sql.Tx, m store.OutboxMessage) error {
	created, err := nanos(m.CreatedAt)
	if err != nil {
		return fmt.Errorf("created_at: %w", err)
	}
	next, err := nanos(m.NextAttempt)
	if err != nil {
		return fmt.Errorf("next_attempt: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO outbox (id, seq, notifier, incident_key, payload, created_at, next_attempt, held)
VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM outbox), ?, ?, ?, ?, ?, ?)`,
		m.ID, m.Notifier, m.IncidentKey, m.Payload, created, next, m.Held)
	if isDuplicate(err) {
		return errors.New("a message with this id is already in the outbox")
	}
	return err
}

// cloneState copies st so that decide cannot change the caller's copy.
func cloneState(st store.WorkspaceState) store.WorkspaceState {
	st.Findings = cloneFindings(st.Findings)
	return st
}

// Incidents lists a workspace's incidents in every state, or, for
// workspace "", the pending and open incidents of every workspace; ordered
// by workspace, then key. An unknown workspace has none (not an error).
func (s *Store) Incidents(ctx context.Context, workspace string) ([]store.Incident, error) {
	var (
		rows *sql.Rows
		err  error
	)
	if workspace == "" {
		rows, err = s.r.QueryContext(ctx, `SELECT `+incidentColumns+` FROM incidents WHERE state <> 'resolved' ORDER BY workspace, key`)
	} else {
		rows, err = s.r.QueryContext(ctx, `SELECT `+incidentColumns+` FROM incidents WHERE workspace = ? ORDER BY key`, workspace)
	}
	if err != nil {
		return nil, fmt.Errorf("incidents of %q: %w", workspace, err)
	}
	out, err := collectIncidents(rows)
	if err != nil {
		return nil, fmt.Errorf("incidents of %q: %w", workspace, err)
	}
	return out, nil
}

func collectIncidents(rows *sql.Rows) ([]store.Incident, error) {
	defer rows.Close()
	var out []store.Incident
	for rows.Next() {
		var (
			in                         store.Incident
			state, findings            string
			opened, notified, resolved sql.NullInt64
		)
		if err := rows.Scan(&in.Key, &in.Workspace, &in.Class, &state, &in.Observations, &opened, &notified, &resolved, &in.Fingerprint, &findings, &in.Severity, &in.SeverityRule); err != nil {
			return nil, err
		}
		in.State = store.IncidentState(state)
		in.OpenedAt, in.NotifiedAt, in.ResolvedAt = fromNanos(opened), fromNanos(notified), fromNanos(resolved)
		if err := json.Unmarshal([]byte(findings), &in.Findings); err != nil {
			return nil, fmt.Errorf("incident %q: decode findings: %w", in.Key, err)
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

type prunedAlerts struct{ messages, incidents, groups, states int64 }

// pruneAlerts is Prune's part for the alert tables, in its transaction:
//
//   - Delivered messages are deleted when they are beyond the newest
//     s.keepDelivered delivered messages of their notifier (by delivery
//     time), or were delivered before cutoff (if set). Pending and dead
//     messages are never deleted: a dead one stays for inspection.
//   - Incidents resolved before cutoff (if set) are deleted, with every
//     notifier's state for them, once no pending message of theirs is left
//     (its delivery may still need that state). Their rows are small, but a
//     workspace removed from the configuration would otherwise keep them
//     for ever; a class that comes back after that opens a fresh incident,
//     which is what a resolved row would have given too. Open and pending
//     incidents are never deleted. Without a cutoff no incident is.
//   - Group incidents are pruned by the same rule as incidents: a cause
//     that comes back after that opens a fresh group incident.
func (s *Store) pruneAlerts(ctx context.Context, tx *sql.Tx, cutoff sql.NullInt64) (prunedAlerts, error) {
	var p prunedAlerts
	res, err := tx.ExecContext(ctx, `
DELETE FROM outbox WHERE id IN (
	SELECT id FROM (
		SELECT id, delivered_at,
			row_number() OVER (PARTITION BY notifier ORDER BY delivered_at DESC, seq DESC) AS newest
		FROM outbox
		WHERE delivered_at IS NOT NULL
	) AS ranked
	WHERE newest > ?1 OR (CAST(?2 AS BIGINT) IS NOT NULL AND delivered_at < ?2)
)`, s.keepDelivered, cutoff)
	if err != nil {
		return p, fmt.Errorf("outbox: %w", err)
	}
	if p.messages, err = res.RowsAffected(); err != nil {
		return p, fmt.Errorf("outbox: %w", err)
	}
	if !cutoff.Valid {
		return p, nil
	}
	var incidentStates, groupStates int64
	if p.incidents, incidentStates, err = pruneResolved(ctx, tx, "incidents", cutoff); err != nil {
		return p, err
	}
	if p.groups, groupStates, err = pruneResolved(ctx, tx, "group_incidents", cutoff); err != nil {
		return p, err
	}
	p.states = incidentStates + groupStates
	return p, nil
}

// pruneResolved deletes table's (incidents' or group_incidents') rows
// resolved before cutoff that no pending message waits for, and every
// notifier's state for them; it returns how many of each.
func pruneResolved(ctx context.Context, tx *sql.Tx, table string, cutoff sql.NullInt64) (rows, states int64, err error) {
	stale := `SELECT key FROM ` + table + ` AS i
WHERE state = 'resolved' AND resolved_at < ?1
AND NOT EXISTS (SELECT 1 FROM outbox WHERE incident_key = i.key AND ` + pendingOutbox + `)`
	res, err := tx.ExecContext(ctx, `DELETE FROM notifier_state WHERE incident_key IN (`+stale+`)`, cutoff)
	if err != nil {
		return 0, 0, fmt.Errorf("notifier state of %s: %w", table, err)
	}
	if states, err = res.RowsAffected(); err != nil {
		return 0, 0, fmt.Errorf("notifier state of %s: %w", table, err)
	}
	if res, err = tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE key IN (`+stale+`)`, cutoff); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", table, err)
	}
	if rows, err = res.RowsAffected(); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", table, err)
	}
	return rows, states, nil
}
