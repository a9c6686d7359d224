package fleet

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/incident/group"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Store is what the service reads and writes: the group incidents, and a
// workspace's incidents outside a run (to open what waited in vain).
type Store interface {
	store.GroupStore
	RetireWorkspace(ctx context.Context, workspace string, at time.Time,
		decide func(incidents []store.Incident) ([]store.Incident, []store.OutboxMessage)) error
}

// Options configures a Service; every field but Now is required.
type Options struct {
	Store Store
	// Inventory is the current config and the workspaces' alert plans,
	// read together (inventory.Watcher.Snapshot).
	Inventory func() (*config.Config, map[string]incident.Plan)
	// States is a workspace's latest recorded state (run.Manager.State).
	States func(workspace string) (store.WorkspaceState, bool)
	// Wake tells the outbox that messages were enqueued.
	Wake   func()
	Logger *slog.Logger
	// Now is the clock (a test seam; nil: time.Now).
	Now func() time.Time
}

// Service groups the fleet's drift by cause (see the package doc).
type Service struct {
	o     Options
	kick  chan struct{}
	mu    sync.Mutex
	open  map[string]bool // IDs of the open group incidents, as last read
	known bool            // open has been read from the store
	last  string          // the groups last decided (signature; none yet)
	pass  time.Time       // the last pass: waits that ended since are released
}

// New makes the service; it reads nothing until it runs.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o, kick: make(chan struct{}, 1), open: map[string]bool{}, last: "\x00none"}
}

// Outcome implements run.Incidents: the workspace's alert plan's
// decision (incident.Plan.Outcome), with grouping on its drift findings
// in a group of several workspaces, or waiting for one, left out of the
// workspace's own drift incident. The fleet it groups with is every
// other workspace's latest state and this run's findings.
func (s *Service) Outcome(workspace string, now time.Time, runID string) store.Outcome {
	cfg, plans := s.o.Inventory()
	p := plans[workspace]
	g := cfg.EffectiveGrouping()
	if !g.Enabled {
		return p.Outcome(now, runID, drift.NewRunID)
	}
	if err := s.readOpen(context.Background()); err != nil {
		s.o.Logger.Error("grouping: reading the open groups failed; deciding without them", "workspace", workspace, "err", err.Error())
	}
	// The rest of the fleet is gathered here, before the store's write
	// transaction; decide, which runs inside it, adds this run's findings.
	f := s.fleet(cfg, plans, workspace)
	return func(before, after store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		f.add(workspace, after, p.Policy.IncludePending)
		groups, _ := group.Compute(f.candidates, f.changes, s.options(g))
		p.Policy.Grouped, p.Policy.Waiting = f.hold(workspace, groups, g.Wait, now)
		return p.Outcome(now, runID, drift.NewRunID)(before, after, incidents)
	}
}

