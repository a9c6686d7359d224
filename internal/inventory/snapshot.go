package inventory

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/silence"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Snapshot is one generation of the inventory: a config and what was
// built from it, published together (Watcher.Snapshot), so that a reader
// never pairs one config's targets with another's alert plans.
type Snapshot struct {
	Config *config.Config
	// Targets are the configured workspaces' run targets, by name.
	Targets map[string]pipeline.Target
	// Plans are their alert plans (incident policy and notifier
	// targets), by name.
	Plans map[string]incident.Plan
}

// Build makes the snapshot of cfg: its run targets (pipeline.Targets,
// which reads every secret file: once per load), owned by owner and
// confined as terraform.sandbox says, and its alert plans, whose Held asks
// holds.
func Build(cfg *config.Config, owner string, holds *silence.Book) (*Snapshot, error) {
	// The probe is cached: an error was already reported at start-up.
	iso, _ := sandbox.DetectIsolation(cfg.Terraform.Sandbox, cfg.Terraform.SandboxNetwork)
	ts, err := pipeline.Targets(cfg, pipeline.Filter{}, pipeline.Env{Owner: owner, Jail: iso.Bwrap, JailNet: iso.Pasta})
	if err != nil {
		return nil, err
	}
	targets := make(map[string]pipeline.Target, len(ts))
	for _, t := range ts {
		targets[t.Name] = t
	}
	plans := incident.Plans(cfg)
	for _, w := range cfg.Workspaces {
		p := plans[w.Name]
		p.Held = func(at time.Time) bool {
			_, held := holds.Held(w.Name, w.Labels, at)
			return held
		}
		plans[w.Name] = p
	}
	return &Snapshot{Config: cfg, Targets: targets, Plans: plans}, nil
}

// Names are the configured workspaces' names, in config order.
func (s *Snapshot) Names() []string {
	out := make([]string, 0, len(s.Config.Workspaces))
	for _, w := range s.Config.Workspaces {
		out = append(out, w.Name)
	}
	return out
}

// Jobs are the scheduler's jobs: every workspace on its schedule, in its
// concurrency groups.
func (s *Snapshot) Jobs() []schedule.Job {
	out := make([]schedule.Job, 0, len(s.Config.Workspaces))
	for _, w := range s.Config.Workspaces {
		j := schedule.Job{Name: w.Name, Spec: w.Schedule}
		for _, g := range s.Config.Groups(w) {
			j.Groups = append(j.Groups, schedule.Group{Key: g.Key, Max: g.Max, Backoff: g.Backoff, BackoffMax: g.BackoffMax})
		}
		out = append(out, j)
	}
	return out
}
