package acceptance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// BusyError is Start's error while an acceptance of the workspace runs:
// ID names it. It matches refusal.ErrBusy.
type BusyError struct{ ID string }

func (e *BusyError) Error() string {
	return "an acceptance of this workspace is already running: " + e.ID
}

// Is makes a BusyError a refusal.ErrBusy.
func (e *BusyError) Is(target error) bool { return target == refusal.ErrBusy }

// AcceptanceID names the running acceptance (control.AcceptControl).
func (e *BusyError) AcceptanceID() string { return e.ID }

// Options configure a Service.
type Options struct {
	Store store.AcceptanceStore
	// Target is a workspace's run request as the daemon runs it locally
	// (false: not configured).
	Target func(workspace string) (terraform.Request, bool)
	// Config is the current config (the accept block, the notifiers).
	Config func() *config.Config
	Logger *slog.Logger
	// Unavailable, if set, is why this daemon runs no acceptance (the
	// kubernetes runner: Terraform runs in Jobs, not in the daemon):
	// StartAccept refuses with it (refusal.ErrUnavailable), and Adopt
	// with its own text.
	Unavailable string
	// Steps replace the real steps (tests).
	Steps Steps
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Service is the daemon's acceptances (control.AcceptControl):
// StartAccept records one and runs it in
// the background, one at a time per workspace.
type Service struct {
	o   Options
	ctx context.Context
	wg  sync.WaitGroup
	mu  sync.Mutex
	// running maps a workspace to its running acceptance's ID; adopting
	// holds the scans with an adoption running (adopt.go).
	running  map[string]string
	adopting map[string]bool
}

// New fails what a stopped daemon left running (InterruptAcceptances)
// and returns the service; ctx bounds every acceptance it runs (the
// daemon's life).
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil || o.Target == nil || o.Config == nil || o.Logger == nil {
		return nil, errors.New("acceptance: Store, Target, Config and Logger are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	n, err := o.Store.InterruptAcceptances(ctx, o.Now())
	if err != nil {
		return nil, err
	}
	if n > 0 {
		o.Logger.Warn("acceptances interrupted by a restart failed", "count", n)
	}
	return &Service{o: o, ctx: ctx, running: map[string]string{}, adopting: map[string]bool{}}, nil
}

// StartAccept records an acceptance of workspace's drift (of addresses, or all
// of it; with deletions, resources deleted outside Terraform too)
// requested by by, and runs it in the background. Its errors:
// refusal.ErrUnknownWorkspace, refusal.ErrUnavailable (Unavailable), a
// *BusyError, or the store's.
func (s *Service) StartAccept(workspace string, addresses []string, deletions bool, by string) (store.Acceptance, error) {
	req, ok := s.o.Target(workspace)
	switch {
	case !ok:
		return store.Acceptance{}, refusal.ErrUnknownWorkspace
	case s.o.Unavailable != "":
		return store.Acceptance{}, refusal.Kind(s.o.Unavailable, refusal.ErrUnavailable)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, busy := s.running[workspace]; busy {
		return store.Acceptance{}, &BusyError{ID: id}
	}
	a := store.Acceptance{ID: drift.NewRunID(), Workspace: workspace, Addresses: addresses, Deletions: deletions, RequestedBy: by,
		State: store.AcceptRunning, CreatedAt: s.o.Now()}
	if err := s.o.Store.AddAcceptance(s.ctx, a); err != nil {
		return store.Acceptance{}, err
	}
	s.running[workspace] = a.ID
	s.wg.Add(1)
	go s.run(a, req)
	return a, nil
}

func (s *Service) run(a store.Acceptance, req terraform.Request) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.running, a.Workspace)
		s.mu.Unlock()
	}()
	log := s.o.Logger.With("workspace", a.Workspace, "acceptance", a.ID)
	log.Info("accepting drift as code", "addresses", a.Addresses, "deletions", a.Deletions, "by", a.RequestedBy)
	req.RunID = a.ID // the run directory and log are the acceptance's
	var out store.Acceptance
	if p, err := ProposingFor(s.o.Config(), a.Workspace, s.o.Logger); err != nil {
		out = store.Acceptance{State: store.AcceptFailed, Error: fmt.Sprintf("accept.notifier: %v", err)}
	} else {
		out = Do(s.ctx, Input{Request: req, Addresses: a.Addresses, Deletions: a.Deletions, Proposing: p}, s.o.Steps)
	}
	out.ID, out.FinishedAt = a.ID, s.o.Now()
	if s.ctx.Err() != nil && out.State == store.AcceptFailed {
		out.Error = store.AcceptInterrupted
	}
	// The daemon's context may be done: the outcome is still written.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 10*time.Second)
	defer cancel()
	if err := s.o.Store.FinishAcceptance(ctx, out); err != nil {
		log.Error("could not record the acceptance's outcome", "err", err)
		return
	}
	log.Info("acceptance finished", "state", out.State, "accepted", len(out.Accepted), "refused", len(out.Refused),
		"proposal", out.ProposalURL, "error", out.Error)
}

// Wait waits for the acceptances and adoptions in flight (the daemon's
// stop, tests).
func (s *Service) Wait() { s.wg.Wait() }

// Acceptances lists a workspace's acceptances (all for ""), newest
// first, at most limit (0: all).
func (s *Service) Acceptances(ctx context.Context, workspace string, limit int) ([]store.Acceptance, error) {
	return s.o.Store.Acceptances(ctx, workspace, limit)
}

// Acceptance returns one; store.ErrNotFound if unknown.
func (s *Service) Acceptance(ctx context.Context, id string) (store.Acceptance, error) {
	return s.o.Store.Acceptance(ctx, id)
}
