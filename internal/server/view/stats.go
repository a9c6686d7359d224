package view

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/stats"
	"github.com/driftwatch/driftwatch/internal/store"
)

// defaultSince is the trends' window when the request names none.
const defaultSince = "30d"

// ErrStatsUnsupported is the answer of a store that keeps no history the
// server can read trends from (it does not implement store.StatsReader).
var ErrStatsUnsupported = errors.New("trends are not available: this driftwatch's store cannot read run history for statistics")

// StatsFilter is what a stats request asks for, as the response echoes
// it.
type StatsFilter struct {
	// Since is the window as given ("30d", "12h").
	Since string `json:"since"`
	// Labels must all be on a workspace (AND); Owner must be its owner.
	Labels LabelList `json:"labels"`
	Owner  string    `json:"owner"`
	// MatchedWorkspaces counts the configured workspaces the labels and
	// owner select; nil without either (every workspace with history,
	// including workspaces no longer configured).
	MatchedWorkspaces *int `json:"matched_workspaces"`

	since time.Time
}

func (f StatsFilter) filtered() bool { return len(f.Labels) > 0 || f.Owner != "" }

// ParseStatsFilter reads since (Nd or Nh, default 30d), label (k=v,
// repeatable) and owner; any other parameter is an error, so that a
// misspelt filter is not silently ignored. Errors name the parameter.
func ParseStatsFilter(q url.Values, now time.Time) (StatsFilter, error) {
	var f StatsFilter
	for k, vs := range q {
		switch k {
		case "since", "owner":
			if len(vs) > 1 {
				return f, fmt.Errorf("query parameter %s: given %d times, at most once", k, len(vs))
			}
		case "label":
		default:
			return f, fmt.Errorf("unknown query parameter %q: want since, label or owner", k)
		}
	}
	f.Since = cmp.Or(q.Get("since"), defaultSince)
	since, err := stats.ParseSince(f.Since, now)
	if err != nil {
		return f, fmt.Errorf("query parameter since: %w", err)
	}
	f.since = since
	for _, kv := range q["label"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return f, fmt.Errorf("query parameter label: %q is not key=value", kv)
		}
		f.Labels = append(f.Labels, [2]string{k, v})
	}
	f.Owner = q.Get("owner")
	if _, ok := q["owner"]; ok && f.Owner == "" {
		return f, errors.New("query parameter owner: empty; leave it out for every owner")
	}
	return f, nil
}

// matches reports whether a configured workspace passes the filter.
func (f StatsFilter) matches(w control.WorkspaceInfo) bool {
	if f.Owner != "" && w.Owner != f.Owner {
		return false
	}
	for _, kv := range f.Labels {
		if v, ok := w.Labels[kv[0]]; !ok || v != kv[1] {
			return false
		}
	}
	return true
}

// Limits of the statistics (GET /api/v1/stats, the Trends page), which
// read every run of their window: at most MaxStatsConcurrent are
// computed at once (one more answers 503), and each answer is kept for
// StatsCacheTTL per filter (at most maxStatsCacheEntries filters).
const (
	MaxStatsConcurrent   = 4
	StatsCacheTTL        = time.Minute
	maxStatsCacheEntries = 256
)

// ErrStatsBusy means MaxStatsConcurrent statistics are being computed.
var ErrStatsBusy = errors.New("too many statistics are being computed: try again in a few seconds")

// statsCache bounds and caches the statistics (the limits above).
type statsCache struct {
	sem     chan struct{}
	mu      sync.Mutex
	entries map[string]statsEntry
}

type statsEntry struct {
	at      time.Time
	rep     stats.Report
	matched *int
}

func newStatsCache() *statsCache {
	return &statsCache{sem: make(chan struct{}, MaxStatsConcurrent), entries: map[string]statsEntry{}}
}

// get returns the answer kept for key, if younger than StatsCacheTTL.
func (c *statsCache) get(key string, now time.Time) (statsEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || now.Sub(e.at) >= StatsCacheTTL || now.Before(e.at) {
		return statsEntry{}, false
	}
	return e, true
}

// put keeps an answer, dropping expired ones and, when full, the oldest.
func (c *statsCache) put(key string, e statsEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, old := range c.entries {
		if e.at.Sub(old.at) >= StatsCacheTTL {
			delete(c.entries, k)
		}
	}
	for len(c.entries) >= maxStatsCacheEntries {
		oldest := ""
		for k, old := range c.entries {
			if oldest == "" || old.at.Before(c.entries[oldest].at) {
				oldest = k
			}
		}
		delete(c.entries, oldest)
	}
	c.entries[key] = e
}

// cacheKey names what a filter asks for.
func (f StatsFilter) cacheKey() string {
	var b strings.Builder
	b.WriteString(f.Since + "\x00" + f.Owner)
	for _, kv := range f.Labels {
		b.WriteString("\x00" + kv[0] + "=" + kv[1])
	}
	return b.String()
}

