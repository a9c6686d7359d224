package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// LogStore is what LogConformance tests: a store.Store (runs are started,
// finished, recovered and pruned through it) that is also a
// store.LogStore.
type LogStore interface {
	store.Store
	store.LogStore
}

// LogConformance runs the store.LogStore contract against stores from
// open, one fresh directory and store per subtest, restarting the store
// where a case needs it.
//
// Beyond the interface's comments, the suite pins these choices: a log is
// opaque bytes (any byte value, hundreds of KiB) returned exactly as saved;
// an empty log is a stored log (RunLog returns it empty, not ErrNotFound);
// a failed SaveRunLog stores nothing.
func LogConformance(t *testing.T, open Opener[LogStore]) {
	t.Helper()
	runReopenable(t, open, []reopenTest[LogStore]{
		{"unknown runs have no log", testLogNotFound},
		{"save replaces the log", testLogReplace},
		{"an empty log is a log", testLogEmpty},
		{"a run in any status keeps a log", testLogAnyStatus},
		{"prune deletes a run's log with the run", testLogPrune},
		{"logs survive a restart", testLogRestart},
		{"concurrent writers and readers", testLogConcurrent},
	})
}

func runLog(t *testing.T, s LogStore, id string) []byte {
	t.Helper()
	b, err := s.RunLog(t.Context(), id)
	require.NoError(t, err, "log of %s", id)
	return b
}

func saveLog(t *testing.T, s LogStore, id, log string) {
	t.Helper()
	require.NoError(t, s.SaveRunLog(t.Context(), id, []byte(log)), "save log of %s", id)
}

func testLogNotFound(t *testing.T, s LogStore, _ func() LogStore) {
	ctx := t.Context()
	_, err := s.RunLog(ctx, "nope")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, s.SaveRunLog(ctx, "nope", []byte("x")), store.ErrNotFound)
	_, err = s.RunLog(ctx, "nope")
	require.ErrorIs(t, err, store.ErrNotFound, "a refused save stored a log")
	_, err = s.Run(ctx, "nope")
	require.ErrorIs(t, err, store.ErrNotFound, "a refused save created a run")

	start(t, s, newRun("r1", "net", t0))
	_, err = s.RunLog(ctx, "r1")
	require.ErrorIs(t, err, store.ErrNotFound, "no log saved yet")
}

func testLogReplace(t *testing.T, s LogStore, _ func() LogStore) {
	ctx := t.Context()
	r := start(t, s, newRun("r1", "net", t0))
	start(t, s, newRun("r2", "net", minutes(1)))
	buf := []byte("== init ==\n")
	require.NoError(t, s.SaveRunLog(ctx, "r1", buf))
	buf[0] = 'X' // the store kept its own copy
	require.Equal(t, "== init ==\n", string(runLog(t, s, "r1")))

	saveLog(t, s, "r1", "== init ==\n== plan ==\n")
	require.Equal(t, "== init ==\n== plan ==\n", string(runLog(t, s, "r1")))
	_, err := s.RunLog(ctx, "r2")
	require.ErrorIs(t, err, store.ErrNotFound, "another run's log")

	finish(t, s, outcome(r, drift.StatusClean, minutes(2)))
	require.Equal(t, "== init ==\n== plan ==\n", string(runLog(t, s, "r1")), "finishing keeps the log")
	saveLog(t, s, "r1", "final\n")
	require.Equal(t, "final\n", string(runLog(t, s, "r1")))
}

func testLogEmpty(t *testing.T, s LogStore, _ func() LogStore) {
	ctx := t.Context()
	start(t, s, newRun("r1", "net", t0))
	start(t, s, newRun("r2", "net", t0))
	require.NoError(t, s.SaveRunLog(ctx, "r1", nil))
	require.Empty(t, runLog(t, s, "r1"))
	saveLog(t, s, "r2", "something")
	require.NoError(t, s.SaveRunLog(ctx, "r2", []byte{}))
	require.Empty(t, runLog(t, s, "r2"), "an empty log replaces")
}

