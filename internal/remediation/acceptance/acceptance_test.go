package acceptance_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/remediation/accept"
	"github.com/driftwatch/driftwatch/internal/remediation/accept/propose"
	"github.com/driftwatch/driftwatch/internal/remediation/acceptance"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// change is a computed change accepting one attribute and refusing one.
func change() *accept.Result {
	return &accept.Result{
		Files:    []accept.File{{Path: "main.tf", Old: []byte("a = 1\n"), New: []byte("a = 2\n")}},
		Accepted: []accept.Accepted{{Address: "x.a", Attribute: "a", Where: "main.tf:1", Kind: accept.KindLiteral}},
		Refused:  []accept.Refusal{{Address: "x.b", Attribute: "b", Reason: "a function call"}},
	}
}

func gitRequest() terraform.Request {
	return terraform.Request{Workspace: "net", GitCacheDir: "/cache",
		Source: terraform.Source{Git: &terraform.Git{URL: "https://git.example.com/acme/infra.git", Ref: "main", Path: "net", CredentialsFile: "/tok"}}}
}

type opener struct{}

func (opener) OpenChange(context.Context, notify.ChangeRequest) (notify.ChangeProposal, error) {
	return notify.ChangeProposal{}, nil
}

// Do turns each outcome of the two steps into the acceptance's state,
// and hands the proposal what it needs.
func TestDo(t *testing.T) {
	var scope engine.AcceptScope
	proven := func(_ context.Context, _ terraform.Request, s engine.AcceptScope) (engine.AcceptOutcome, error) {
		scope = s
		return engine.AcceptOutcome{Tool: "terraform 1.11.4", Commit: "c0ffee", Change: change(), Proven: true}, nil
	}
	var got propose.Request
	proposed := func(_ context.Context, r propose.Request) (propose.Proposal, error) {
		got = r
		p := propose.Proposal{Branch: "driftwatch/accept/net-0123456789", Base: "main", Commit: "abc"}
		p.Number, p.URL, p.Existing = 7, "https://git.example.com/acme/infra/pull/7", true
		return p, nil
	}
	settings := config.AcceptProposal{Notifier: "gh", BranchPrefix: "dw/accept", AuthorName: "bot", AuthorEmail: "bot@x.io", Labels: []string{"drift"}}
	in := acceptance.Input{Request: gitRequest(), Addresses: []string{"x.a"}, Deletions: true,
		Proposing: &acceptance.Proposing{Settings: settings, Opener: opener{}, Link: "https://dw.example.com/workspaces/net"}}

	a := acceptance.Do(t.Context(), in, acceptance.Steps{Accept: proven, Propose: proposed})
	require.Equal(t, store.AcceptProposed, a.State, a.Error)
	require.Equal(t, engine.AcceptScope{Addresses: []string{"x.a"}, Deletions: true}, scope)
	require.Equal(t, "terraform 1.11.4", a.Tool)
	require.Equal(t, []store.AcceptedAttribute{{Address: "x.a", Attribute: "a", Where: "main.tf:1", Kind: "literal"}}, a.Accepted)
	require.Equal(t, []store.AcceptRefusal{{Address: "x.b", Attribute: "b", Reason: "a function call"}}, a.Refused)
	require.Contains(t, a.Patch, "-a = 1\n+a = 2")
	require.Equal(t, "driftwatch/accept/net-0123456789", a.Branch)
	require.Equal(t, 7, a.ProposalNumber)
	require.True(t, a.ProposalExisting)
	require.Equal(t, "https://git.example.com/acme/infra.git", got.Git.URL)
	require.Equal(t, "net", got.Git.Path)
	require.Equal(t, "/tok", got.Git.CredentialsFile)
	require.Equal(t, "/cache", got.CacheDir)
	require.Equal(t, "c0ffee", got.Commit)
	require.Equal(t, "dw/accept", got.BranchPrefix)
	require.Equal(t, []string{"drift"}, got.Labels)
	require.Equal(t, "bot@x.io", got.Author.Email)
	require.Equal(t, "https://dw.example.com/workspaces/net", got.Link)

	noPropose := func(context.Context, propose.Request) (propose.Proposal, error) {
		t.Fatal("nothing is proposed")
		return propose.Proposal{}, nil
	}
	// Without a proposer, or for a local path: proven, the patch is the answer.
	a = acceptance.Do(t.Context(), acceptance.Input{Request: gitRequest()}, acceptance.Steps{Accept: proven, Propose: noPropose})
	require.Equal(t, store.AcceptProven, a.State)
	local := in
	local.Request.Source = terraform.Source{Path: "/src"}
	a = acceptance.Do(t.Context(), local, acceptance.Steps{Accept: proven, Propose: noPropose})
	require.Equal(t, store.AcceptProven, a.State)

	// Not proven: the remaining difference, nothing proposed.
	a = acceptance.Do(t.Context(), in, acceptance.Steps{Propose: noPropose, Accept: func(context.Context, terraform.Request, engine.AcceptScope) (engine.AcceptOutcome, error) {
		return engine.AcceptOutcome{Change: change(), Remaining: []string{"x.a: still update"}}, nil
	}})
	require.Equal(t, store.AcceptNotProven, a.State)
	require.Equal(t, []string{"x.a: still update"}, a.Remaining)

	// Everything refused.
	a = acceptance.Do(t.Context(), in, acceptance.Steps{Propose: noPropose, Accept: func(context.Context, terraform.Request, engine.AcceptScope) (engine.AcceptOutcome, error) {
		c := change()
		c.Accepted, c.Files = nil, nil
		return engine.AcceptOutcome{Change: c}, nil
	}})
	require.Equal(t, store.AcceptRefused, a.State)
	require.Empty(t, a.Patch)

	// A step's error.
	a = acceptance.Do(t.Context(), in, acceptance.Steps{Propose: noPropose, Accept: func(context.Context, terraform.Request, engine.AcceptScope) (engine.AcceptOutcome, error) {
		return engine.AcceptOutcome{}, errors.New("plan: no such provider")
	}})
	require.Equal(t, store.AcceptFailed, a.State)
	require.Equal(t, "plan: no such provider", a.Error)

	// Proven, but the proposal failed: the patch stays for by hand.
	a = acceptance.Do(t.Context(), in, acceptance.Steps{Accept: proven, Propose: func(context.Context, propose.Request) (propose.Proposal, error) {
		return propose.Proposal{}, errors.New("github gh: open pull request: token lacks pull-request write")
	}})
	require.Equal(t, store.AcceptFailed, a.State)
	require.Equal(t, "proven, but not proposed: github gh: open pull request: token lacks pull-request write (the patch is the change; apply it by hand)", a.Error)
	require.NotEmpty(t, a.Patch)
}

func openStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), path, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// The service records a request at once, runs it in the background and
// records its outcome; one at a time per workspace; unknown workspaces
// and a daemon that runs none are refused; what a stopped daemon left
// running is failed at the next start.
func TestService(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	st := openStore(t, path)
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []terraform.Request
	var scopes []engine.AcceptScope
	steps := acceptance.Steps{Accept: func(_ context.Context, req terraform.Request, scope engine.AcceptScope) (engine.AcceptOutcome, error) {
		mu.Lock()
		seen, scopes = append(seen, req), append(scopes, scope)
		mu.Unlock()
		<-release
		return engine.AcceptOutcome{Tool: "terraform 1.11.4", Change: change(), Proven: true}, nil
	}}
	cfg := &config.Config{}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	opts := acceptance.Options{Store: st, Config: func() *config.Config { return cfg }, Logger: slog.New(slog.DiscardHandler), Steps: steps,
		Now: func() time.Time { return now },
		Target: func(ws string) (terraform.Request, bool) {
			return terraform.Request{Workspace: ws}, ws == "net" || ws == "db"
		}}
	s, err := acceptance.New(t.Context(), opts)
	require.NoError(t, err)

	a, err := s.StartAccept("net", []string{"x.a"}, true, "olga")
	require.NoError(t, err)
	require.Equal(t, store.AcceptRunning, a.State)
	stored, err := s.Acceptance(t.Context(), a.ID)
	require.NoError(t, err)
	require.Equal(t, store.AcceptRunning, stored.State, "recorded before it runs")
	require.Equal(t, "olga", stored.RequestedBy)
	require.True(t, stored.Deletions, "deletions asked for are recorded")

	_, err = s.StartAccept("net", nil, false, "pat")
	var busy *acceptance.BusyError
	require.ErrorAs(t, err, &busy)
	require.Equal(t, a.ID, busy.ID)
	require.ErrorIs(t, err, refusal.ErrBusy)
	b, err := s.StartAccept("db", nil, false, "pat")
	require.NoError(t, err, "another workspace runs alongside")
	_, err = s.StartAccept("nope", nil, false, "pat")
	require.ErrorIs(t, err, refusal.ErrUnknownWorkspace)

	close(release)
	s.Wait()
	for _, id := range []string{a.ID, b.ID} {
		got, err := s.Acceptance(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, store.AcceptProven, got.State, "no accept.notifier: a diff")
		require.True(t, got.FinishedAt.Equal(now))
	}
	// net's and db's run side by side: either may have reached Accept first.
	i := slices.IndexFunc(seen, func(r terraform.Request) bool { return r.Workspace == "net" })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, a.ID, seen[i].RunID, "the run directory and log are the acceptance's")
	require.Contains(t, scopes, engine.AcceptScope{Addresses: []string{"x.a"}, Deletions: true})
	require.Contains(t, scopes, engine.AcceptScope{})
	list, err := s.Acceptances(t.Context(), "net", 0)
	require.NoError(t, err)
	require.Len(t, list, 1)

	// A notifier that is not there fails the acceptance, naming it.
	cfg = &config.Config{Accept: config.Accept{Notifier: "gh"}}
	release = make(chan struct{})
	close(release)
	c, err := s.StartAccept("net", nil, false, "olga")
	require.NoError(t, err)
	s.Wait()
	got, err := s.Acceptance(t.Context(), c.ID)
	require.NoError(t, err)
	require.Equal(t, store.AcceptFailed, got.State)
	require.Contains(t, got.Error, `accept.notifier: accept.notifier "gh" opens no pull or merge requests`)

	// The kubernetes runner runs none.
	opts.Unavailable = "not here"
	u, err := acceptance.New(t.Context(), opts)
	require.NoError(t, err)
	_, err = u.StartAccept("net", nil, false, "olga")
	require.ErrorIs(t, err, refusal.ErrUnavailable)
	require.EqualError(t, err, "not here")
}

