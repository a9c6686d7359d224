package sqlite

import (
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// WriteHealth is how the store's writes fare: a full disk or a file system
// gone read-only fails every write while reads go on, and an operator must
// see it (metrics, the log) rather than find the history silently short.
type WriteHealth struct {
	// Errors counts writes that failed because of the storage since Open.
	Errors uint64
	// Failing is true while the last write failed because of the storage
	// (a later successful write that changed something clears it).
	Failing bool
	// Since is when the current failure began (zero while not failing).
	Since time.Time
	// LastError is the last storage error's text.
	LastError string
}

// health tracks WriteHealth; the zero value is healthy.
type health struct {
	mu sync.Mutex
	h  WriteHealth
}

// WriteHealth reports how the store's writes fare.
func (s *Store) WriteHealth() WriteHealth {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.h
}

// noteWrite is deferred by every write method with its named error: a
// storage failure is counted, logged when writes start failing, and
// wrapped with store.ErrUnavailable so callers know to keep what they
// tried to write and try again; a success after failures is logged as the
// recovery. Other errors (unknown ids, a run in the wrong state) say
// nothing about the storage and leave the health alone.
func (s *Store) noteWrite(errp *error) {
	err := *errp
	storage := err != nil && isStorageError(err)
	if err != nil && !storage {
		return
	}
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	h := &s.health.h
	if !storage {
		if h.Failing {
			s.logger.Info("store writes recovered", "failed_writes", h.Errors, "failing_for", time.Since(h.Since).Round(time.Millisecond))
			h.Failing, h.Since = false, time.Time{}
		}
		return
	}
	h.Errors++
	h.LastError = err.Error()
	if !h.Failing {
		h.Failing, h.Since = true, time.Now()
		s.logger.Error("store writes failing (disk full, or a read-only or failing file system?)", "err", err)
	}
	*errp = unavailableError{err}
}

// unavailableError is a storage failure: its text is the driver's, and it
// also matches store.ErrUnavailable.
type unavailableError struct{ err error }

func (e unavailableError) Error() string   { return e.err.Error() }
func (e unavailableError) Unwrap() []error { return []error{e.err, store.ErrUnavailable} }
