package group

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Cause is what a group's members share.
type Cause string

// Causes, in the order a finding is assigned to one: the most specific
// first.
const (
	// CauseProvider: drift of the same attributes, changing the same
	// way, in workspaces whose lock file moved the same provider from the
	// same version to the same version since their last clean run.
	CauseProvider Cause = "provider"
	// CauseCommit: pending changes last changed by the same commit.
	CauseCommit Cause = "commit"
	// CauseShape: drift of the same resource type and attribute path set,
	// changing the same way, first seen within one window.
	CauseShape Cause = "shape"
)

// Finding is one finding of one workspace, as grouping sees it.
type Finding struct {
	Workspace string
	Address   string
	Type      string
	Kind      drift.Kind // only drift and pending findings are grouped
	// Provider is the resource's provider source address
	// (registry.terraform.io/hashicorp/aws); "" means the type's prefix
	// names it (aws_s3_bucket is hashicorp/aws's).
	Provider string
	// Attributes are the changed attribute paths.
	Attributes []string
	// Shape is the change's value-free shape (drift.Finding.Shape:
	// "tags_all: null → object"); "" when unknown.
	Shape string
	// Commit is the commit behind a pending change (source.Change), ""
	// when unknown.
	Commit string
	// Seen is when the finding was first seen.
	Seen time.Time
}

// ProviderChange is one provider whose selected version changed in a
// workspace since its last clean run.
type ProviderChange struct {
	Provider string // source address, e.g. registry.terraform.io/hashicorp/aws
	From, To string
}

// Options bound what makes a group.
type Options struct {
	// Window is how far apart the first sightings of a shape group's
	// members may be (the newest member's, back); zero means no bound.
	Window time.Duration
	// MinMembers is the least findings a group holds; below 2 it is 2.
	MinMembers int
	// MinWorkspaces is the least distinct workspaces a group spans; zero
	// means 2 (one workspace is no fleet), 1 lets one workspace's own
	// findings group.
	MinWorkspaces int
	// Open are the IDs of groups whose incident is open: such a group
	// keeps its findings down to the last one, whatever MinMembers and
	// MinWorkspaces say, so that it resolves when its last member is
	// clean rather than splitting back into workspace incidents.
	Open map[string]bool
}

// Member is one grouped finding.
type Member struct {
	Workspace, Address string
}

// Group is a set of findings that share a cause.
type Group struct {
	// ID is stable: a hash of the cause and its key, the same for the
	// same cause whatever the members, so that a group's incident and its
	// page follow it as members join and leave.
	ID    string
	Cause Cause
	// Key is the cause, readable: provider, versions, attributes and
	// shape; the commit; or the type, attributes and shape.
	Key   string
	Title string
	// Subject is Title without its counts, the same through the group's
	// life: "hashicorp/aws 5.80.0 → 5.81.0: tags_all changed".
	Subject string
	// Members are sorted by workspace, then address.
	Members    []Member
	Workspaces int
	// FirstSeen and LastSeen are the earliest and latest first sighting
	// of a member.
	FirstSeen, LastSeen time.Time
}

