package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

// AcceptanceStore is what AcceptanceConformance tests: a store.Store that
// is also a store.AcceptanceStore.
type AcceptanceStore interface {
	store.Store
	store.AcceptanceStore
}

// AcceptanceConformance runs the store.AcceptanceStore contract against
// stores from open, one fresh directory and store per subtest, restarting
// the store where a case needs it.
//
// Beyond the interface's comments, the suite pins these choices: every
// field round-trips (times as instants, nil lists as nil); a finish
// keeps what the request said (workspace, addresses, deletions,
// requester, creation time) whatever it is given; of finishes racing, exactly one succeeds
// and the others are ErrConflict; acceptances survive a restart.
func AcceptanceConformance(t *testing.T, open Opener[AcceptanceStore]) {
	t.Helper()
	runReopenable(t, open, []reopenTest[AcceptanceStore]{
		{"an acceptance reads back as added and finished", testAcceptanceRoundTrip},
		{"add refuses incomplete, finished and duplicate acceptances", testAcceptanceAddRefuses},
		{"finish refuses unknown, running and finished ones", testAcceptanceFinishRefuses},
		{"acceptances are listed newest first", testAcceptanceList},
		{"interrupt fails the running ones, after a restart", testAcceptanceInterrupt},
		{"racing finishes: one wins", testAcceptanceRace},
		{"prune keeps the newest and the running", testAcceptancePrune},
	})
}

func newAcceptance(id, workspace string, m int) store.Acceptance {
	return store.Acceptance{ID: id, Workspace: workspace, Addresses: []string{"local_file.a"}, Deletions: true, RequestedBy: "jane",
		State: store.AcceptRunning, CreatedAt: minutes(m)}
}

func proposed(a store.Acceptance, m int) store.Acceptance {
	a.State, a.FinishedAt = store.AcceptProposed, minutes(m)
	a.Tool, a.Commit = "terraform 1.11.4", "0123456789abcdef0123456789abcdef01234567"
	a.Accepted = []store.AcceptedAttribute{{Address: "local_file.a", Attribute: "content", Where: "main.tf:3", Kind: "literal"},
		{Address: "local_file.gone", Where: "main.tf:9", Kind: "removed block"}}
	a.Refused = []store.AcceptRefusal{{Address: "local_file.b", Attribute: "content", Reason: "a function call"}}
	a.Patch = "--- a/main.tf\n+++ b/main.tf\n"
	a.Branch, a.Base, a.ProposalURL, a.ProposalNumber, a.ProposalExisting = "driftwatch/accept/ws-0123456789", "main", "https://git.example.com/pr/7", 7, true
	return a
}

func testAcceptanceRoundTrip(t *testing.T, s AcceptanceStore, _ func() AcceptanceStore) {
	ctx := t.Context()
	a := newAcceptance("a1", "ws", 0)
	require.NoError(t, s.AddAcceptance(ctx, a))
	got, err := s.Acceptance(ctx, "a1")
	require.NoError(t, err)
	requireAcceptance(t, a, got)

	done := proposed(a, 2)
	require.NoError(t, s.FinishAcceptance(ctx, done))
	got, err = s.Acceptance(ctx, "a1")
	require.NoError(t, err)
	requireAcceptance(t, done, got)

	// What the request said is kept, whatever the finish carries.
	b := newAcceptance("b1", "ws", 3)
	require.NoError(t, s.AddAcceptance(ctx, b))
	other := b
	other.State, other.FinishedAt, other.Error = store.AcceptFailed, minutes(4), "boom"
	other.Workspace, other.Addresses, other.Deletions, other.RequestedBy, other.CreatedAt = "elsewhere", nil, false, "mallory", minutes(9)
	require.NoError(t, s.FinishAcceptance(ctx, other))
	got, err = s.Acceptance(ctx, "b1")
	require.NoError(t, err)
	want := b
	want.State, want.FinishedAt, want.Error = store.AcceptFailed, minutes(4), "boom"
	requireAcceptance(t, want, got)
}

func requireAcceptance(t *testing.T, want, got store.Acceptance) {
	t.Helper()
	require.True(t, want.CreatedAt.Equal(got.CreatedAt), "created %v, got %v", want.CreatedAt, got.CreatedAt)
	require.True(t, want.FinishedAt.Equal(got.FinishedAt), "finished %v, got %v", want.FinishedAt, got.FinishedAt)
	want.CreatedAt, want.FinishedAt = got.CreatedAt, got.FinishedAt
	require.Equal(t, want, got)
}

func testAcceptanceAddRefuses(t *testing.T, s AcceptanceStore, _ func() AcceptanceStore) {
	ctx := t.Context()
	for name, a := range map[string]store.Acceptance{
		"no id":        {Workspace: "ws", State: store.AcceptRunning, CreatedAt: minutes(0)},
		"no workspace": {ID: "x", State: store.AcceptRunning, CreatedAt: minutes(0)},
		"no time":      {ID: "x", Workspace: "ws", State: store.AcceptRunning},
		"finished":     proposed(newAcceptance("x", "ws", 0), 1),
	} {
		require.Error(t, s.AddAcceptance(ctx, a), name)
	}
	_, err := s.Acceptance(ctx, "x")
	require.ErrorIs(t, err, store.ErrNotFound, "a refused add writes nothing")
	require.NoError(t, s.AddAcceptance(ctx, newAcceptance("a", "ws", 0)))
	require.Error(t, s.AddAcceptance(ctx, newAcceptance("a", "other", 1)), "a duplicate id")
	got, err := s.Acceptance(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "ws", got.Workspace)
}

