package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// The restart tests run this test binary again as a child process (see
// TestHelperProcess) that opens the same database file, so the parent can
// let it exit, or SIGKILL it at a chosen or random moment, and then reopen
// the file as the next driftwatch would.
const (
	envMode   = "DRIFTWATCH_STORE_HELPER"
	envPath   = "DRIFTWATCH_STORE_PATH"
	envPrefix = "DRIFTWATCH_STORE_PREFIX"
	envCount  = "DRIFTWATCH_STORE_COUNT"

	// committedLine prefixes each line the child prints after FinishRun
	// returned; startedLine after StartRun returned.
	committedLine = "committed "
	startedLine   = "started "
)

// TestHelperProcess is not a test: it is the child process of the restart
// tests, and returns at once unless envMode is set.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envMode)
	if mode == "" {
		return
	}
	if err := helper(mode); err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", mode, err)
		os.Exit(3)
	}
	os.Exit(0)
}

func helper(mode string) error {
	// The child is not a test: it has no t.Context(), and it is killed
	// rather than cancelled.
	ctx := context.Background()
	s, err := sqlite.Open(ctx, os.Getenv(envPath), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	prefix := os.Getenv(envPrefix)
	workspace := "ws-" + prefix
	count, _ := strconv.Atoi(os.Getenv(envCount))
	// One run: alternately drift and errored, so the state changes with
	// every commit.
	runOne := func(i int) error {
		r := store.Run{ID: fmt.Sprintf("%s-%06d", prefix, i), Workspace: workspace, Trigger: "schedule", StartedAt: time.Now()}
		if err := s.StartRun(ctx, r); err != nil {
			return err
		}
		r.Status, r.FinishedAt = drift.StatusDrift, time.Now()
		r.Findings = []drift.Finding{{Kind: drift.KindDrift, Address: fmt.Sprintf("null_resource.n%d", i%3), Action: "update"}}
		if i%2 == 1 {
			r.Status, r.Findings, r.Error = drift.StatusErrored, nil, "plan: exit status 1"
		}
		if _, _, err := s.FinishRun(ctx, r); err != nil {
			return err
		}
		// One write(2) per line: a pipe never splits it.
		_, err := os.Stdout.WriteString(committedLine + r.ID + "\n")
		return err
	}

	// One run whose outcome counts it on the workspace's incident and
	// enqueues a message per notifier (IDs "<run>/<notifier>").
	outboxOne := func(i int) error {
		r := store.Run{ID: fmt.Sprintf("%s-%06d", prefix, i), Workspace: workspace, Trigger: "schedule", StartedAt: time.Now()}
		if err := s.StartRun(ctx, r); err != nil {
			return err
		}
		r.Status, r.FinishedAt = drift.StatusDrift, time.Now()
		r.Findings = []drift.Finding{{Kind: drift.KindDrift, Address: fmt.Sprintf("null_resource.n%d", i%3), Action: "update"}}
		if _, _, err := s.FinishRunWithOutcome(ctx, r, outboxDecide(r.ID)); err != nil {
			return err
		}
		_, err := os.Stdout.WriteString(committedLine + r.ID + "\n")
		return err
	}

	loop := func(one func(int) error) error {
		for i := 0; ; i++ {
			if err := one(i); err != nil {
				return err
			}
		}
	}
	// block commits count runs with one, then starts one more and waits
	// for SIGKILL.
	block := func(one func(int) error) error {
		for i := range count {
			if err := one(i); err != nil {
				return err
			}
		}
		r := store.Run{ID: fmt.Sprintf("%s-%06d", prefix, count), Workspace: workspace, Trigger: "schedule", StartedAt: time.Now()}
		if err := s.StartRun(ctx, r); err != nil {
			return err
		}
		if _, err := os.Stdout.WriteString(startedLine + r.ID + "\n"); err != nil {
			return err
		}
		time.Sleep(time.Hour) // until SIGKILL
		return errors.New("not killed")
	}

	switch mode {
	case "outbox-loop":
		return loop(outboxOne)
	case "outbox-block":
		return block(outboxOne)
	case "exit":
		for i := range count {
			if err := runOne(i); err != nil {
				return err
			}
		}
		return s.Close()
	case "block":
		return block(runOne)
	case "loop":
		return loop(runOne)
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// child is a running helper process.
type child struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	first  chan struct{} // closed at the first complete line
	eof    chan struct{} // closed when stdout is closed

	mu    sync.Mutex
	lines []string
}

func startChild(t *testing.T, mode, path, prefix string, count int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(),
		envMode+"="+mode, envPath+"="+path, envPrefix+"="+prefix, envCount+"="+strconv.Itoa(count))
	c := &child{cmd: cmd, first: make(chan struct{}), eof: make(chan struct{})}
	cmd.Stderr = &c.stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-c.eof
			_ = cmd.Wait()
		}
	})
	go func() {
		defer close(c.eof)
		br := bufio.NewReader(stdout)
		var once sync.Once
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				// A line cut short by the kill was not reported.
				if !errors.Is(err, io.EOF) {
					c.mu.Lock()
					c.lines = append(c.lines, "read error: "+err.Error())
					c.mu.Unlock()
				}
				return
			}
			c.mu.Lock()
			c.lines = append(c.lines, strings.TrimSuffix(line, "\n"))
			c.mu.Unlock()
			once.Do(func() { close(c.first) })
		}
	}()
	return c
}

