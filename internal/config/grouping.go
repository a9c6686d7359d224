package config

import "time"

// Grouping defaults.
const (
	DefaultGroupingWindow     = Duration(time.Hour)
	DefaultGroupingWait       = Duration(5 * time.Minute)
	DefaultGroupingMinMembers = 2
)

// Grouping is the daemon-wide `grouping:` block: drift of several
// workspaces that shares one cause (the same provider upgrade, the same
// commit, the same resource type and attributes changing the same way)
// is one group incident and one page per route, not one per workspace.
type Grouping struct {
	// Enabled turns grouping on (default off: every workspace alerts on
	// its own).
	Enabled bool `yaml:"enabled"`
	// Window is how far apart the first sightings of a shape group's
	// members may be (default 1h).
	Window Duration `yaml:"window"`
	// Wait is how long a drift finding that could join a group waits,
	// from the check that first saw it, before it opens its workspace's
	// own incident: time for the rest of the fleet to be checked
	// (default 5m; 0s: never waits, and a group forms only from findings
	// not yet alerted on).
	Wait *WaitDuration `yaml:"wait"`
	// MinMembers is the least findings a new group holds (default 2);
	// an open group stays open down to its last member.
	MinMembers int `yaml:"min_members"`
}

// GroupingPolicy is the grouping block with its defaults.
type GroupingPolicy struct {
	Enabled      bool
	Window, Wait time.Duration
	MinMembers   int
}

// EffectiveGrouping is c's grouping block with the defaults filled in.
func (c *Config) EffectiveGrouping() GroupingPolicy {
	g := c.Grouping
	p := GroupingPolicy{Enabled: g.Enabled, Window: time.Duration(g.Window), Wait: time.Duration(DefaultGroupingWait), MinMembers: g.MinMembers}
	if p.Window == 0 {
		p.Window = time.Duration(DefaultGroupingWindow)
	}
	if g.Wait != nil {
		p.Wait = time.Duration(*g.Wait)
	}
	if p.MinMembers == 0 {
		p.MinMembers = DefaultGroupingMinMembers
	}
	return p
}

func (c *Config) validateGrouping(pos *positions) []error {
	g := c.Grouping
	var errs []error
	if g.Window < 0 {
		errs = append(errs, pos.errorf("grouping.window", "must not be negative"))
	}
	if g.Wait != nil && *g.Wait < 0 {
		errs = append(errs, pos.errorf("grouping.wait", "must not be negative"))
	}
	if g.MinMembers < 0 || g.MinMembers == 1 {
		errs = append(errs, pos.errorf("grouping.min_members", "must be 2 or more (a group of one is a workspace's own incident)"))
	}
	return errs
}