func testLogAnyStatus(t *testing.T, s LogStore, _ func() LogStore) {
	ctx := t.Context()
	restartedRun := start(t, s, newRun("restarted", "net", t0))
	got, err := s.RecoverRuns(ctx, minutes(1))
	require.NoError(t, err)
	equal(t, []store.Run{restarted(restartedRun, minutes(1))}, got.Errored)
	start(t, s, newRun("running", "net", minutes(2)))
	run(t, s, "errored", "net", 2, 3, drift.StatusErrored)
	equal(t, restarted(restartedRun, minutes(1)), getRun(t, s, "restarted"))
	require.Equal(t, store.RunRunning, getRun(t, s, "running").Status)
	for _, id := range []string{"running", "restarted", "errored"} {
		saveLog(t, s, id, "log of "+id)
	}
	for _, id := range []string{"running", "restarted", "errored"} {
		require.Equal(t, "log of "+id, string(runLog(t, s, id)))
	}
}

func testLogPrune(t *testing.T, s LogStore, _ func() LogStore) {
	ctx := t.Context()
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		r := start(t, s, newRun(id, "net", minutes(2*i)))
		saveLog(t, s, id, "log of "+id)
		finish(t, s, outcome(r, drift.StatusClean, minutes(2*i+1)))
	}
	start(t, s, newRun("live", "net", minutes(10)))
	saveLog(t, s, "live", "log of live")

	n, err := s.Prune(ctx, 1, time.Time{})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, id := range []string{"r0", "r1"} {
		_, err := s.RunLog(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound, "%s was pruned", id)
		require.ErrorIs(t, s.SaveRunLog(ctx, id, []byte("late")), store.ErrNotFound, "%s was pruned", id)
	}
	require.Equal(t, "log of r2", string(runLog(t, s, "r2")))
	require.Equal(t, "log of live", string(runLog(t, s, "live")))
}

func testLogRestart(t *testing.T, s LogStore, reopen func() LogStore) {
	// Every byte value, and more than a page.
	big := make([]byte, 256*1024)
	for i := range big {
		big[i] = byte(i * 7)
	}
	r := start(t, s, newRun("r1", "net", t0))
	r2 := start(t, s, newRun("r2", "net", minutes(1)))
	require.NoError(t, s.SaveRunLog(t.Context(), "r1", big))
	finish(t, s, outcome(r, drift.StatusDrift, minutes(2), fDrift))
	saveLog(t, s, "r2", "== plan ==\nrunning\n")

	s = reopen()
	require.Equal(t, big, runLog(t, s, "r1"))
	require.Equal(t, "== plan ==\nrunning\n", string(runLog(t, s, "r2")))
	got, err := s.RecoverRuns(t.Context(), minutes(3))
	require.NoError(t, err)
	equal(t, []store.Run{restarted(r2, minutes(3))}, got.Errored, "the run in flight at the restart")
	require.Equal(t, "== plan ==\nrunning\n", string(runLog(t, s, "r2")), "recovering a run keeps its log")
	saveLog(t, s, "r2", "== plan ==\nrunning\n== daemon restarted ==\n")

	s = reopen()
	require.Equal(t, "== plan ==\nrunning\n== daemon restarted ==\n", string(runLog(t, s, "r2")))
	require.Equal(t, big, runLog(t, s, "r1"))
	equal(t, restarted(r2, minutes(3)), getRun(t, s, "r2"))
}

func testLogConcurrent(t *testing.T, s LogStore, _ func() LogStore) {
	ctx := t.Context()
	const (
		workers = 8
		saves   = 10
	)
	for w := range workers {
		start(t, s, newRun(fmt.Sprintf("r%d", w), "net", minutes(w)))
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			errs[w] = func() error {
				id := fmt.Sprintf("r%d", w)
				other := fmt.Sprintf("r%d", (w+1)%workers)
				for i := range saves {
					if err := s.SaveRunLog(ctx, id, fmt.Appendf(nil, "%s save %d\n", id, i)); err != nil {
						return err
					}
					got, err := s.RunLog(ctx, id)
					if err != nil {
						return err
					}
					if want := fmt.Sprintf("%s save %d\n", id, i); string(got) != want {
						return fmt.Errorf("%s: read %q after saving %q", id, got, want)
					}
					// Another worker's log, saved or not yet.
					if _, err := s.RunLog(ctx, other); err != nil && !errors.Is(err, store.ErrNotFound) {
						return err
					}
				}
				return nil
			}()
		})
	}
	wg.Wait()
	for w, err := range errs {
		require.NoError(t, err, "worker %d", w)
	}
	for w := range workers {
		id := fmt.Sprintf("r%d", w)
		require.Equal(t, fmt.Sprintf("%s save %d\n", id, saves-1), string(runLog(t, s, id)))
	}
}