// Recorded is told after a run's commit (run.Options.Recorded): it wakes
// the outbox for the workspace's own messages and has the groups decided
// again.
func (s *Service) Recorded() {
	s.o.Wake()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Delivery is an outbox that runs and drains (run.Delivery).
type Delivery interface {
	Run(ctx context.Context) error
	Drain(ctx context.Context, wait time.Duration) bool
}

// Deciding is out with the groups decided (Pass) before it drains: the
// daemon's --once, whose loops of the lead do not run.
func (s *Service) Deciding(out Delivery) Delivery { return deciding{s, out} }

type deciding struct {
	s *Service
	Delivery
}

func (d deciding) Drain(ctx context.Context, wait time.Duration) bool {
	if err := d.s.Pass(ctx); err != nil {
		d.s.o.Logger.Error("grouping: deciding the group incidents failed", "err", err.Error())
	}
	return d.Delivery.Drain(ctx, wait)
}

// tick is how often Run decides when no run finished: often enough to
// open what waited in vain soon after its wait ends.
func tick(wait time.Duration) time.Duration {
	return min(max(wait/4, time.Second), 30*time.Second)
}

// Run decides the group incidents after every recorded run and every
// tick until ctx ends. Leader only: the daemon runs it among the loops
// of the lead.
func (s *Service) Run(ctx context.Context) error {
	// Leading anew: another daemon may have decided meanwhile.
	s.mu.Lock()
	s.known, s.last = false, "\x00none"
	s.mu.Unlock()
	for {
		cfg, _ := s.o.Inventory()
		t := time.NewTimer(tick(cfg.EffectiveGrouping().Wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-s.kick:
		case <-t.C:
		}
		t.Stop()
		if err := s.Pass(ctx); err != nil && ctx.Err() == nil {
			s.o.Logger.Error("grouping: deciding the group incidents failed; trying again", "err", err.Error())
		}
	}
}

// Pass decides the group incidents once, from every workspace's latest
// state, and opens the workspace incidents of findings whose wait ended
// without a group.
func (s *Service) Pass(ctx context.Context) error {
	now := s.o.Now().UTC()
	cfg, plans := s.o.Inventory()
	g := cfg.EffectiveGrouping()
	if err := s.readOpen(ctx); err != nil {
		return err
	}
	var groups []group.Group
	f := s.fleet(cfg, plans, "")
	if g.Enabled {
		groups, _ = group.Compute(f.candidates, f.changes, s.options(g))
	}
	wrote := false
	if sig := f.signature(groups); sig != s.last {
		err := s.o.Store.DecideGroups(ctx, now, func(stored []store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage) {
			changed, out, err := incident.Groups(now, groups, incident.Fleet{Findings: f.findings, Plans: plans, Link: cfg.Server.GroupURL}, stored, drift.NewRunID)
			if err != nil {
				// Only a payload that cannot be encoded: a bug.
				panic("driftwatch/fleet: " + err.Error())
			}
			return changed, out
		})
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.last = sig
		s.open = map[string]bool{}
		for _, gr := range groups {
			s.open[gr.ID] = true
		}
		s.mu.Unlock()
		wrote = true
	}
	if g.Enabled && g.Wait > 0 {
		released, err := s.release(ctx, cfg, plans, f, groups, g.Wait, now)
		if err != nil {
			return err
		}
		wrote = wrote || released
	}
	s.pass = now
	if wrote {
		s.o.Wake()
	}
	return nil
}

// readOpen reads the open group incidents once: a restarted daemon keeps
// its open groups to their last member.
func (s *Service) readOpen(ctx context.Context) error {
	s.mu.Lock()
	known := s.known
	s.mu.Unlock()
	if known {
		return nil
	}
	open, err := s.o.Store.GroupIncidents(ctx, false)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = map[string]bool{}
	for _, in := range open {
		s.open[in.ID] = true
	}
	s.known = true
	return nil
}

// release opens, outside any run, the workspace incidents of findings
// whose wait ended since the previous pass without joining a group.
func (s *Service) release(ctx context.Context, cfg *config.Config, plans map[string]incident.Plan, f fleet, groups []group.Group, wait time.Duration, now time.Time) (bool, error) {
	var due []string
	for _, c := range f.candidates {
		end := c.Seen.Add(wait)
		if !waits(c) || end.After(now) || !end.After(s.pass) || slices.Contains(due, c.Workspace) || grouped(groups, c.Workspace, c.Address) {
			continue
		}
		due = append(due, c.Workspace)
	}
	slices.Sort(due)
	for _, ws := range due {
		st, ok := s.o.States(ws)
		p, planned := plans[ws]
		if !ok || !planned {
			continue
		}
		p.Policy.Grouped, p.Policy.Waiting = f.hold(ws, groups, wait, now)
		decide := func(incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
			return p.Outcome(now, st.LastRunID, drift.NewRunID)(st, st, incidents)
		}
		if err := s.o.Store.RetireWorkspace(ctx, ws, now, decide); err != nil {
			return len(due) > 0, err
		}
		s.o.Logger.Info("grouping: no group formed while findings waited; the workspace alerts on its own", "workspace", ws)
	}
	return len(due) > 0, nil
}

// options are group.Compute's options under g, with the open groups.
func (s *Service) options(g config.GroupingPolicy) group.Options {
	s.mu.Lock()
	defer s.mu.Unlock()
	open := make(map[string]bool, len(s.open))
	for id := range s.open {
		open[id] = true
	}
	return group.Options{Window: g.Window, MinMembers: g.MinMembers, Open: open}
}

// fleet is every configured workspace's findings as grouping sees them.
type fleet struct {
	candidates []group.Finding
	findings   map[group.Member]drift.Finding
	// changes are each workspace's provider versions that moved since
	// its last clean run.
	changes map[string][]group.ProviderChange
}

// fleet gathers the findings grouping looks at from each configured
// workspace's latest state but skip's ("": none skipped).
func (s *Service) fleet(cfg *config.Config, plans map[string]incident.Plan, skip string) fleet {
	f := fleet{findings: map[group.Member]drift.Finding{}, changes: map[string][]group.ProviderChange{}}
	for _, w := range cfg.Workspaces {
		if st, ok := s.o.States(w.Name); ok && w.Name != skip {
			f.add(w.Name, st, plans[w.Name].Policy.IncludePending)
		}
	}
	return f
}

// add adds workspace's state st to f: its provider changes and the
// findings grouping looks at (group.Candidates; pending ones only when
// pending, the workspace's drift incidents counting them).
func (f *fleet) add(workspace string, st store.WorkspaceState, pending bool) {
	if st.Status == drift.StatusErrored && len(st.Findings) == 0 {
		return
	}
	if c := group.ProviderChanges(st.CleanProviders, st.Providers); len(c) > 0 {
		f.changes[workspace] = c
	}
	for _, fd := range st.Findings {
		if fd.Kind == drift.KindPending && !pending {
			continue
		}
		for _, c := range group.Candidates(workspace, []drift.Finding{fd}, st.LastRunAt) {
			f.candidates = append(f.candidates, c)
			f.findings[group.Member{Workspace: workspace, Address: c.Address}] = fd
		}
	}
}

// hold is a workspace's Policy.Grouped and Policy.Waiting among groups:
// a finding is grouped when a group holds it, and waiting (see waits)
// until wait has passed since it was first seen.
func (f fleet) hold(workspace string, groups []group.Group, wait time.Duration, now time.Time) (isGrouped, waiting func(drift.Finding) bool) {
	seen := map[string]time.Time{}
	for _, c := range f.candidates {
		if c.Workspace == workspace && waits(c) {
			seen[c.Address] = c.Seen
		}
	}
	isGrouped = func(fd drift.Finding) bool { return grouped(groups, workspace, fd.Address) }
	waiting = func(fd drift.Finding) bool {
		at, ok := seen[fd.Address]
		return ok && wait > 0 && now.Before(at.Add(wait))
	}
	return isGrouped, waiting
}

// grouped reports whether a group holds the workspace's finding at
// address.
func grouped(groups []group.Group, workspace, address string) bool {
	m := group.Member{Workspace: workspace, Address: address}
	for _, g := range groups {
		if _, ok := slices.BinarySearchFunc(g.Members, m, compareMembers); ok {
			return true
		}
	}
	return false
}

func compareMembers(a, b group.Member) int {
	if c := strings.Compare(a.Workspace, b.Workspace); c != 0 {
		return c
	}
	return strings.Compare(a.Address, b.Address)
}

// waits reports whether c waits for a group before its workspace alerts
// on it: drift that could join one (group.Groupable). Pending changes do
// not wait: a commit's changes are checked in every workspace at once.
func waits(c group.Finding) bool {
	return c.Kind == drift.KindDrift && group.Groupable(c)
}

// signature names groups and their members' findings: a pass whose
// groups are the last decided ones writes nothing.
func (f fleet) signature(groups []group.Group) string {
	var b strings.Builder
	for _, g := range groups {
		fs := make([]drift.Finding, 0, len(g.Members))
		for _, m := range g.Members {
			fd := f.findings[m]
			fd.Address = m.Workspace + "\x00" + m.Address
			fs = append(fs, fd)
		}
		b.WriteString(g.ID + " " + drift.Fingerprint(g.ID, fs) + "\n")
	}
	return b.String()
}