func (c *child) waitFirst(t *testing.T) {
	t.Helper()
	select {
	case <-c.first:
	case <-c.eof:
		err := c.wait(t)
		t.Fatalf("child closed stdout before its first line (exit: %v); stderr:\n%s", err, c.stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("child printed nothing in a minute; stderr:\n%s", c.stderr.String())
	}
}

// wait reaps the child after its stdout is drained; it returns how it exited.
func (c *child) wait(t *testing.T) error {
	t.Helper()
	<-c.eof
	return c.cmd.Wait()
}

func (c *child) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Kill()) // SIGKILL
	err := c.wait(t)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr:\n%s", c.stderr.String())
	require.Equal(t, "signal: killed", ee.ProcessState.String())
}

// reported returns the IDs the child printed after the given prefix.
func (c *child) reported(t *testing.T, kind string) []string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, l := range c.lines {
		id, ok := strings.CutPrefix(l, kind)
		require.True(t, ok || strings.HasPrefix(l, committedLine) || strings.HasPrefix(l, startedLine), "unexpected line %q", l)
		if ok {
			ids = append(ids, id)
		}
	}
	return ids
}

func TestRestartAfterCleanExit(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state", "driftwatch.db")
	c := startChild(t, "exit", path, "a", 5)
	require.NoError(t, c.wait(t), "stderr:\n%s", c.stderr.String())
	committed := c.reported(t, committedLine)
	require.Len(t, committed, 5)

	s := openStore(t, path)
	runs, err := s.Runs(ctx, "ws-a", 0)
	require.NoError(t, err)
	got := ids(runs)
	slices.Reverse(got)
	require.Equal(t, committed, got)
	for _, r := range runs {
		require.NotEqual(t, store.RunRunning, r.Status)
	}
	st, err := s.Workspace(ctx, "ws-a")
	require.NoError(t, err)
	require.Equal(t, "a-000004", st.LastRunID)
	require.Equal(t, drift.StatusDrift, st.Status)
	require.Equal(t, 0, st.ConsecutiveErrors)
	recovered, err := s.RecoverRuns(ctx, time.Now())
	require.NoError(t, err)
	require.Empty(t, recovered.Errored)
	require.Empty(t, recovered.Queued)
}

