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

const acceptanceColumns = `id, workspace, state, created_at, finished_at, body`

// acceptanceBody is what an acceptance's body column holds: every field
// the other columns do not.
type acceptanceBody struct {
	Addresses        []string                  `json:"addresses,omitempty"`
	Deletions        bool                      `json:"deletions,omitempty"`
	RequestedBy      string                    `json:"requested_by,omitempty"`
	Tool             string                    `json:"tool,omitempty"`
	Commit           string                    `json:"commit,omitempty"`
	Accepted         []store.AcceptedAttribute `json:"accepted,omitempty"`
	Refused          []store.AcceptRefusal     `json:"refused,omitempty"`
	Remaining        []string                  `json:"remaining,omitempty"`
	Patch            string                    `json:"patch,omitempty"`
	Branch           string                    `json:"branch,omitempty"`
	Base             string                    `json:"base,omitempty"`
	ProposalURL      string                    `json:"proposal_url,omitempty"`
	ProposalNumber   int                       `json:"proposal_number,omitempty"`
	ProposalExisting bool                      `json:"proposal_existing,omitempty"`
	Error            string                    `json:"error,omitempty"`
}

func bodyOf(a store.Acceptance) (string, error) {
	b, err := json.Marshal(acceptanceBody{
		Addresses: a.Addresses, Deletions: a.Deletions, RequestedBy: a.RequestedBy, Tool: a.Tool, Commit: a.Commit,
		Accepted: a.Accepted, Refused: a.Refused, Remaining: a.Remaining, Patch: a.Patch,
		Branch: a.Branch, Base: a.Base, ProposalURL: a.ProposalURL, ProposalNumber: a.ProposalNumber,
		ProposalExisting: a.ProposalExisting, Error: a.Error,
	})
	return string(b), err
}

// AddAcceptance stores a new running acceptance.
func (s *Store) AddAcceptance(ctx context.Context, a store.Acceptance) (err error) {
	defer s.noteWrite(&err)
	switch {
	case a.ID == "" || a.Workspace == "" || a.CreatedAt.IsZero():
		return errors.New("add acceptance: id, workspace and created_at are required")
	case a.State != store.AcceptRunning:
		return fmt.Errorf("add acceptance %s: a new acceptance is running, not %s", a.ID, a.State)
	}
	body, err := bodyOf(a)
	if err != nil {
		return fmt.Errorf("add acceptance %s: %w", a.ID, err)
	}
	at, err := nanos(a.CreatedAt)
	if err != nil {
		return fmt.Errorf("add acceptance %s: %w", a.ID, err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO acceptances (`+acceptanceColumns+`) VALUES (?, ?, ?, ?, NULL, ?)`,
		a.ID, a.Workspace, string(a.State), at.Int64, body); err != nil {
		return fmt.Errorf("add acceptance %s: %w", a.ID, err)
	}
	return nil
}

// FinishAcceptance records a running acceptance's outcome.
func (s *Store) FinishAcceptance(ctx context.Context, a store.Acceptance) (err error) {
	defer s.noteWrite(&err)
	if a.State == store.AcceptRunning || a.State == "" || a.FinishedAt.IsZero() {
		return fmt.Errorf("finish acceptance %s: a finished state and finished_at are required", a.ID)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finish acceptance %s: %w", a.ID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	was, err := scanAcceptance(tx.QueryRowContext(ctx, `SELECT `+acceptanceColumns+` FROM acceptances WHERE id = ?`, a.ID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return fmt.Errorf("finish acceptance %s: %w", a.ID, err)
	case was.State != store.AcceptRunning:
		return fmt.Errorf("finish acceptance %s: it is %s: %w", a.ID, was.State, store.ErrConflict)
	}
	// What the request said stays as it was.
	a.Workspace, a.Addresses, a.Deletions, a.RequestedBy, a.CreatedAt = was.Workspace, was.Addresses, was.Deletions, was.RequestedBy, was.CreatedAt
	body, err := bodyOf(a)
	if err != nil {
		return fmt.Errorf("finish acceptance %s: %w", a.ID, err)
	}
	at, err := nanos(a.FinishedAt)
	if err != nil {
		return fmt.Errorf("finish acceptance %s: %w", a.ID, err)
	}
	// The state in the WHERE clause makes a racing finish, which read
	// running too, change nothing.
	res, err := tx.ExecContext(ctx, `UPDATE acceptances SET state = ?, finished_at = ?, body = ? WHERE id = ? AND state = 'running'`,
		string(a.State), at, body, a.ID)
	if err != nil {
		return fmt.Errorf("finish acceptance %s: %w", a.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("finish acceptance %s: it finished meanwhile: %w", a.ID, store.ErrConflict)
	}
	return tx.Commit()
}

// Acceptance returns one acceptance.
func (s *Store) Acceptance(ctx context.Context, id string) (store.Acceptance, error) {
	a, err := scanAcceptance(s.r.QueryRowContext(ctx, `SELECT `+acceptanceColumns+` FROM acceptances WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Acceptance{}, store.ErrNotFound
	}
	if err != nil {
		return store.Acceptance{}, fmt.Errorf("acceptance %s: %w", id, err)
	}
	return a, nil
}

// Acceptances lists a workspace's acceptances (all for ""), newest first.
func (s *Store) Acceptances(ctx context.Context, workspace string, limit int) ([]store.Acceptance, error) {
	q := `SELECT ` + acceptanceColumns + ` FROM acceptances`
	var args []any
	if workspace != "" {
		q += ` WHERE workspace = ?`
		args = append(args, workspace)
	}
	q += ` ORDER BY created_at DESC, id DESC`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("acceptances: %w", err)
	}
	out, err := collectAcceptances(rows)
	if err != nil {
		return nil, fmt.Errorf("acceptances: %w", err)
	}
	return out, nil
}

