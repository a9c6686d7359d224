package unmanaged

import (
	"maps"
	"slices"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Workspace is one workspace's managed instances, as its last check saw
// them.
type Workspace struct {
	Name    string
	Managed []drift.Managed
}

// Rule ignores listed resources: both matchers must match (a nil one
// matches everything). Type is asked about the resource type, Identity
// about each identity value and the display name; one match is enough.
// The caller compiles them (the pipeline: scans[].ignore globs).
type Rule struct {
	Type, Identity func(string) bool
}

func (r Rule) match(l drift.Listed) bool {
	if r.Type != nil && !r.Type(l.Type) {
		return false
	}
	if r.Identity == nil || r.Identity(l.DisplayName) {
		return true
	}
	return slices.ContainsFunc(slices.Collect(maps.Values(l.Identity)), r.Identity)
}

// Address is a listed resource's finding address: TYPE[IDENTITY], the
// identity's values sorted by name (drift.IdentityString), e.g.
// dwtest_file[filename="/srv/a"]. It is stable from scan to scan.
func Address(l drift.Listed) string {
	return l.Type + "[" + drift.IdentityString(l.Identity) + "]"
}

// Holds reports whether managed instance m is listed resource l: the same
// type and the same identity; for a state written before resource
// identities (no identity recorded), its id equals one of l's identity
// values.
func Holds(m drift.Managed, l drift.Listed) bool {
	if m.Type != l.Type {
		return false
	}
	if m.Identity != nil {
		return maps.Equal(m.Identity, l.Identity)
	}
	return m.ID != "" && slices.Contains(slices.Collect(maps.Values(l.Identity)), m.ID)
}

// Compare classifies every listed resource against the fleet's states:
// held by no workspace, an unmanaged finding; by two or more (in all, a
// workspace holding it twice counts twice), a managed_twice finding naming
// each "WORKSPACE: ADDRESS". A resource an ignore rule matches keeps its
// finding, marked Ignored. Findings are sorted by kind and address; a
// resource listed twice (two list blocks of one type) is one finding.
func Compare(listed []drift.Listed, fleet []Workspace, ignore []Rule) []drift.Finding {
	byType := map[string][]holder{}
	for _, w := range fleet {
		for _, m := range w.Managed {
			byType[m.Type] = append(byType[m.Type], holder{w.Name, m})
		}
	}
	seen := map[string]bool{}
	var out []drift.Finding
	for _, l := range listed {
		addr := Address(l)
		if seen[addr] {
			continue
		}
		seen[addr] = true
		var by []string
		for _, h := range byType[l.Type] {
			if Holds(h.m, l) {
				by = append(by, h.workspace+": "+h.m.Address)
			}
		}
		f := drift.Finding{Address: addr, Type: l.Type, Action: "none", Detail: l.DisplayName,
			Ignored: slices.ContainsFunc(ignore, func(r Rule) bool { return r.match(l) })}
		switch {
		case len(by) == 0:
			f.Kind = drift.KindUnmanaged
		case len(by) > 1:
			f.Kind = drift.KindManagedTwice
			slices.Sort(by)
			f.ManagedBy = by
		default:
			continue
		}
		out = append(out, f)
	}
	drift.SortFindings(out)
	return out
}

type holder struct {
	workspace string
	m         drift.Managed
}
