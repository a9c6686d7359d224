package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/store"
)

var _ store.LogStore = (*Store)(nil)

// SaveRunLog stores (or replaces) a run's log. An unknown run is
// store.ErrNotFound.
func (s *Store) SaveRunLog(ctx context.Context, runID string, log []byte) (err error) {
	defer s.noteWrite(&err)
	if log == nil {
		log = []byte{}
	}
	res, err := s.w.ExecContext(ctx, `
INSERT INTO run_logs (run_id, log) SELECT id, ?2 FROM runs WHERE id = ?1
ON CONFLICT (run_id) DO UPDATE SET log = excluded.log`, runID, log)
	if err != nil {
		return fmt.Errorf("save run log %q: %w", runID, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("save run log %q: %w", runID, store.ErrNotFound)
	}
	return nil
}

// RunLog returns a run's stored log; store.ErrNotFound when there is none.
func (s *Store) RunLog(ctx context.Context, runID string) ([]byte, error) {
	var b []byte
	err := s.r.QueryRowContext(ctx, `SELECT log FROM run_logs WHERE run_id = ?`, runID).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run log %q: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("run log %q: %w", runID, err)
	}
	return b, nil
}