func TestRestartAfterKillDuringRun(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	c := startChild(t, "block", path, "b", 3)
	c.waitFirst(t)
	// Wait for the started line: the in-flight run is committed as running.
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.lines) == 4
	}, time.Minute, 5*time.Millisecond)
	c.kill(t)
	committed := c.reported(t, committedLine)
	require.Equal(t, []string{"b-000000", "b-000001", "b-000002"}, committed)
	require.Equal(t, []string{"b-000003"}, c.reported(t, startedLine))

	s := openStore(t, path)
	for _, id := range committed {
		r, err := s.Run(ctx, id)
		require.NoError(t, err)
		require.NotEqual(t, store.RunRunning, r.Status, id)
		require.False(t, r.FinishedAt.IsZero(), id)
	}
	st, err := s.Workspace(ctx, "ws-b")
	require.NoError(t, err)
	require.Equal(t, "b-000002", st.LastRunID)
	require.Equal(t, drift.StatusDrift, st.Status)
	require.Len(t, st.Findings, 1)

	inflight, err := s.Run(ctx, "b-000003")
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, inflight.Status)

	at := time.Now()
	recovered, err := s.RecoverRuns(ctx, at)
	require.NoError(t, err)
	require.Empty(t, recovered.Queued)
	require.Len(t, recovered.Errored, 1)
	errored := recovered.Errored[0]
	require.Equal(t, "b-000003", errored.ID)
	require.Equal(t, drift.StatusErrored, errored.Status)
	require.Equal(t, store.RunRestartedError, errored.Error)
	require.True(t, errored.FinishedAt.Equal(at))
	require.True(t, errored.StartedAt.Equal(inflight.StartedAt))
	stored, err := s.Run(ctx, "b-000003")
	require.NoError(t, err)
	require.Equal(t, errored, stored)

	again, err := s.RecoverRuns(ctx, at)
	require.NoError(t, err)
	require.Empty(t, again.Errored)
	require.Empty(t, again.Queued)
	stAfter, err := s.Workspace(ctx, "ws-b")
	require.NoError(t, err)
	require.Equal(t, st, stAfter, "RecoverRuns changed the workspace state")
}

func TestRestartAfterRandomKills(t *testing.T) {
	ctx := t.Context()
	const iterations = 20
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, seed))
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	var allCommitted []string

	for it := range iterations {
		prefix := fmt.Sprintf("it%02d", it)
		c := startChild(t, "loop", path, prefix, 0)
		c.waitFirst(t)
		delay := time.Duration(rnd.Int64N(int64(150 * time.Millisecond)))
		time.Sleep(delay)
		c.kill(t)
		committed := c.reported(t, committedLine)
		t.Logf("iteration %d: killed %s after the first commit, %d runs reported committed", it, delay, len(committed))
		require.NotEmpty(t, committed)
		allCommitted = append(allCommitted, committed...)

		// The file as the crash left it: SQLite's own check.
		db := rawDB(t, path)
		var check string
		require.NoError(t, db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check))
		require.Equal(t, "ok", check)
		require.NoError(t, db.Close())

		// The next driftwatch: it opens, finds every committed run, and at
		// most the one in flight, which RecoverRuns errors.
		s, err := sqlite.Open(ctx, path, testLogger(t))
		require.NoError(t, err)
		runs, err := s.Runs(ctx, "ws-"+prefix, 0)
		require.NoError(t, err)
		status := map[string]drift.Status{}
		for _, r := range runs {
			status[r.ID] = r.Status
		}
		for _, id := range committed {
			require.Contains(t, status, id, "a committed run was lost")
			require.NotEqual(t, store.RunRunning, status[id], "a committed run is back to running: %s", id)
		}
		// The child runs one at a time: at most one run was started and
		// not finished, and at most one was finished but not yet reported.
		require.LessOrEqual(t, len(runs), len(committed)+1)
		stBefore, err := s.Workspace(ctx, "ws-"+prefix)
		require.NoError(t, err)
		recovered, err := s.RecoverRuns(ctx, time.Now())
		require.NoError(t, err)
		require.Empty(t, recovered.Queued)
		require.LessOrEqual(t, len(recovered.Errored), 1)
		for _, r := range recovered.Errored {
			require.NotContains(t, committed, r.ID)
			require.Equal(t, fmt.Sprintf("%s-%06d", prefix, len(runs)-1), r.ID, "only the newest run can be in flight")
			require.Equal(t, drift.StatusErrored, r.Status)
			require.Equal(t, store.RunRestartedError, r.Error)
		}
		st, err := s.Workspace(ctx, "ws-"+prefix)
		require.NoError(t, err)
		require.Equal(t, stBefore, st, "RecoverRuns changed the workspace state")
		last := committed[len(committed)-1]
		require.GreaterOrEqual(t, st.LastRunID, last, "state points at %s, before the last committed %s", st.LastRunID, last)
		again, err := s.RecoverRuns(ctx, time.Now())
		require.NoError(t, err)
		require.Empty(t, again.Errored)
		require.Empty(t, again.Queued)
		require.NoError(t, s.Close())
	}

	// Nothing from earlier iterations went missing either.
	s := openStore(t, path)
	for _, id := range allCommitted {
		_, err := s.Run(ctx, id)
		require.NoError(t, err)
	}
}

