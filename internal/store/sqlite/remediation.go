package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

var _ store.RemediationStore = (*Store)(nil)

const remediationColumns = `id, workspace, detect_run_id, apply_run_id, "commit", mode, change_set, change_set_hash, refusals,
	state, reason, created_at, expires_at, decided_at, decided_by, finished_at, outcome`

// pausedKey is the settings row of the remediation pause flag.
const pausedKey = "remediation_paused"

func jsonOr(raw json.RawMessage, def string) string {
	if len(raw) == 0 {
		return def
	}
	return string(raw)
}

// CreateRemediation stores a new remediation.
func (s *Store) CreateRemediation(ctx context.Context, r store.Remediation) error {
	return s.CreateRemediationWithAlert(ctx, r, nil)
}

// CreateRemediationWithAlert stores a new remediation and, in the same
// transaction, what alert returns for it (checked as FinishRunWithOutcome
// checks decide's; a message's zero CreatedAt becomes the remediation's).
// Any failure, alert panicking included, writes nothing.
func (s *Store) CreateRemediationWithAlert(ctx context.Context, r store.Remediation, alert store.RemediationAlert) (err error) {
	defer s.noteWrite(&err)
	switch {
	case r.ID == "", r.Workspace == "":
		return fmt.Errorf("create remediation %q: id and workspace are required", r.ID)
	case r.CreatedAt.IsZero():
		return fmt.Errorf("create remediation %q: created_at is required", r.ID)
	}
	if r.State == "" {
		r.State = store.RemediationPending
	}
	var ts [4]sql.NullInt64
	for i, t := range []time.Time{r.CreatedAt, r.ExpiresAt, r.DecidedAt, r.FinishedAt} {
		n, err := nanos(t)
		if err != nil {
			return fmt.Errorf("create remediation %q: %w", r.ID, err)
		}
		ts[i] = n
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create remediation %q: %w", r.ID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	_, err = tx.ExecContext(ctx, `INSERT INTO remediations (`+remediationColumns+`, seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM remediations))`,
		r.ID, r.Workspace, r.DetectRunID, r.ApplyRunID, r.Commit, r.Mode, jsonOr(r.ChangeSet, `{"entries":[]}`), r.ChangeSetHash,
		jsonOr(r.Refusals, "[]"), string(r.State), r.Reason, ts[0], ts[1], ts[2], r.DecidedBy, ts[3], jsonOr(r.Outcome, "null"))
	if isDuplicate(err) {
		return fmt.Errorf("create remediation %q: a remediation with this id already exists", r.ID)
	}
	if err != nil {
		return fmt.Errorf("create remediation %q: %w", r.ID, err)
	}
	if err := s.applyAlert(ctx, tx, r, r.CreatedAt, alert); err != nil {
		return fmt.Errorf("create remediation %q: %w", r.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create remediation %q: %w", r.ID, err)
	}
	return nil
}

// applyAlert calls alert for remediation r inside tx and writes what it
// returns; messages without a CreatedAt are created at at.
func (s *Store) applyAlert(ctx context.Context, tx *sql.Tx, r store.Remediation, at time.Time, alert store.RemediationAlert) error {
	if alert == nil {
		return nil
	}
	incidents, err := workspaceIncidents(ctx, tx, r.Workspace)
	if err != nil {
		return err
	}
	changed, enqueue, err := callDecide(s, r.Workspace, "remediation "+r.ID, func() ([]store.Incident, []store.OutboxMessage) {
		return alert(r, incidents)
	})
	if err != nil {
		return err
	}
	return writeConsequences(ctx, tx, r.Workspace, incidents, changed, enqueue, at)
}

func scanRemediation(sc scanner) (store.Remediation, error) {
	var (
		r                            store.Remediation
		cs, refusals, outcome, state string
		created                      int64
		expires, decided, finished   sql.NullInt64
	)
	if err := sc.Scan(&r.ID, &r.Workspace, &r.DetectRunID, &r.ApplyRunID, &r.Commit, &r.Mode, &cs, &r.ChangeSetHash, &refusals,
		&state, &r.Reason, &created, &expires, &decided, &r.DecidedBy, &finished, &outcome); err != nil {
		return store.Remediation{}, err
	}
	r.ChangeSet, r.Refusals = json.RawMessage(cs), json.RawMessage(refusals)
	if outcome != "null" {
		r.Outcome = json.RawMessage(outcome)
	}
	r.State = store.RemediationState(state)
	r.CreatedAt = fromNanos(sql.NullInt64{Int64: created, Valid: true})
	r.ExpiresAt, r.DecidedAt, r.FinishedAt = fromNanos(expires), fromNanos(decided), fromNanos(finished)
	return r, nil
}

func collectRemediations(rows *sql.Rows) ([]store.Remediation, error) {
	return collect(rows, scanRemediation)
}

// Remediation returns one remediation.
func (s *Store) Remediation(ctx context.Context, id string) (store.Remediation, error) {
	r, err := scanRemediation(s.r.QueryRowContext(ctx, `SELECT `+remediationColumns+` FROM remediations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("remediation %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("remediation %q: %w", id, err)
	}
	return r, nil
}

// RemediationByApplyRun implements store.RemediationStore.
func (s *Store) RemediationByApplyRun(ctx context.Context, runID string) (store.Remediation, error) {
	r, err := scanRemediation(s.r.QueryRowContext(ctx, `SELECT `+remediationColumns+` FROM remediations WHERE apply_run_id = ? AND apply_run_id != ''`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("remediation of run %q: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("remediation of run %q: %w", runID, err)
	}
	return r, nil
}

// Remediations lists remediations, newest first.
func (s *Store) Remediations(ctx context.Context, workspace string, limit int) ([]store.Remediation, error) {
	q := `SELECT ` + remediationColumns + ` FROM remediations`
	var args []any
	if workspace != "" {
		q += ` WHERE workspace = ?`
		args = append(args, workspace)
	}
	q += ` ORDER BY seq DESC`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("remediations: %w", err)
	}
	out, err := collectRemediations(rows)
	if err != nil {
		return nil, fmt.Errorf("remediations: %w", err)
	}
	return out, nil
}

// TransitionRemediation changes a remediation's state if it is in from.
func (s *Store) TransitionRemediation(ctx context.Context, id string, from []store.RemediationState, to store.Transition) (store.Remediation, error) {
	return s.TransitionRemediationWithAlert(ctx, id, from, to, nil)
}

// TransitionRemediationWithAlert is TransitionRemediation plus, in the same
// transaction, what alert returns for the updated remediation (checked as
// FinishRunWithOutcome checks decide's; a message's zero CreatedAt becomes
// the transition's time). Any failure, alert panicking included, writes
// nothing.
func (s *Store) TransitionRemediationWithAlert(ctx context.Context, id string, from []store.RemediationState, to store.Transition, alert store.RemediationAlert) (_ store.Remediation, err error) {
	defer s.noteWrite(&err)
	fail := func(err error) (store.Remediation, error) {
		return store.Remediation{}, fmt.Errorf("remediation %q: %w", id, err)
	}
	at, err := nanos(to.At)
	if err != nil {
		return fail(fmt.Errorf("transition time: %w", err))
	}
	if !at.Valid {
		return fail(errors.New("transition time: not set"))
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	cur, err := scanRemediation(tx.QueryRowContext(ctx, `SELECT `+remediationColumns+` FROM remediations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return fail(store.ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	if !slices.Contains(from, cur.State) {
		return fail(fmt.Errorf("%w: it is %s", store.ErrConflict, cur.State))
	}
	sets := []string{"state = ?", "reason = ?"}
	args := []any{string(to.State), to.Reason}
	switch to.State {
	case store.RemediationApproved, store.RemediationRejected, store.RemediationExpired:
		sets = append(sets, "decided_at = ?", "decided_by = ?")
		args = append(args, at, to.By)
	}
	switch {
	case to.State.Final():
		sets = append(sets, "finished_at = ?")
		args = append(args, at)
	case cur.State.Final():
		// Back from a final state (approved again after a restart's
		// "failed" was found to have applied nothing): not finished.
		sets = append(sets, "finished_at = NULL")
	}
	if len(to.Outcome) > 0 {
		sets = append(sets, "outcome = ?")
		args = append(args, string(to.Outcome))
	}
	if to.ApplyRunID != "" {
		sets = append(sets, "apply_run_id = ?")
		args = append(args, to.ApplyRunID)
	}
	args = append(args, id)
	if _, err := tx.ExecContext(ctx, `UPDATE remediations SET `+strings.Join(sets, ", ")+` WHERE id = ?`, args...); err != nil {
		return fail(err)
	}
	out, err := scanRemediation(tx.QueryRowContext(ctx, `SELECT `+remediationColumns+` FROM remediations WHERE id = ?`, id))
	if err != nil {
		return fail(err)
	}
	if err := s.applyAlert(ctx, tx, out, to.At, alert); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return out, nil
}

// bulkTransition moves every remediation matched by where (in state from)
// to state, returning the updated rows.
func (s *Store) bulkTransition(ctx context.Context, from, to store.RemediationState, where string, whereArgs []any, at time.Time, by, reason string) (_ []store.Remediation, err error) {
	// Most calls (ExpireRemediations every second) change nothing: a
	// commit that writes no page succeeds on a full disk too, and must
	// not pass for the storage's recovery.
	changed := false
	defer func() {
		if err != nil || changed {
			s.noteWrite(&err)
		}
	}()
	n, err := nanos(at)
	if err != nil {
		return nil, fmt.Errorf("time: %w", err)
	}
	if !n.Valid {
		return nil, errors.New("time: not set")
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	rows, err := tx.QueryContext(ctx, `SELECT `+remediationColumns+` FROM remediations WHERE state = ? `+where+` ORDER BY seq`,
		append([]any{string(from)}, whereArgs...)...)
	if err != nil {
		return nil, err
	}
	found, err := collectRemediations(rows)
	if err != nil {
		return nil, err
	}
	var out []store.Remediation
	for _, r := range found {
		decidedBy := r.DecidedBy
		decidedAt, _ := nanos(r.DecidedAt)
		if to == store.RemediationExpired {
			decidedBy, decidedAt = by, n
		}
		if _, err := tx.ExecContext(ctx, `UPDATE remediations SET state = ?, reason = ?, decided_at = ?, decided_by = ?, finished_at = ? WHERE id = ?`,
			string(to), reason, decidedAt, decidedBy, n, r.ID); err != nil {
			return nil, err
		}
		r.State, r.Reason, r.DecidedBy, r.DecidedAt, r.FinishedAt = to, reason, decidedBy, fromNanos(decidedAt), fromNanos(n)
		out = append(out, r)
	}
	changed = len(out) > 0
	return out, tx.Commit()
}

// ExpireRemediations expires pending remediations past their ExpiresAt.
func (s *Store) ExpireRemediations(ctx context.Context, now time.Time) ([]store.Remediation, error) {
	n, err := nanos(now)
	if err != nil {
		return nil, fmt.Errorf("expire remediations: %w", err)
	}
	out, err := s.bulkTransition(ctx, store.RemediationPending, store.RemediationExpired,
		`AND expires_at IS NOT NULL AND expires_at <= ?`, []any{n}, now, "expiry", "not approved within approval_ttl")
	if err != nil {
		return nil, fmt.Errorf("expire remediations: %w", err)
	}
	return out, nil
}

// InterruptRemediations marks running remediations failed.
func (s *Store) InterruptRemediations(ctx context.Context, at time.Time) ([]store.Remediation, error) {
	out, err := s.bulkTransition(ctx, store.RemediationRunning, store.RemediationFailed, "", nil, at, "",
		"driftwatch stopped during the apply; check the workspace (the apply may have changed part of the change set)")
	if err != nil {
		return nil, fmt.Errorf("interrupt remediations: %w", err)
	}
	return out, nil
}

// RemediationPaused reads the pause flag (false when never set).
func (s *Store) RemediationPaused(ctx context.Context) (bool, error) {
	var v string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, pausedKey).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("remediation paused: %w", err)
	}
	return v == "true", nil
}

// SetRemediationPaused persists the pause flag.
func (s *Store) SetRemediationPaused(ctx context.Context, paused bool) (err error) {
	defer s.noteWrite(&err)
	_, err = s.w.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, pausedKey, fmt.Sprint(paused))
	if err != nil {
		return fmt.Errorf("set remediation paused: %w", err)
	}
	return nil
}

// FinishRunOnly records a running run's outcome, leaving workspace state
// and incidents alone. Its status may be any non-empty value.
func (s *Store) FinishRunOnly(ctx context.Context, r store.Run) (err error) {
	defer s.noteWrite(&err)
	if r.Status == "" || r.FinishedAt.IsZero() {
		return fmt.Errorf("finish run %q: status and finished_at are required", r.ID)
	}
	fin, err := nanos(r.FinishedAt)
	if err != nil {
		return fmt.Errorf("finish run %q: %w", r.ID, err)
	}
	findings, phases, err := encodeRun(r)
	if err != nil {
		return fmt.Errorf("finish run %q: %w", r.ID, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE runs SET finished_at = ?, status = ?, error = ?, tool = ?, findings = ?, phases = ?
		WHERE id = ? AND status = ?`, fin, string(r.Status), r.Error, r.Tool, findings, phases, r.ID, string(store.RunRunning))
	if err != nil {
		return fmt.Errorf("finish run %q: %w", r.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("finish run %q: not a running run", r.ID)
	}
	return nil
}
