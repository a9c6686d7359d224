package silence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Silence bounds.
const (
	minDuration = time.Minute
	maxDuration = 30 * 24 * time.Hour
	// maxText bounds a silence's comment and author.
	maxText = 500
	// releaseEvery is how often Run looks for held messages whose silence
	// or window has ended (a silence Expire ends is released at once).
	releaseEvery = 15 * time.Second
)

// ErrUnknownWorkspace is Add's error for a silence naming a workspace
// the config does not have.
var ErrUnknownWorkspace = errors.New("unknown workspace")

// RequestError is a silence request Add refuses: Reason says why.
type RequestError struct{ Reason string }

func (e *RequestError) Error() string { return e.Reason }

// Request is a new silence: a workspace or labels, for how long from
// when (zero: now), why and who asks.
type Request struct {
	Workspace string
	Labels    map[string]string
	StartsAt  time.Time
	For       time.Duration
	Comment   string
	CreatedBy string
}

// Store is what the silences are kept in and held messages released
// from (store.DaemonStore's silence and outbox methods).
type Store interface {
	store.SilenceStore
	HeldWorkspaces(ctx context.Context) ([]string, error)
	ReleaseHeld(ctx context.Context, workspace string, now time.Time, collapse func([]store.OutboxMessage) *store.OutboxMessage) (int, error)
}

// Inventory is the current config: the workspaces a silence may name,
// and their labels.
type Inventory interface{ Config() *config.Config }

// Leader answers whether this daemon may write (nil), else the error the
// API answers: a standby adds and expires nothing.
type Leader interface{ Ready() error }

// Outbox is told when held messages were released.
type Outbox interface{ Wake() }

// Options configures a Service; every field is required.
type Options struct {
	Store     Store
	Book      *Book
	Inventory Inventory
	Leader    Leader
	Outbox    Outbox
	Logger    *slog.Logger
}

// Service is the daemon's silences: it checks and records new ones,
// expires them, keeps Book in step with the store, and releases held
// messages once nothing holds their workspace (Run).
type Service struct {
	o Options
	// released wakes Run (a silence ended).
	released chan struct{}
}

// New builds a Service and loads the store's silences into its Book.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil || o.Book == nil || o.Inventory == nil || o.Leader == nil || o.Outbox == nil || o.Logger == nil {
		return nil, errors.New("driftwatch/silence: Store, Book, Inventory, Leader, Outbox and Logger are required")
	}
	s := &Service{o: o, released: make(chan struct{}, 1)}
	return s, s.Load(ctx)
}

// Load replaces the Book's silences with the store's (at start, and when
// a standby becomes leader: the silences its predecessor added).
func (s *Service) Load(ctx context.Context) error {
	ss, err := s.o.Store.Silences(ctx, time.Now())
	if err != nil {
		return err
	}
	s.o.Book.SetSilences(ss)
	return nil
}

// Run sends, collapsed, the held messages of every workspace nothing
// holds any more: at once, every releaseEvery and when a silence is
// expired, until ctx is done. The daemon runs it while it leads.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(releaseEvery)
	defer t.Stop()
	for {
		s.Release(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.released:
		}
	}
}

// Release releases the held messages of the workspaces nothing holds at
// now. Errors are logged: the next pass tries again.
func (s *Service) Release(ctx context.Context, now time.Time) {
	s.o.Book.Prune(now)
	wss, err := s.o.Store.HeldWorkspaces(ctx)
	if err != nil {
		s.o.Logger.Error("held notifications: list workspaces", "err", err)
		return
	}
	labels := map[string]map[string]string{}
	for _, w := range s.o.Inventory.Config().Workspaces {
		labels[w.Name] = w.Labels
	}
	sent := 0
	for _, ws := range wss {
		if _, held := s.o.Book.Held(ws, labels[ws], now); held {
			continue
		}
		n, err := s.o.Store.ReleaseHeld(ctx, ws, now, incident.Collapse)
		if err != nil {
			s.o.Logger.Error("held notifications: release", "workspace", ws, "err", err)
			continue
		}
		s.o.Logger.Info("held notifications released", "workspace", ws, "messages", n)
		sent += n
	}
	if sent > 0 {
		s.o.Outbox.Wake()
	}
}

