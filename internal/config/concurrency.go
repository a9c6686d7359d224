package config

import (
	"fmt"
	"time"
)

// ConcurrencyGroup caps the runs at once of the workspaces that share a
// label's value (a cloud account, a region): each value of Label is a
// group of its own, "LABEL=VALUE". When a plan of a group is throttled by
// its cloud API, the whole group backs off (internal/schedule's groups).
type ConcurrencyGroup struct {
	// Label is the workspace label whose value names the group.
	// Workspaces without the label are in no group of this entry.
	Label string `yaml:"label"`
	// MaxConcurrent is how many runs of one group run at once (default 1).
	MaxConcurrent int `yaml:"max_concurrent"`
	// Backoff is the group's hold after a throttled plan (default 1m);
	// each throttled plan in a row doubles it, up to BackoffMax (default
	// 15m). A plan that is not throttled starts it again from Backoff.
	Backoff    Duration `yaml:"backoff"`
	BackoffMax Duration `yaml:"backoff_max"`
}

// Defaults of a concurrency group.
const (
	DefaultGroupBackoff    = time.Minute
	DefaultGroupBackoffMax = 15 * time.Minute
)

// Group is one concurrency group of a workspace, its settings resolved.
type Group struct {
	// Key is "LABEL=VALUE".
	Key                 string
	Max                 int
	Backoff, BackoffMax time.Duration
}

// Groups are the concurrency groups workspace w is in, in the order of
// concurrency_groups.
func (c *Config) Groups(w Workspace) []Group {
	var out []Group
	for _, g := range c.ConcurrencyGroups {
		v, ok := w.Labels[g.Label]
		if !ok {
			continue
		}
		grp := Group{Key: g.Label + "=" + v, Max: g.MaxConcurrent,
			Backoff: time.Duration(g.Backoff), BackoffMax: time.Duration(g.BackoffMax)}
		if grp.Max == 0 {
			grp.Max = 1
		}
		if grp.Backoff == 0 {
			grp.Backoff = DefaultGroupBackoff
		}
		if grp.BackoffMax == 0 {
			grp.BackoffMax = max(DefaultGroupBackoffMax, grp.Backoff)
		}
		out = append(out, grp)
	}
	return out
}

func (c *Config) validateConcurrency(pos *positions) []error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, pos.errorf(key, format, args...)) }
	labels := map[string]bool{}
	for i, g := range c.ConcurrencyGroups {
		key := fmt.Sprintf("concurrency_groups[%d]", i)
		switch {
		case g.Label == "":
			add(key+".label", "required: the workspace label whose value names the group (such as account or region)")
		case !labelName.MatchString(g.Label):
			add(key+".label", "invalid label name %q", g.Label)
		case labels[g.Label]:
			add(key+".label", "duplicate concurrency group label %q", g.Label)
		}
		labels[g.Label] = true
		if g.MaxConcurrent < 0 {
			add(key+".max_concurrent", "must be at least 1, got %d", g.MaxConcurrent)
		}
		if g.Backoff < 0 || (g.Backoff > 0 && time.Duration(g.Backoff) < time.Second) {
			add(key+".backoff", "at least 1s, got %s", time.Duration(g.Backoff))
		}
		if g.BackoffMax != 0 && g.BackoffMax < g.Backoff {
			add(key+".backoff_max", "must not be below backoff (%s), got %s", time.Duration(g.Backoff), time.Duration(g.BackoffMax))
		}
	}
	return errs
}