// An acceptance running when the daemon stops is failed as interrupted,
// at the latest when the next daemon starts.
func TestServiceRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	st := openStore(t, path)
	require.NoError(t, st.AddAcceptance(t.Context(), store.Acceptance{ID: "left", Workspace: "net", State: store.AcceptRunning, CreatedAt: time.Now()}))
	require.NoError(t, st.Close())
	st = openStore(t, path)
	s, err := acceptance.New(t.Context(), acceptance.Options{Store: st, Config: func() *config.Config { return &config.Config{} },
		Logger: slog.New(slog.DiscardHandler), Target: func(string) (terraform.Request, bool) { return terraform.Request{}, false }})
	require.NoError(t, err)
	got, err := s.Acceptance(t.Context(), "left")
	require.NoError(t, err)
	require.Equal(t, store.AcceptFailed, got.State)
	require.Equal(t, store.AcceptInterrupted, got.Error)

	// One cancelled with the daemon's context is recorded as interrupted.
	ctx, cancel := context.WithCancel(t.Context())
	s, err = acceptance.New(ctx, acceptance.Options{Store: st, Config: func() *config.Config { return &config.Config{} },
		Logger: slog.New(slog.DiscardHandler), Target: func(ws string) (terraform.Request, bool) { return terraform.Request{Workspace: ws}, true },
		Steps: acceptance.Steps{Accept: func(ctx context.Context, _ terraform.Request, _ engine.AcceptScope) (engine.AcceptOutcome, error) {
			<-ctx.Done()
			return engine.AcceptOutcome{}, ctx.Err()
		}}})
	require.NoError(t, err)
	a, err := s.StartAccept("net", nil, false, "olga")
	require.NoError(t, err)
	cancel()
	s.Wait()
	got, err = st.Acceptance(t.Context(), a.ID)
	require.NoError(t, err)
	require.Equal(t, store.AcceptFailed, got.State)
	require.Equal(t, store.AcceptInterrupted, got.Error)
}
