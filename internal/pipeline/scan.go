package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/drift/unmanaged"
	"github.com/driftwatch/driftwatch/internal/policy"
)

// Scan is a scans: entry's own part of a target: its ignore rules.
type Scan struct {
	Ignore []unmanaged.Rule
}

func scanOf(sc *config.Scan) (*Scan, error) {
	s := &Scan{}
	for i, r := range sc.Ignore {
		var rule unmanaged.Rule
		for _, m := range []struct {
			glob string
			to   *func(string) bool
		}{{r.Type, &rule.Type}, {r.Identity, &rule.Identity}} {
			if m.glob == "" {
				continue
			}
			g, err := policy.CompileGlob(m.glob)
			if err != nil {
				return nil, fmt.Errorf("ignore[%d]: %w", i, err)
			}
			*m.to = g.Match
		}
		s.Ignore = append(s.Ignore, rule)
	}
	return s, nil
}

// Fleet is what scans compare with: every workspace's managed instances
// as its last check saw them, and the workspaces whose are unknown (never
// checked successfully, or checked by a driftwatch that did not record
// them).
type Fleet interface {
	Managed(ctx context.Context) (known []unmanaged.Workspace, unknown []string, err error)
}

// FleetFunc adapts a function to Fleet.
type FleetFunc func(ctx context.Context) ([]unmanaged.Workspace, []string, error)

// Managed implements Fleet.
func (f FleetFunc) Managed(ctx context.Context) ([]unmanaged.Workspace, []string, error) {
	return f(ctx)
}

// batchFleet is the fleet of one RunAll: its workspaces' results. An
// errored workspace's state is unknown.
func batchFleet(targets []Target, results []drift.Result) Fleet {
	var known []unmanaged.Workspace
	var unknown []string
	for i, t := range targets {
		switch r := results[i]; {
		case t.Scan != nil:
		case r.Status == drift.StatusErrored:
			unknown = append(unknown, t.Name)
		default:
			known = append(known, unmanaged.Workspace{Name: t.Name, Managed: r.Managed})
		}
	}
	return FleetFunc(func(context.Context) ([]unmanaged.Workspace, []string, error) { return known, unknown, nil })
}

// maxUnknownNamed bounds the workspaces an errored scan names.
const maxUnknownNamed = 5

// scanned completes a scan's result: what it listed compared with the
// fleet. A fleet with a workspace whose state is unknown makes the scan
// errored rather than call that workspace's resources unmanaged.
func (a *Auditor) scanned(ctx context.Context, log *slog.Logger, t Target, listed []drift.Listed, res *drift.Result, now func() time.Time) {
	start := now()
	fail := func(reason string) {
		res.Status, res.Error = drift.StatusErrored, reason
		log.Warn("scan errored", "err", reason)
	}
	if a.Fleet == nil {
		fail("scan: no workspace states to compare with")
		return
	}
	known, unknown, err := a.Fleet.Managed(ctx)
	switch {
	case err != nil:
		fail("scan: workspace states: " + err.Error())
		return
	case len(unknown) > 0:
		named := unknown[:min(len(unknown), maxUnknownNamed)]
		more := ""
		if n := len(unknown) - len(named); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		fail(fmt.Sprintf("scan: the state of %d workspace(s) is not known yet (%s%s): what they manage cannot be told from what nothing manages",
			len(unknown), strings.Join(named, ", "), more))
		return
	}
	res.Findings = unmanaged.Compare(listed, known, t.Scan.Ignore)
	res.Phases = append(res.Phases, drift.Phase{Name: "compare", Duration: now().Sub(start)})
	res.Status = drift.StatusOf(res.Findings)
	c := drift.CountFindings(res.Findings)
	log.Info("scan finished", "status", res.Status, "listed", len(listed), "unmanaged", c.Unmanaged,
		"managed_twice", c.ManagedTwice, "workspaces", len(known), "duration", res.Duration)
}