// InterruptAcceptances fails every running acceptance at at.
func (s *Store) InterruptAcceptances(ctx context.Context, at time.Time) (_ int, err error) {
	defer s.noteWrite(&err)
	running, err := s.runningAcceptances(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range running {
		a.State, a.Error, a.FinishedAt = store.AcceptFailed, store.AcceptInterrupted, at
		switch err := s.FinishAcceptance(ctx, a); {
		case errors.Is(err, store.ErrConflict): // finished meanwhile
		case err != nil:
			return n, fmt.Errorf("interrupt acceptances: %w", err)
		default:
			n++
		}
	}
	return n, nil
}

func (s *Store) runningAcceptances(ctx context.Context) ([]store.Acceptance, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+acceptanceColumns+` FROM acceptances WHERE state = 'running' ORDER BY created_at`)
	if err != nil {
		return nil, fmt.Errorf("interrupt acceptances: %w", err)
	}
	out, err := collectAcceptances(rows)
	if err != nil {
		return nil, fmt.Errorf("interrupt acceptances: %w", err)
	}
	return out, nil
}

// collectAcceptances reads and closes rows of acceptanceColumns.
func collectAcceptances(rows *sql.Rows) ([]store.Acceptance, error) {
	out, err := collect(rows, scanAcceptance)
	if err == nil && out == nil {
		out = []store.Acceptance{} // none is an empty list
	}
	return out, err
}

func scanAcceptance(sc scanner) (store.Acceptance, error) {
	var (
		a        store.Acceptance
		state    string
		made     int64
		finished sql.NullInt64
		body     string
		b        acceptanceBody
	)
	if err := sc.Scan(&a.ID, &a.Workspace, &state, &made, &finished, &body); err != nil {
		return store.Acceptance{}, err
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		return store.Acceptance{}, err
	}
	a.State = store.AcceptanceState(state)
	a.CreatedAt = fromNanos(sql.NullInt64{Int64: made, Valid: true})
	a.FinishedAt = fromNanos(finished)
	a.Addresses, a.Deletions, a.RequestedBy, a.Tool, a.Commit = b.Addresses, b.Deletions, b.RequestedBy, b.Tool, b.Commit
	a.Accepted, a.Refused, a.Remaining, a.Patch = b.Accepted, b.Refused, b.Remaining, b.Patch
	a.Branch, a.Base, a.ProposalURL, a.ProposalNumber, a.ProposalExisting = b.Branch, b.Base, b.ProposalURL, b.ProposalNumber, b.ProposalExisting
	a.Error = b.Error
	return a, nil
}
