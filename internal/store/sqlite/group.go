package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// This file implements store.GroupStore: group incidents, whose messages
// go through the outbox (outbox.go) under the group's key, as a
// workspace's incidents' do.

const groupColumns = `id, key, cause, cause_key, title, state, members, workspaces,
	first_seen, last_seen, opened_at, notified_at, resolved_at, fingerprint, severity`

// groupOrder is the listings' order: most recently notified first (never
// notified last, in both databases), then by ID.
const groupOrder = ` ORDER BY notified_at DESC NULLS LAST, id`

// GroupIncidents lists the open group incidents, or with all every one,
// most recently notified first (then by ID).
func (s *Store) GroupIncidents(ctx context.Context, all bool) ([]store.GroupIncident, error) {
	q := `SELECT ` + groupColumns + ` FROM group_incidents`
	if !all {
		q += ` WHERE state = 'open'`
	}
	rows, err := s.r.QueryContext(ctx, q+groupOrder)
	if err != nil {
		return nil, fmt.Errorf("group incidents: %w", err)
	}
	out, err := collectGroups(rows)
	if err != nil {
		return nil, fmt.Errorf("group incidents: %w", err)
	}
	return out, nil
}

// GroupIncident returns one group incident by its ID; store.ErrNotFound if
// unknown.
func (s *Store) GroupIncident(ctx context.Context, id string) (store.GroupIncident, error) {
	g, err := scanGroup(s.r.QueryRowContext(ctx, `SELECT `+groupColumns+` FROM group_incidents WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.GroupIncident{}, fmt.Errorf("group incident %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.GroupIncident{}, fmt.Errorf("group incident %q: %w", id, err)
	}
	return g, nil
}

// DecideGroups writes, in one write transaction, what decide makes of
// every stored group incident (every state, ordered by ID). decide runs
// under the write lock, as FinishRunWithOutcome's does: it must be quick
// and must not call this Store's write methods.
//
// What decide returns is checked, and any violation is an error that
// rolls everything back:
//   - every changed incident has an ID, a Key, a Cause and a State (open
//     or resolved), and appears once; it replaces the stored row of its
//     ID whole. A Key that another group's row holds, or that a
//     workspace's incident holds, is refused;
//   - every message is checked as FinishRunWithOutcome checks one, its
//     IncidentKey one of the group incidents' keys (stored, or returned
//     by this decide). A zero CreatedAt becomes at, which is required.
func (s *Store) DecideGroups(ctx context.Context, at time.Time,
	decide func(stored []store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage),
) (err error) {
	defer s.noteWrite(&err)
	fail := func(err error) error { return fmt.Errorf("decide groups: %w", err) }
	if at.IsZero() {
		return fail(errors.New("time is required"))
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	rows, err := tx.QueryContext(ctx, `SELECT `+groupColumns+` FROM group_incidents ORDER BY id`)
	if err != nil {
		return fail(err)
	}
	stored, err := collectGroups(rows)
	if err != nil {
		return fail(err)
	}
	changed, enqueue, err := callDecide(s, "", "groups", func() ([]store.GroupIncident, []store.OutboxMessage) {
		return decide(stored)
	})
	if err != nil {
		return fail(err)
	}
	known := make(map[string]bool, len(stored)+len(changed))
	for _, g := range stored {
		known[g.Key] = true
	}
	seen := make(map[string]bool, len(changed))
	for _, g := range changed {
		if err := checkGroup(g); err != nil {
			return fail(fmt.Errorf("decide: group %q: %w", g.ID, err))
		}
		if seen[g.ID] {
			return fail(fmt.Errorf("decide: group %q is returned twice", g.ID))
		}
		seen[g.ID] = true
		if err := upsertGroup(ctx, tx, g); err != nil {
			return fail(fmt.Errorf("decide: group %q: %w", g.ID, err))
		}
		known[g.Key] = true
	}
	if err := enqueueMessages(ctx, tx, "the group", known, enqueue, at.UTC()); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}

func checkGroup(g store.GroupIncident) error {
	switch {
	case g.ID == "":
		return errors.New("id is required")
	case g.Key == "":
		return errors.New("key is required")
	case g.Cause == "":
		return errors.New("cause is required")
	case g.State != store.IncidentOpen && g.State != store.IncidentResolved:
		return fmt.Errorf("state %q is neither open nor resolved", g.State)
	}
	return nil
}

// upsertGroup writes g whole over the row of its ID, once its Key is
// found to be no other incident's, group's or workspace's.
func upsertGroup(ctx context.Context, tx *sql.Tx, g store.GroupIncident) error {
	var holder string
	err := tx.QueryRowContext(ctx, `SELECT 'group ' || id FROM group_incidents WHERE key = ?1 AND id <> ?2
UNION ALL SELECT 'an incident of workspace ' || workspace FROM incidents WHERE key = ?1`, g.Key, g.ID).Scan(&holder)
	switch {
	case err == nil:
		return fmt.Errorf("key %q belongs to %s", g.Key, holder)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	var times [5]sql.NullInt64
	for i, t := range []time.Time{g.FirstSeen, g.LastSeen, g.OpenedAt, g.NotifiedAt, g.ResolvedAt} {
		if times[i], err = nanos(t); err != nil {
			return err
		}
	}
	members, err := json.Marshal(g.Members)
	if err != nil {
		return fmt.Errorf("encode members: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO group_incidents (`+groupColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	key = excluded.key,
	cause = excluded.cause,
	cause_key = excluded.cause_key,
	title = excluded.title,
	state = excluded.state,
	members = excluded.members,
	workspaces = excluded.workspaces,
	first_seen = excluded.first_seen,
	last_seen = excluded.last_seen,
	opened_at = excluded.opened_at,
	notified_at = excluded.notified_at,
	resolved_at = excluded.resolved_at,
	fingerprint = excluded.fingerprint,
	severity = excluded.severity`,
		g.ID, g.Key, g.Cause, g.CauseKey, g.Title, string(g.State), string(members), g.Workspaces,
		times[0], times[1], times[2], times[3], times[4], g.Fingerprint, g.Severity)
	return err
}

// collectGroups reads and closes rows of groupColumns.
func collectGroups(rows *sql.Rows) ([]store.GroupIncident, error) { return collect(rows, scanGroup) }

func scanGroup(sc scanner) (store.GroupIncident, error) {
	var (
		g              store.GroupIncident
		state, members string
		times          [5]sql.NullInt64
	)
	if err := sc.Scan(&g.ID, &g.Key, &g.Cause, &g.CauseKey, &g.Title, &state, &members, &g.Workspaces,
		&times[0], &times[1], &times[2], &times[3], &times[4], &g.Fingerprint, &g.Severity); err != nil {
		return store.GroupIncident{}, err
	}
	g.State = store.IncidentState(state)
	g.FirstSeen, g.LastSeen, g.OpenedAt = fromNanos(times[0]), fromNanos(times[1]), fromNanos(times[2])
	g.NotifiedAt, g.ResolvedAt = fromNanos(times[3]), fromNanos(times[4])
	if err := json.Unmarshal([]byte(members), &g.Members); err != nil {
		return store.GroupIncident{}, fmt.Errorf("group incident %q: decode members: %w", g.ID, err)
	}
	return g, nil
}