// Compute groups findings by cause. changes holds each workspace's
// provider version changes. A finding joins at most one group: the first
// cause, in the order CauseProvider, CauseCommit, CauseShape, under which
// it makes a group of at least MinMembers findings in MinWorkspaces
// workspaces. The findings left out are returned as they came: they keep
// incidents of their own. Groups are sorted by ID.
func Compute(findings []Finding, changes map[string][]ProviderChange, opts Options) (groups []Group, rest []Finding) {
	opts.MinMembers = max(opts.MinMembers, 2)
	if opts.MinWorkspaces <= 0 {
		opts.MinWorkspaces = 2
	}
	taken := make([]bool, len(findings))
	for _, cause := range []Cause{CauseProvider, CauseCommit, CauseShape} {
		candidates := map[string][]int{} // key -> indexes into findings
		var keys []string
		for i, f := range findings {
			if taken[i] {
				continue
			}
			for _, k := range keysOf(cause, f, changes[f.Workspace]) {
				if _, ok := candidates[k]; !ok {
					keys = append(keys, k)
				}
				candidates[k] = append(candidates[k], i)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			idx := slices.DeleteFunc(candidates[k], func(i int) bool { return taken[i] })
			if cause == CauseShape {
				idx = inWindow(findings, idx, opts.Window)
			}
			g, ok := build(cause, k, findings, idx, opts)
			if !ok {
				continue
			}
			for _, i := range idx {
				taken[i] = true
			}
			groups = append(groups, g)
		}
	}
	for i, f := range findings {
		if !taken[i] {
			rest = append(rest, f)
		}
	}
	slices.SortFunc(groups, func(a, b Group) int { return strings.Compare(a.ID, b.ID) })
	return groups, rest
}

// keysOf lists the keys under which f is a candidate of cause. Keys
// separate their parts with NUL: no part can hold one.
func keysOf(cause Cause, f Finding, changes []ProviderChange) []string {
	sig := strings.Join(sorted(f.Attributes), ",") + "\x00" + f.Shape
	switch {
	case cause == CauseProvider && f.Kind == drift.KindDrift:
		var out []string
		for _, c := range changes {
			if providerOf(f) == shortProvider(c.Provider) {
				out = append(out, shortProvider(c.Provider)+"\x00"+c.From+"\x00"+c.To+"\x00"+sig)
			}
		}
		return out
	case cause == CauseCommit && f.Kind == drift.KindPending && f.Commit != "":
		return []string{f.Commit}
	case cause == CauseShape && f.Kind == drift.KindDrift && len(f.Attributes) > 0:
		return []string{f.Type + "\x00" + sig}
	}
	return nil
}

// inWindow keeps the findings first seen no earlier than window before
// the newest of them.
func inWindow(findings []Finding, idx []int, window time.Duration) []int {
	if window <= 0 || len(idx) == 0 {
		return idx
	}
	var newest time.Time
	for _, i := range idx {
		if findings[i].Seen.After(newest) {
			newest = findings[i].Seen
		}
	}
	return slices.DeleteFunc(idx, func(i int) bool { return findings[i].Seen.Before(newest.Add(-window)) })
}

// build makes the group of key from findings[idx], if it is big enough.
func build(cause Cause, key string, findings []Finding, idx []int, opts Options) (Group, bool) {
	workspaces := map[string]bool{}
	g := Group{Cause: cause, Key: strings.ReplaceAll(key, "\x00", " ")}
	for _, i := range idx {
		f := findings[i]
		workspaces[f.Workspace] = true
		g.Members = append(g.Members, Member{Workspace: f.Workspace, Address: f.Address})
		if g.FirstSeen.IsZero() || f.Seen.Before(g.FirstSeen) {
			g.FirstSeen = f.Seen
		}
		if f.Seen.After(g.LastSeen) {
			g.LastSeen = f.Seen
		}
	}
	g.Workspaces = len(workspaces)
	sum := sha256.Sum256([]byte(string(cause) + "\x00" + key))
	g.ID = "g-" + hex.EncodeToString(sum[:8])
	if !opts.Open[g.ID] && (len(g.Members) < opts.MinMembers || g.Workspaces < opts.MinWorkspaces) {
		return Group{}, false
	}
	slices.SortFunc(g.Members, func(a, b Member) int {
		if c := strings.Compare(a.Workspace, b.Workspace); c != 0 {
			return c
		}
		return strings.Compare(a.Address, b.Address)
	})
	g.Members = slices.Compact(g.Members)
	g.Subject = subject(cause, strings.Split(key, "\x00"))
	g.Title = g.Subject + " on " + plural(len(g.Members), "resource") + " in " + plural(g.Workspaces, "workspace")
	return g, true
}

// subject says the cause, e.g. "hashicorp/aws 5.80.0 → 5.81.0: tags_all
// changed"; the title adds the counts ("on 40 resources in 12
// workspaces").
func subject(cause Cause, parts []string) string {
	switch cause {
	case CauseProvider: // provider, from, to, attributes, shape
		return fmt.Sprintf("%s %s → %s: %s changed", parts[0], parts[1], parts[2], attributes(parts[3]))
	case CauseCommit: // commit
		return fmt.Sprintf("commit %s: pending changes", abbrev(parts[0]))
	default: // type, attributes, shape
		return fmt.Sprintf("%s: %s changed", parts[0], attributes(parts[1]))
	}
}

// Groupable reports whether f could join a group without a provider
// change: a drift finding with changed attributes, or a pending one
// whose commit is known.
func Groupable(f Finding) bool {
	return len(keysOf(CauseShape, f, nil)) > 0 || len(keysOf(CauseCommit, f, nil)) > 0
}

// attributes names an attribute set in a title: all of it when short.
func attributes(set string) string {
	names := strings.Split(set, ",")
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func abbrev(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// providerOf is f's provider as shortProvider gives it, else the type's
// prefix with the hashicorp namespace (aws_s3_bucket: hashicorp/aws).
func providerOf(f Finding) string {
	if f.Provider != "" {
		return shortProvider(f.Provider)
	}
	name, _, _ := strings.Cut(f.Type, "_")
	return "hashicorp/" + name
}

// shortProvider drops the registry host of a provider source address:
// registry.terraform.io/hashicorp/aws and registry.opentofu.org/hashicorp/aws
// are both hashicorp/aws.
func shortProvider(source string) string {
	parts := strings.Split(source, "/")
	if len(parts) == 3 {
		parts = parts[1:]
	}
	return strings.Join(parts, "/")
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// ProviderChanges compares a workspace's provider selections (source
// address to version, from its lock file) at its last clean run and now,
// and lists the providers whose version changed, sorted. A provider added
// or removed is not a change of version.
func ProviderChanges(before, after map[string]string) []ProviderChange {
	var out []ProviderChange
	for p, to := range after {
		if from, ok := before[p]; ok && from != to {
			out = append(out, ProviderChange{Provider: p, From: from, To: to})
		}
	}
	slices.SortFunc(out, func(a, b ProviderChange) int { return strings.Compare(a.Provider, b.Provider) })
	return out
}

// Of is workspace's finding f as grouping sees it. It was first seen at
// its window's end (the check that first saw it), or at at without a
// window (the one-shot audit). A pending finding's commit is its
// Commit's hash.
func Of(workspace string, f drift.Finding, at time.Time) Finding {
	g := Finding{Workspace: workspace, Address: f.Address, Type: f.Type, Kind: f.Kind, Provider: f.Provider, Attributes: f.Attributes, Shape: f.Shape, Seen: at}
	if f.Window != nil && !f.Window.To.IsZero() {
		g.Seen = f.Window.To
	}
	if f.Commit != nil {
		g.Commit = f.Commit.Hash
	}
	return g
}

// Candidates are the findings of fs that grouping looks at, as Of makes
// them: drift and pending ones that count (not ignored).
func Candidates(workspace string, fs []drift.Finding, at time.Time) []Finding {
	var out []Finding
	for _, f := range fs {
		if !f.Ignored && (f.Kind == drift.KindDrift || f.Kind == drift.KindPending) {
			out = append(out, Of(workspace, f, at))
		}
	}
	return out
}