func testAcceptanceFinishRefuses(t *testing.T, s AcceptanceStore, _ func() AcceptanceStore) {
	ctx := t.Context()
	require.ErrorIs(t, s.FinishAcceptance(ctx, proposed(newAcceptance("nope", "ws", 0), 1)), store.ErrNotFound)
	a := newAcceptance("a", "ws", 0)
	require.NoError(t, s.AddAcceptance(ctx, a))
	still := a
	still.FinishedAt = minutes(1)
	require.Error(t, s.FinishAcceptance(ctx, still), "running is not a finished state")
	noTime := proposed(a, 1)
	noTime.FinishedAt = time.Time{}
	require.Error(t, s.FinishAcceptance(ctx, noTime), "finished_at is required")
	require.NoError(t, s.FinishAcceptance(ctx, proposed(a, 1)))
	again := proposed(a, 2)
	again.State = store.AcceptFailed
	require.ErrorIs(t, s.FinishAcceptance(ctx, again), store.ErrConflict, "an acceptance finishes once")
	got, err := s.Acceptance(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, store.AcceptProposed, got.State)
}

func testAcceptanceList(t *testing.T, s AcceptanceStore, _ func() AcceptanceStore) {
	ctx := t.Context()
	got, err := s.Acceptances(ctx, "ws", 0)
	require.NoError(t, err)
	require.Empty(t, got)
	for i, ws := range []string{"ws", "other", "ws", "ws"} {
		require.NoError(t, s.AddAcceptance(ctx, newAcceptance(fmt.Sprintf("a%d", i), ws, i)))
	}
	ids := func(as []store.Acceptance) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	got, err = s.Acceptances(ctx, "ws", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a3", "a2", "a0"}, ids(got))
	got, err = s.Acceptances(ctx, "ws", 2)
	require.NoError(t, err)
	require.Equal(t, []string{"a3", "a2"}, ids(got))
	got, err = s.Acceptances(ctx, "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a3", "a2", "a1", "a0"}, ids(got))
}

func testAcceptanceInterrupt(t *testing.T, s AcceptanceStore, reopen func() AcceptanceStore) {
	ctx := t.Context()
	require.NoError(t, s.AddAcceptance(ctx, newAcceptance("done", "ws", 0)))
	require.NoError(t, s.FinishAcceptance(ctx, proposed(newAcceptance("done", "ws", 0), 1)))
	require.NoError(t, s.AddAcceptance(ctx, newAcceptance("r1", "ws", 2)))
	require.NoError(t, s.AddAcceptance(ctx, newAcceptance("r2", "other", 3)))
	s = reopen()
	n, err := s.InterruptAcceptances(ctx, minutes(10))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, id := range []string{"r1", "r2"} {
		got, err := s.Acceptance(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.AcceptFailed, got.State)
		require.Equal(t, store.AcceptInterrupted, got.Error)
		require.True(t, got.FinishedAt.Equal(minutes(10)))
		require.Equal(t, "jane", got.RequestedBy)
	}
	got, err := s.Acceptance(ctx, "done")
	require.NoError(t, err)
	require.Equal(t, store.AcceptProposed, got.State, "a finished one is left alone")
	n, err = s.InterruptAcceptances(ctx, minutes(11))
	require.NoError(t, err)
	require.Zero(t, n)
}

func testAcceptanceRace(t *testing.T, s AcceptanceStore, _ func() AcceptanceStore) {
	ctx := t.Context()
	a := newAcceptance("a", "ws", 0)
	require.NoError(t, s.AddAcceptance(ctx, a))
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := proposed(a, 1+i)
			errs[i] = s.FinishAcceptance(ctx, f)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		require.ErrorIs(t, err, store.ErrConflict)
	}
	require.Equal(t, 1, won)
}

func testAcceptancePrune(t *testing.T, s AcceptanceStore, _ func() AcceptanceStore) {
	ctx := t.Context()
	for i := range 4 {
		a := newAcceptance(fmt.Sprintf("ws-%d", i), "ws", i)
		require.NoError(t, s.AddAcceptance(ctx, a))
		require.NoError(t, s.FinishAcceptance(ctx, proposed(a, i)))
	}
	require.NoError(t, s.AddAcceptance(ctx, newAcceptance("running", "ws", -10)))
	require.NoError(t, s.AddAcceptance(ctx, newAcceptance("other-0", "other", 0)))
	require.NoError(t, s.FinishAcceptance(ctx, proposed(newAcceptance("other-0", "other", 0), 0)))
	_, err := s.Prune(ctx, 2, minutes(-60))
	require.NoError(t, err)
	ids := func(ws string) []string {
		as, err := s.Acceptances(ctx, ws, 0)
		require.NoError(t, err)
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	require.Equal(t, []string{"ws-3", "ws-2", "running"}, ids("ws"), "the newest two finished, and the running one")
	require.Equal(t, []string{"other-0"}, ids("other"))
	_, err = s.Prune(ctx, 0, minutes(3))
	require.NoError(t, err)
	require.Equal(t, []string{"ws-3", "running"}, ids("ws"), "finished before the cutoff")
	require.Empty(t, ids("other"))
}
