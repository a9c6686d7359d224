package sqlite_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A store whose storage refuses writes (here SQLite's own size cap, the
// same SQLITE_FULL a full disk gives) says so: the error matches
// store.ErrUnavailable (callers keep what they tried to write), the
// failure is counted and logged once, an error about the write itself
// leaves the health alone, and the first write that succeeds again ends
// the failure.
func TestWriteHealth(t *testing.T) {
	ctx := t.Context()
	logs := &lockedBuffer{}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "dw.db"), slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.Equal(t, sqlite.WriteHealth{}, st.WriteHealth())

	at := time.Now().UTC()
	run := store.Run{ID: "r1", Workspace: "net", Trigger: "schedule", StartedAt: at, Status: store.RunRunning}
	require.NoError(t, st.StartRun(ctx, run))
	pages, err := sqlite.Pragma(ctx, st, "page_count")
	require.NoError(t, err)
	_, err = sqlite.Pragma(ctx, st, "max_page_count = "+pages)
	require.NoError(t, err)

	// A verdict that needs new pages.
	run.FinishedAt, run.Status, run.Error = at.Add(time.Second), drift.StatusErrored, strings.Repeat("e", 64<<10)
	_, _, err = st.FinishRun(ctx, run)
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.Contains(t, err.Error(), "full")
	_, _, err = st.FinishRun(ctx, run)
	require.ErrorIs(t, err, store.ErrUnavailable)
	h := st.WriteHealth()
	require.True(t, h.Failing)
	require.Equal(t, uint64(2), h.Errors)
	require.Contains(t, h.LastError, "full")
	require.False(t, h.Since.IsZero())
	require.Equal(t, 1, strings.Count(logs.String(), "store writes failing"), "logged when it starts failing, not per write")

	// Not the storage's fault: not counted, not a recovery either.
	err = st.FinishRunOnly(ctx, store.Run{ID: "r1"})
	require.Error(t, err)
	require.NotErrorIs(t, err, store.ErrUnavailable)
	require.Equal(t, h, st.WriteHealth())
	// A write that changes nothing succeeds even on a full disk: no
	// recovery either (the daemon expires remediations every second).
	_, err = st.ExpireRemediations(ctx, time.Now())
	require.NoError(t, err)
	require.Equal(t, h, st.WriteHealth())

	_, err = sqlite.Pragma(ctx, st, fmt.Sprintf("max_page_count = %d", 1<<30))
	require.NoError(t, err)
	_, _, err = st.FinishRun(ctx, run)
	require.NoError(t, err)
	got, err := st.Run(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, drift.StatusErrored, got.Status)
	h = st.WriteHealth()
	require.False(t, h.Failing)
	require.True(t, h.Since.IsZero())
	require.Equal(t, uint64(2), h.Errors, "a total, kept for the metric")
	require.Contains(t, logs.String(), "store writes recovered")
}