// Stats is the statistics of f: kept from a request of the last
// StatsCacheTTL, else computed (computeStats) unless MaxStatsConcurrent
// already are (ErrStatsBusy).
func (s *Source) Stats(ctx context.Context, f *StatsFilter) (stats.Report, error) {
	if _, ok := s.Store.(store.StatsReader); !ok {
		return stats.Report{}, ErrStatsUnsupported
	}
	key, now := f.cacheKey(), s.Now()
	if e, ok := s.stats.get(key, now); ok {
		f.MatchedWorkspaces = e.matched
		return e.rep, nil
	}
	select {
	case s.stats.sem <- struct{}{}:
		defer func() { <-s.stats.sem }()
	default:
		return stats.Report{}, ErrStatsBusy
	}
	rep, err := s.computeStats(ctx, f)
	if err == nil {
		s.stats.put(key, statsEntry{at: now, rep: rep, matched: f.MatchedWorkspaces})
	}
	return rep, err
}

// computeStats reads the filter's window from the store into a Report.
// With labels or an owner it reads only the configured workspaces that
// match (none: an empty report, every day present). The configured scans
// count apart (stats.Run.Scan); a scan no longer configured counts as a
// workspace.
func (s *Source) computeStats(ctx context.Context, f *StatsFilter) (stats.Report, error) {
	reader, ok := s.Store.(store.StatsReader)
	if !ok {
		return stats.Report{}, ErrStatsUnsupported
	}
	acc, err := stats.NewAccumulator(f.since, s.Now())
	if err != nil {
		return stats.Report{}, fmt.Errorf("stats: %w", err)
	}
	var names []string
	configured := s.Control.Workspaces()
	scans := map[string]bool{}
	for _, w := range configured {
		if w.Scan {
			scans[w.Name] = true
		}
	}
	if f.filtered() {
		for _, w := range configured {
			if f.matches(w) {
				names = append(names, w.Name)
			}
		}
		n := len(names)
		f.MatchedWorkspaces = &n
		if n == 0 {
			return acc.Report(nil), nil
		}
	}
	err = reader.StatsRuns(ctx, store.StatsQuery{Since: f.since, Workspaces: names}, func(r store.StatsRun) error {
		return acc.Add(stats.Run{ID: r.ID, Workspace: r.Workspace, Started: r.StartedAt, Finished: r.FinishedAt, Status: r.Status,
			Before: r.Before, Scan: scans[r.Workspace]})
	})
	if err != nil {
		return stats.Report{}, fmt.Errorf("stats: %w", err)
	}
	if err := s.addGroups(ctx, acc, names, f.filtered()); err != nil {
		return stats.Report{}, fmt.Errorf("stats: %w", err)
	}
	counts, err := reader.DriftedTypes(ctx, acc.DriftRuns())
	if err != nil {
		return stats.Report{}, fmt.Errorf("stats: %w", err)
	}
	types := make([]stats.TypeCount, 0, len(counts))
	for _, c := range counts {
		types = append(types, stats.TypeCount{Type: c.Type, WorkspaceDays: c.Runs, Workspaces: c.Workspaces})
	}
	if err := addScanFound(ctx, reader, acc); err != nil {
		return stats.Report{}, fmt.Errorf("stats: %w", err)
	}
	return acc.Report(types), nil
}

// addScanFound reads what the scans' runs found (acc.ScanRuns) into acc.
func addScanFound(ctx context.Context, reader store.StatsReader, acc *stats.Accumulator) error {
	ids := acc.ScanRuns()
	if len(ids) == 0 {
		return nil
	}
	counts, err := reader.ScanFound(ctx, ids)
	if err != nil {
		return err
	}
	found := make([]stats.RunFound, 0, len(counts))
	for _, c := range counts {
		found = append(found, stats.RunFound{RunID: c.RunID, Found: stats.Found{Unmanaged: c.Unmanaged, ManagedTwice: c.ManagedTwice}})
	}
	unmanaged, err := reader.UnmanagedTypes(ctx, ids)
	if err != nil {
		return err
	}
	types := make([]stats.ScanTypeCount, 0, len(unmanaged))
	for _, c := range unmanaged {
		types = append(types, stats.ScanTypeCount{Type: c.Type, ScanDays: c.Runs, Scans: c.Workspaces})
	}
	acc.AddScanFound(found, types)
	return nil
}

// addGroups counts the group incidents opened in the window: with a
// filter, those holding a finding of one of the workspaces it selects.
func (s *Source) addGroups(ctx context.Context, acc *stats.Accumulator, names []string, filtered bool) error {
	gs, err := s.GroupIncidents(ctx, true)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if !filtered || GroupHolds(g, names) {
			acc.AddGroupOpened(g.OpenedAt)
		}
	}
	return nil
}
