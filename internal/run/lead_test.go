package run

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// steps records, in order, what Lead did with the parts it was handed.
type steps struct {
	mu   sync.Mutex
	done []string
}

func (s *steps) note(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = append(s.done, step)
}

func (s *steps) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.done...)
}

// lead is a Lead whose parts note what they are asked (prepareErr, if
// set, fails Prepare).
func (s *steps) lead(prepareErr error) Lead {
	return Lead{
		Claim: func(context.Context) (func(), error) {
			s.note("claim")
			return func() { s.note("release") }, nil
		},
		Prepare:    func(context.Context) error { s.note("prepare"); return prepareErr },
		SetLeading: func(v bool) { s.note(map[bool]string{true: "leading", false: "not leading"}[v]) },
		Loops: []func(context.Context) error{func(ctx context.Context) error {
			s.note("loop")
			<-ctx.Done()
			return nil
		}},
		Workspaces: func() []string { return []string{"net", "db"} },
	}
}

// Leading takes the store lock, recovers and prepares before it says it
// leads, then schedules (every never-checked workspace at once) and runs
// the loops until ctx ends; on the way out it says it no longer leads,
// then releases the lock.
func TestLead(t *testing.T) {
	m, br := newIdleManager(t)
	s := &steps{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Lead(ctx, s.lead(nil)) }()
	require.Eventually(t, func() bool { active, _ := br.State(""); return active == 1 }, 10*time.Second, time.Millisecond,
		"unchecked workspaces are queued at once (one slot)")
	require.Eventually(t, func() bool { return len(s.list()) == 4 }, 10*time.Second, time.Millisecond)
	require.Equal(t, []string{"claim", "prepare", "leading", "loop"}, s.list())
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, []string{"claim", "prepare", "leading", "loop", "not leading", "release"}, s.list())
}

// A failed Prepare ends Lead before it leads.
func TestLeadPrepareFails(t *testing.T) {
	m, _ := newIdleManager(t)
	s := &steps{}
	boom := errors.New("silences unreadable")
	require.ErrorIs(t, m.Lead(t.Context(), s.lead(boom)), boom)
	require.Equal(t, []string{"claim", "prepare", "not leading", "release"}, s.list())
}

// jobs is a Jobs whose Watch runs until ctx ends or fail is closed.
type jobs struct {
	adopted  []Adopted
	adoptErr error
	fail     chan struct{}
}

func (j *jobs) Watch(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-j.fail:
		return errors.New("watch failed")
	}
}

func (j *jobs) Adopt(context.Context) ([]Adopted, error) { return j.adopted, j.adoptErr }

// waiting is an adopted Job's runner: its outcome comes when ctx ends.
type waiting struct{}

func (waiting) Run(ctx context.Context, _ terraform.Request) (runner.Result, error) {
	<-ctx.Done()
	return runner.Result{}, context.Cause(ctx)
}

// With Jobs, Lead adopts a previous daemon's Jobs (their workspaces busy,
// their runs kept running) and ends, stopping every run, when the Watch
// fails; a failed adoption ends it before it leads, the Watch stopped.
func TestLeadJobs(t *testing.T) {
	m, _ := newIdleManager(t)
	now := time.Now().UTC()
	require.NoError(t, m.st.StartRun(t.Context(), store.Run{ID: "left", Workspace: "net", Trigger: "schedule", StartedAt: now, Status: store.RunRunning}))
	j := &jobs{adopted: []Adopted{{Workspace: "net", RunID: "left", Job: "job-left", Runner: waiting{}}},
		fail: make(chan struct{})}
	s := &steps{}
	l := s.lead(nil)
	l.Jobs = j
	done := make(chan error, 1)
	go func() { done <- m.Lead(t.Context(), l) }()
	require.Eventually(t, func() bool { return len(s.list()) == 4 }, 10*time.Second, time.Millisecond)
	_, err := m.Trigger("net")
	require.ErrorIs(t, err, schedule.ErrBusy, "an adopted Job's workspace is busy")
	r, err := m.st.Run(t.Context(), "left")
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, r.Status, "kept running, not recovered")
	close(j.fail)
	require.EqualError(t, <-done, "kubernetes runner stopped: watch failed")
	require.True(t, m.stopping.Load(), "no run starts once the Watch has stopped")

	m2, _ := newIdleManager(t)
	j2 := &jobs{adoptErr: errors.New("list failed"), fail: make(chan struct{})}
	s2 := &steps{}
	l2 := s2.lead(nil)
	l2.Jobs = j2
	require.EqualError(t, m2.Lead(t.Context(), l2), "kubernetes runner: adopt running jobs: list failed")
	require.Equal(t, []string{"claim", "not leading", "release"}, s2.list())
}