func ids(runs []store.Run) []string {
	out := make([]string, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

// outboxNotifiers are the notifiers the outbox helper enqueues for.
var outboxNotifiers = []string{"n1", "n2"}

// outboxDecide counts run on the workspace's incident and enqueues one
// message per notifier for it.
func outboxDecide(runID string) store.Outcome {
	return func(_, after store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		in := store.Incident{Key: "dw-drift-" + after.Workspace, Workspace: after.Workspace, Class: "drift",
			State: store.IncidentOpen, OpenedAt: after.LastSuccessAt}
		for _, cur := range incidents {
			if cur.Key == in.Key {
				in = cur
			}
		}
		in.Observations++
		in.NotifiedAt = after.LastSuccessAt
		var msgs []store.OutboxMessage
		for _, n := range outboxNotifiers {
			msgs = append(msgs, store.OutboxMessage{ID: runID + "/" + n, Notifier: n, IncidentKey: in.Key,
				Payload: fmt.Appendf(nil, `{"run":%q,"observation":%d}`, runID, in.Observations)})
		}
		return []store.Incident{in}, msgs
	}
}

// checkOutbox checks, after a crash and RecoverRuns, that the workspace's
// finished runs (not the one in flight that RecoverRuns errored: it
// enqueued nothing) and their messages agree: each finished run's messages
// are in the outbox once, undelivered, with no attempts, due in order; no
// message exists without its run; the incident counted each finished run
// once. It delivers every message and returns the finished runs, oldest
// first.
func checkOutbox(t *testing.T, s *sqlite.Store, workspace string) []string {
	t.Helper()
	ctx := t.Context()
	runs, err := s.Runs(ctx, workspace, 0)
	require.NoError(t, err)
	var finished []string
	for _, r := range runs {
		recovered := r.Status == drift.StatusErrored && r.Error == store.RunRestartedError
		if r.Status != store.RunRunning && !recovered {
			finished = append(finished, r.ID)
		}
	}
	slices.Sort(finished)

	key := "dw-drift-" + workspace
	incs, err := s.Incidents(ctx, workspace)
	require.NoError(t, err)
	require.Len(t, incs, 1)
	require.Equal(t, len(finished), incs[0].Observations, "the incident did not count each finished run once")

	stats, err := s.OutboxStats(ctx)
	require.NoError(t, err)
	for _, n := range outboxNotifiers {
		require.Equal(t, len(finished), stats[n].Pending, "%s: pending messages", n)
		require.Zero(t, stats[n].Dead)
	}

	// Deliver everything the way the outbox would, checking each message
	// once, in order per notifier.
	now := time.Now()
	seen := map[string]bool{}
	got := map[string][]string{}
	for {
		msgs, err := s.DueMessages(ctx, now, 0)
		require.NoError(t, err)
		if len(msgs) == 0 {
			break
		}
		require.LessOrEqual(t, len(msgs), len(outboxNotifiers), "one head per (notifier, incident)")
		for _, m := range msgs {
			require.False(t, seen[m.ID], "message %s came back after delivery", m.ID)
			seen[m.ID] = true
			require.Equal(t, key, m.IncidentKey)
			require.Zero(t, m.Attempts, m.ID)
			require.Empty(t, m.LastError, m.ID)
			require.True(t, m.DeliveredAt.IsZero(), m.ID)
			require.False(t, m.Dead, m.ID)
			require.False(t, m.NextAttempt.After(now), m.ID)
			run, notifier, ok := strings.Cut(m.ID, "/")
			require.True(t, ok, m.ID)
			require.Equal(t, m.Notifier, notifier)
			got[notifier] = append(got[notifier], run)
			require.NoError(t, s.MarkDelivered(ctx, m.ID, now, []byte(m.ID)))
		}
	}
	for _, n := range outboxNotifiers {
		require.Equal(t, finished, got[n], "%s: the messages delivered are not exactly the finished runs', in order", n)
	}
	return finished
}

func TestRestartOutboxAfterKillDuringRun(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	c := startChild(t, "outbox-block", path, "ob", 4)
	c.waitFirst(t)
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.lines) == 5
	}, time.Minute, 5*time.Millisecond)
	c.kill(t)
	committed := c.reported(t, committedLine)
	require.Equal(t, []string{"ob-000000", "ob-000001", "ob-000002", "ob-000003"}, committed)

	s := openStore(t, path)
	recovered, err := s.RecoverRuns(ctx, time.Now())
	require.NoError(t, err)
	require.Equal(t, []string{"ob-000004"}, ids(recovered.Errored))
	require.Empty(t, recovered.Queued)
	require.Equal(t, committed, checkOutbox(t, s, "ws-ob"))
	_, err = s.Run(ctx, "ob-000004")
	require.NoError(t, err)
	require.ErrorIs(t, s.MarkDelivered(ctx, "ob-000004/n1", time.Now(), nil), store.ErrNotFound, "the in-flight run enqueued nothing")
}

