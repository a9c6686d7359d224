package inventory

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/silence"
)

// writeWorkspaces writes, as file name in dir, a config of the named
// workspaces (each with a source directory of its own and schedule
// spec) and returns its path.
func writeWorkspaces(t *testing.T, dir, name, spec string, workspaces ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "store: { path: %q }\nterraform: { sandbox: \"off\" }\nworkspaces:\n", filepath.Join(dir, "dw.db"))
	for _, w := range workspaces {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, w), 0o755))
		fmt.Fprintf(&b, "  - name: %s\n    schedule: %q\n    labels: { gen: %s }\n    source: { path: ./%s }\n", w, spec, name, w)
	}
	path := filepath.Join(dir, name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// A reader never sees one config's targets with another config's alert
// plans: each reload publishes config, targets and plans as one snapshot.
// Readers check every snapshot they load while reloads swap two configs
// with different workspaces back and forth (run with -race): with three
// pointers stored one after the other, a reader between the stores sees
// the workspaces of one generation and the plans of the other.
func TestSnapshotIsOneGeneration(t *testing.T) {
	dir := t.TempDir()
	pathA := writeWorkspaces(t, dir, "a", "@hourly", "a1", "a2")
	pathB := writeWorkspaces(t, dir, "b", "@daily", "b1", "b2", "b3")
	cfgA, err := Load(pathA)
	require.NoError(t, err)
	cfgB, err := Load(pathB)
	require.NoError(t, err)
	w, err := New(cfgA, Options{Path: pathA, Holds: &silence.Book{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	w.Connect(Parts{Runs: &fakeRuns{}, Leader: &fakeLeader{}, Notifiers: &fakeNotifiers{}})

	var stop atomic.Bool
	var wg sync.WaitGroup
	mismatch := make(chan error, 4)
	loads := make([]int, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				loads[i]++
				if err := oneGeneration(w.Snapshot()); err != nil {
					mismatch <- err
					return
				}
			}
		}()
	}
	for i := range 400 {
		cfg := cfgB
		if i%2 == 1 {
			cfg = cfgA
		}
		require.NoError(t, w.Apply(t.Context(), cfg))
	}
	stop.Store(true)
	wg.Wait()
	close(mismatch)
	require.NoError(t, <-mismatch)
	for i, n := range loads {
		require.Positive(t, n, "reader %d read nothing", i)
	}
	require.Same(t, cfgA, w.Config())
}

// oneGeneration reports whether s's config, targets and plans name the
// same workspaces, and its targets and plans come from that config.
func oneGeneration(s *Snapshot) error {
	names := s.Names()
	var gen string
	for _, w := range s.Config.Workspaces {
		gen = w.Labels["gen"]
	}
	for _, n := range names {
		t, ok := s.Targets[n]
		if !ok || t.Labels["gen"] != gen {
			return fmt.Errorf("workspace %s of generation %s: target %v", n, gen, t.Labels)
		}
		p, ok := s.Plans[n]
		if !ok || p.Policy.Labels["gen"] != gen {
			return fmt.Errorf("workspace %s of generation %s: plan %v", n, gen, p.Policy.Labels)
		}
	}
	if len(s.Targets) != len(names) || len(s.Plans) != len(names) {
		return fmt.Errorf("generation %s: %d workspaces, %d targets, %d plans", gen, len(names), len(s.Targets), len(s.Plans))
	}
	return nil
}

// Apply hands the scheduler the new jobs first (its refusal keeps the
// previous snapshot), the notifiers only when they changed, then
// publishes; followers hear of it after with the config it replaced. A
// standby retires and queues nothing; a leader queues the workspaces.
func TestApplyOrder(t *testing.T) {
	dir := t.TempDir()
	pathA := writeWorkspaces(t, dir, "a", "@hourly", "a1")
	w := newTestWatcher(t, pathA)
	cfgA := w.Config()
	w.leader.leading.Store(false)

	pathB := writeWorkspaces(t, dir, "b", "@daily", "b1", "b2")
	cfgB, err := Load(pathB)
	require.NoError(t, err)
	require.NoError(t, w.Apply(t.Context(), cfgB))
	require.Same(t, cfgB, w.Config())
	require.Equal(t, []schedule.Job{{Name: "b1", Spec: "@daily"}, {Name: "b2", Spec: "@daily"}}, w.runs.jobs)
	require.Zero(t, w.notifiers.set.Load(), "the notifiers did not change")
	require.Equal(t, []*config.Config{cfgA}, w.follower.old)
	require.Equal(t, []*config.Config{cfgB}, w.follower.cur, "followers hear after the publication")
	require.Empty(t, w.runs.queued, "a standby queues nothing")

	w.leader.leading.Store(true)
	cfgC := *cfgA
	cfgC.Notifiers = []config.Notifier{{Name: "x"}}
	require.NoError(t, w.Apply(t.Context(), &cfgC))
	require.Equal(t, int32(1), w.notifiers.set.Load())
	require.Equal(t, [][]string{{"a1"}}, w.runs.queued)

	refusing := &refusingRuns{fakeRuns: w.runs}
	w.Connect(Parts{Runs: refusing, Store: w.st, Leader: w.leader, Outbox: w.outbox, Notifiers: w.notifiers})
	require.ErrorIs(t, w.Apply(t.Context(), cfgB), errRefused)
	require.Same(t, &cfgC, w.Config(), "refused jobs keep the snapshot")
	require.False(t, w.Reload(), "a reload the scheduler refuses is not applied")
	require.True(t, slices.Equal([]string{"a1"}, w.Snapshot().Names()))
}

var errRefused = errors.New("refused")

type refusingRuns struct{ *fakeRuns }

func (refusingRuns) SetJobs([]schedule.Job) error { return errRefused }
