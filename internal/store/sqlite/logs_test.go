package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

func TestRunLogsReopenAndPrune(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "dw.db")
	s := openStore(t, path)
	_, err := s.RunLog(ctx, "nope")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, s.SaveRunLog(ctx, "nope", []byte("x")), store.ErrNotFound)

	t0 := time.Now().Add(-time.Hour)
	for i := range 3 {
		r := store.Run{ID: fmt.Sprintf("r%d", i), Workspace: "net", Trigger: "schedule", StartedAt: t0.Add(time.Duration(i) * time.Minute)}
		require.NoError(t, s.StartRun(ctx, r))
		require.NoError(t, s.SaveRunLog(ctx, r.ID, []byte("first\n")))
		require.NoError(t, s.SaveRunLog(ctx, r.ID, fmt.Appendf(nil, "== plan ==\nrun %d\n", i)))
		r.Status, r.FinishedAt = "clean", r.StartedAt.Add(time.Second)
		_, _, err := s.FinishRun(ctx, r)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	s = openStore(t, path)
	b, err := s.RunLog(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, "== plan ==\nrun 1\n", string(b))

	n, err := s.Prune(ctx, 1, time.Time{})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, id := range []string{"r0", "r1"} {
		_, err := s.RunLog(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound, id)
	}
	b, err = s.RunLog(ctx, "r2")
	require.NoError(t, err)
	require.Equal(t, "== plan ==\nrun 2\n", string(b))
}