func TestRestartOutboxAfterRandomKills(t *testing.T) {
	ctx := t.Context()
	const iterations = 8
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, seed))
	path := filepath.Join(t.TempDir(), "driftwatch.db")

	for it := range iterations {
		prefix := fmt.Sprintf("ox%02d", it)
		c := startChild(t, "outbox-loop", path, prefix, 0)
		c.waitFirst(t)
		delay := time.Duration(rnd.Int64N(int64(150 * time.Millisecond)))
		time.Sleep(delay)
		c.kill(t)
		committed := c.reported(t, committedLine)
		t.Logf("iteration %d: killed %s after the first commit, %d runs reported committed", it, delay, len(committed))
		require.NotEmpty(t, committed)

		db := rawDB(t, path)
		var check string
		require.NoError(t, db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check))
		require.Equal(t, "ok", check)
		require.NoError(t, db.Close())

		s, err := sqlite.Open(ctx, path, testLogger(t))
		require.NoError(t, err)
		recovered, err := s.RecoverRuns(ctx, time.Now())
		require.NoError(t, err)
		require.LessOrEqual(t, len(recovered.Errored), 1, "at most the run in flight")
		require.Empty(t, recovered.Queued)
		finished := checkOutbox(t, s, "ws-"+prefix)
		// Every reported run is there; at most one more finished unreported.
		require.Equal(t, committed, finished[:len(committed)])
		require.LessOrEqual(t, len(finished), len(committed)+1)
		// Earlier iterations' messages, all delivered, stay delivered.
		due, err := s.DueMessages(ctx, time.Now().Add(time.Hour), 0)
		require.NoError(t, err)
		require.Empty(t, due)
		require.NoError(t, s.Close())
	}
}