// List lists the silences that have not ended.
func (s *Service) List(ctx context.Context) ([]store.Silence, error) {
	return s.o.Store.Silences(ctx, time.Now())
}

// Add checks and stores a silence, and holds its workspaces'
// notifications from its start. Its errors: Leader's, a *RequestError,
// ErrUnknownWorkspace, or the store's.
func (s *Service) Add(ctx context.Context, req Request) (store.Silence, error) {
	if err := s.o.Leader.Ready(); err != nil {
		return store.Silence{}, err
	}
	now := time.Now().UTC()
	x := store.Silence{
		ID: drift.NewRunID(), Workspace: req.Workspace, Labels: req.Labels, StartsAt: req.StartsAt.UTC(),
		Comment: strings.TrimSpace(req.Comment), CreatedBy: strings.TrimSpace(req.CreatedBy), CreatedAt: now,
	}
	if x.StartsAt.IsZero() || x.StartsAt.Before(now) {
		x.StartsAt = now
	}
	x.EndsAt = x.StartsAt.Add(req.For)
	if err := check(x, req.For, now); err != nil {
		return store.Silence{}, err
	}
	if x.Workspace != "" && !slices.ContainsFunc(s.o.Inventory.Config().Workspaces, func(w config.Workspace) bool { return w.Name == x.Workspace }) {
		return store.Silence{}, ErrUnknownWorkspace
	}
	if err := s.o.Store.AddSilence(ctx, x); err != nil {
		return store.Silence{}, err
	}
	s.o.Book.Put(x)
	s.o.Logger.Info("silence added", "silence", x.ID, "workspace", x.Workspace, "labels", x.Labels, "starts_at", x.StartsAt,
		"ends_at", x.EndsAt, "created_by", x.CreatedBy)
	return x, nil
}

// check is Add's validation of x, asked for d at now.
func check(x store.Silence, d time.Duration, now time.Time) error {
	refuse := func(format string, args ...any) error {
		return &RequestError{Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case (x.Workspace == "") == (len(x.Labels) == 0):
		return refuse("name a workspace or labels (not both)")
	case d < minDuration || d > maxDuration:
		return refuse("for must be between %s and %s", minDuration, maxDuration)
	case x.Comment == "":
		return refuse("comment is required: say why, for whoever is paged next")
	case x.CreatedBy == "":
		return refuse("created_by is required")
	case len(x.Comment) > maxText || len(x.CreatedBy) > maxText:
		return refuse("comment and created_by are at most %d bytes", maxText)
	case x.StartsAt.After(now.Add(maxDuration)):
		return refuse("starts_at is more than %s ahead", maxDuration)
	}
	for _, k := range slices.Sorted(maps.Keys(x.Labels)) {
		if k == "" || x.Labels[k] == "" {
			return refuse("labels need a key and a value")
		}
	}
	return nil
}

// Expire ends a silence now and releases what it held. Its errors:
// Leader's, or the store's (store.ErrNotFound for an unknown id).
func (s *Service) Expire(ctx context.Context, id, by string) (store.Silence, error) {
	if err := s.o.Leader.Ready(); err != nil {
		return store.Silence{}, err
	}
	x, err := s.o.Store.ExpireSilence(ctx, id, time.Now().UTC())
	if err != nil {
		return store.Silence{}, err
	}
	s.o.Book.Put(x)
	s.o.Logger.Info("silence expired", "silence", x.ID, "by", by)
	select {
	case s.released <- struct{}{}:
	default:
	}
	return x, nil
}

// WindowState is a maintenance window as of a moment: whether it is on,
// and when it ends (on) or next starts (off).
type WindowState struct {
	Window
	Active          bool
	Ends, NextStart time.Time
}

// Windows reports the configured maintenance windows at now.
func (s *Service) Windows(now time.Time) []WindowState {
	ws := s.o.Book.Windows()
	out := make([]WindowState, 0, len(ws))
	for _, w := range ws {
		on, ends, next := w.At(now)
		out = append(out, WindowState{Window: w, Active: on, Ends: ends, NextStart: next})
	}
	return out
}
