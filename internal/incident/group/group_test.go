package group

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

const aws = "registry.terraform.io/hashicorp/aws"

// fleet is twelve workspaces whose aws provider went from 5.80.0 to
// 5.81.0, each with tags_all drifting (null → object) on three or four
// resources: forty in all.
func fleet() ([]Finding, map[string][]ProviderChange) {
	var fs []Finding
	changes := map[string][]ProviderChange{}
	types := []string{"aws_s3_bucket", "aws_instance", "aws_sqs_queue", "aws_iam_role"}
	for w := range 12 {
		ws := fmt.Sprintf("ws%02d", w)
		changes[ws] = ProviderChanges(map[string]string{aws: "5.80.0", "registry.terraform.io/hashicorp/random": "3.6.0"},
			map[string]string{aws: "5.81.0", "registry.terraform.io/hashicorp/random": "3.6.0"})
		n := 3
		if w < 4 {
			n = 4
		}
		for r := range n {
			fs = append(fs, Finding{
				Workspace: ws, Address: types[r] + ".main", Type: types[r], Kind: drift.KindDrift,
				Attributes: []string{"tags_all"}, Shape: "tags_all: null → object",
				Seen: t0.Add(time.Duration(w) * time.Minute),
			})
		}
	}
	return fs, changes
}

func TestComputeProviderUpgrade(t *testing.T) {
	fs, changes := fleet()
	// ws03 also has drift of its own: it stays out of the group.
	unrelated := Finding{
		Workspace: "ws03", Address: "aws_instance.web", Type: "aws_instance", Kind: drift.KindDrift,
		Attributes: []string{"instance_type"}, Shape: "instance_type: string → string", Seen: t0,
	}
	fs = append(fs, unrelated)

	groups, rest := Compute(fs, changes, Options{Window: time.Hour})
	require.Len(t, groups, 1)
	g := groups[0]
	require.Equal(t, CauseProvider, g.Cause)
	require.Equal(t, "hashicorp/aws 5.80.0 → 5.81.0: tags_all changed on 40 resources in 12 workspaces", g.Title)
	require.Equal(t, "hashicorp/aws 5.80.0 5.81.0 tags_all tags_all: null → object", g.Key)
	require.Len(t, g.Members, 40)
	require.Equal(t, 12, g.Workspaces)
	require.Equal(t, Member{Workspace: "ws00", Address: "aws_iam_role.main"}, g.Members[0], "sorted")
	require.Equal(t, t0, g.FirstSeen)
	require.Equal(t, t0.Add(11*time.Minute), g.LastSeen)
	require.Regexp(t, `^g-[0-9a-f]{16}$`, g.ID)
	require.Equal(t, []Finding{unrelated}, rest)

	// Six fixed: the same group, six members fewer.
	fixed := 0
	remaining := slices.DeleteFunc(slices.Clone(fs), func(f Finding) bool {
		if f.Type == "aws_s3_bucket" && fixed < 6 {
			fixed++
			return true
		}
		return false
	})
	again, _ := Compute(remaining, changes, Options{Window: time.Hour})
	require.Len(t, again, 1)
	require.Equal(t, g.ID, again[0].ID)
	require.Len(t, again[0].Members, 34)
	require.Equal(t, "hashicorp/aws 5.80.0 → 5.81.0: tags_all changed on 34 resources in 12 workspaces", again[0].Title)

	// The order of the input changes nothing.
	reversed := slices.Clone(fs)
	slices.Reverse(reversed)
	same, _ := Compute(reversed, changes, Options{Window: time.Hour})
	require.Equal(t, groups, same)

	// Without the provider change, the same drift groups by shape, one
	// group per type.
	byShape, rest := Compute(fs, nil, Options{Window: time.Hour})
	require.Len(t, byShape, 4)
	var titles []string
	for _, g := range byShape {
		require.Equal(t, CauseShape, g.Cause)
		require.NotEqual(t, g.ID, groups[0].ID)
		titles = append(titles, g.Title)
	}
	require.ElementsMatch(t, []string{
		"aws_s3_bucket: tags_all changed on 12 resources in 12 workspaces",
		"aws_instance: tags_all changed on 12 resources in 12 workspaces",
		"aws_sqs_queue: tags_all changed on 12 resources in 12 workspaces",
		"aws_iam_role: tags_all changed on 4 resources in 4 workspaces",
	}, titles)
	require.Equal(t, []Finding{unrelated}, rest)
}

func TestCompute(t *testing.T) {
	drifted := func(ws, addr, typ string, attrs []string, shape string, seen time.Duration) Finding {
		return Finding{Workspace: ws, Address: addr, Type: typ, Kind: drift.KindDrift, Attributes: attrs, Shape: shape, Seen: t0.Add(seen)}
	}
	pending := func(ws, addr, commit string) Finding {
		return Finding{Workspace: ws, Address: addr, Type: "aws_s3_bucket", Kind: drift.KindPending, Commit: commit, Seen: t0}
	}
	versioning := []string{"versioning.0.enabled"}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name       string
		findings   []Finding
		changes    map[string][]ProviderChange
		opts       Options
		wantTitles []string
		wantRest   []string // workspace/address
	}{
		{
			name: "shape within the window",
			findings: []Finding{
				drifted("a", "aws_s3_bucket.x", "aws_s3_bucket", versioning, "bool → bool", 0),
				drifted("b", "aws_s3_bucket.y", "aws_s3_bucket", versioning, "bool → bool", 30*time.Minute),
				drifted("c", "aws_s3_bucket.z", "aws_s3_bucket", versioning, "bool → bool", 3*time.Hour),
				drifted("d", "aws_s3_bucket.w", "aws_s3_bucket", versioning, "bool → bool", 2*time.Hour+30*time.Minute),
			},
			opts:       Options{Window: time.Hour},
			wantTitles: []string{"aws_s3_bucket: versioning.0.enabled changed on 2 resources in 2 workspaces"},
			wantRest:   []string{"a/aws_s3_bucket.x", "b/aws_s3_bucket.y"},
		},
		{
			name: "no window: all of them",
			findings: []Finding{
				drifted("a", "aws_s3_bucket.x", "aws_s3_bucket", versioning, "bool → bool", 0),
				drifted("c", "aws_s3_bucket.z", "aws_s3_bucket", versioning, "bool → bool", 30*24*time.Hour),
			},
			wantTitles: []string{"aws_s3_bucket: versioning.0.enabled changed on 2 resources in 2 workspaces"},
		},
		{
			name: "a different shape or attribute set is another cause",
			findings: []Finding{
				drifted("a", "aws_s3_bucket.x", "aws_s3_bucket", versioning, "bool → bool", 0),
				drifted("b", "aws_s3_bucket.y", "aws_s3_bucket", versioning, "null → bool", 0),
				drifted("c", "aws_s3_bucket.z", "aws_s3_bucket", []string{"versioning.0.enabled", "acl"}, "bool → bool", 0),
			},
			wantRest: []string{"a/aws_s3_bucket.x", "b/aws_s3_bucket.y", "c/aws_s3_bucket.z"},
		},
		{
			name: "one workspace is not a fleet",
			findings: []Finding{
				drifted("a", "aws_s3_bucket.x", "aws_s3_bucket", versioning, "bool → bool", 0),
				drifted("a", "aws_s3_bucket.y", "aws_s3_bucket", versioning, "bool → bool", 0),
			},
			wantRest: []string{"a/aws_s3_bucket.x", "a/aws_s3_bucket.y"},
		},
		{
			name: "unless the minimum says so",
			findings: []Finding{
				drifted("a", "aws_s3_bucket.x", "aws_s3_bucket", versioning, "bool → bool", 0),
				drifted("a", "aws_s3_bucket.y", "aws_s3_bucket", versioning, "bool → bool", 0),
			},
			opts:       Options{MinWorkspaces: 1},
			wantTitles: []string{"aws_s3_bucket: versioning.0.enabled changed on 2 resources in 1 workspace"},
		},
		{
			name: "minimum members",
			findings: []Finding{
				drifted("a", "aws_s3_bucket.x", "aws_s3_bucket", versioning, "bool → bool", 0),
				drifted("b", "aws_s3_bucket.y", "aws_s3_bucket", versioning, "bool → bool", 0),
			},
			opts:     Options{MinMembers: 3},
			wantRest: []string{"a/aws_s3_bucket.x", "b/aws_s3_bucket.y"},
		},
		{
			name: "pending changes of one commit",
			findings: []Finding{
				pending("a", "aws_s3_bucket.x", sha),
				pending("b", "aws_s3_bucket.x", sha),
				pending("b", "aws_s3_bucket.y", ""),
				drifted("c", "aws_s3_bucket.x", "aws_s3_bucket", versioning, "bool → bool", 0), // drift is not a commit's
			},
			wantTitles: []string{"commit 0123456789ab: pending changes on 2 resources in 2 workspaces"},
			wantRest:   []string{"b/aws_s3_bucket.y", "c/aws_s3_bucket.x"},
		},
		{
			name: "provider change first, the rest by shape",
			findings: []Finding{
				drifted("a", "google_storage_bucket.x", "google_storage_bucket", []string{"labels"}, "empty object → object", 0),
				drifted("b", "google_storage_bucket.x", "google_storage_bucket", []string{"labels"}, "empty object → object", 0),
				drifted("c", "google_storage_bucket.x", "google_storage_bucket", []string{"labels"}, "empty object → object", 0),
			},
			changes: map[string][]ProviderChange{
				"a": {{Provider: "registry.opentofu.org/hashicorp/google", From: "6.0.0", To: "6.1.0"}},
				"b": {{Provider: "registry.terraform.io/hashicorp/google", From: "6.0.0", To: "6.1.0"}},
				"c": {{Provider: "registry.terraform.io/hashicorp/google", From: "5.9.0", To: "6.1.0"}},
			},
			wantTitles: []string{"hashicorp/google 6.0.0 → 6.1.0: labels changed on 2 resources in 2 workspaces"},
			wantRest:   []string{"c/google_storage_bucket.x"},
		},
		{
			name: "a finding's own provider",
			findings: []Finding{
				{Workspace: "a", Address: "x_thing.x", Type: "x_thing", Provider: "registry.terraform.io/acme/x", Kind: drift.KindDrift, Attributes: []string{"n"}},
				{Workspace: "b", Address: "x_thing.x", Type: "x_thing", Provider: "registry.terraform.io/acme/x", Kind: drift.KindDrift, Attributes: []string{"n"}},
			},
			changes: map[string][]ProviderChange{
				"a": {{Provider: "registry.terraform.io/acme/x", From: "1.0.0", To: "2.0.0"}},
				"b": {{Provider: "registry.terraform.io/acme/x", From: "1.0.0", To: "2.0.0"}},
			},
			wantTitles: []string{"acme/x 1.0.0 → 2.0.0: n changed on 2 resources in 2 workspaces"},
		},
		{
			name: "many attributes",
			findings: []Finding{
				drifted("a", "aws_instance.x", "aws_instance", []string{"e", "d", "c", "b", "a"}, "", 0),
				drifted("b", "aws_instance.x", "aws_instance", []string{"a", "b", "c", "d", "e"}, "", 0),
			},
			wantTitles: []string{"aws_instance: a, b, c and 2 more changed on 2 resources in 2 workspaces"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups, rest := Compute(tt.findings, tt.changes, tt.opts)
			var titles []string
			for _, g := range groups {
				titles = append(titles, g.Title)
			}
			require.Equal(t, tt.wantTitles, titles)
			var restNames []string
			for _, f := range rest {
				restNames = append(restNames, f.Workspace+"/"+f.Address)
			}
			require.Equal(t, tt.wantRest, restNames)
		})
	}
}

func TestProviderChanges(t *testing.T) {
	require.Equal(t, []ProviderChange{
		{Provider: "a", From: "1", To: "2"},
		{Provider: "c", From: "2", To: "1"},
	}, ProviderChanges(
		map[string]string{"a": "1", "b": "1", "c": "2", "gone": "1"},
		map[string]string{"a": "2", "b": "1", "c": "1", "new": "1"},
	))
	require.Empty(t, ProviderChanges(nil, map[string]string{"a": "1"}))
}

func TestCandidates(t *testing.T) {
	at := t0.Add(time.Hour)
	fs := []drift.Finding{
		{Kind: drift.KindDrift, Address: "a.x", Type: "a", Attributes: []string{"tags"}, Window: &drift.Window{From: t0, To: t0.Add(time.Minute)}},
		{Kind: drift.KindDrift, Address: "a.y", Type: "a", Attributes: []string{"tags"}},
		{Kind: drift.KindDrift, Address: "a.z", Type: "a", Ignored: true},
		{Kind: drift.KindPending, Address: "a.p", Type: "a", Commit: &drift.Commit{Hash: "abc123"}},
		{Kind: drift.KindNoise, Address: "a.n", Type: "a"},
		{Kind: drift.KindForbidden, Address: "kubernetes_namespace.x", Type: "kubernetes_namespace"},
	}
	require.Equal(t, []Finding{
		{Workspace: "net", Address: "a.x", Type: "a", Kind: drift.KindDrift, Attributes: []string{"tags"}, Seen: t0.Add(time.Minute)},
		{Workspace: "net", Address: "a.y", Type: "a", Kind: drift.KindDrift, Attributes: []string{"tags"}, Seen: at},
		{Workspace: "net", Address: "a.p", Type: "a", Kind: drift.KindPending, Commit: "abc123", Seen: at},
	}, Candidates("net", fs, at))
}

// An open group keeps its last member; a new one needs MinMembers in
// MinWorkspaces.
func TestComputeOpenGroupKeepsItsLastMember(t *testing.T) {
	one := []Finding{{Workspace: "a", Address: "t_x.a", Type: "t_x", Kind: drift.KindDrift, Attributes: []string{"v"}, Seen: t0}}
	groups, rest := Compute(one, nil, Options{})
	require.Empty(t, groups)
	require.Equal(t, one, rest)

	two := append(slices.Clone(one), Finding{Workspace: "b", Address: "t_x.b", Type: "t_x", Kind: drift.KindDrift, Attributes: []string{"v"}, Seen: t0})
	groups, _ = Compute(two, nil, Options{})
	require.Len(t, groups, 1)
	require.Equal(t, "t_x: v changed", groups[0].Subject)
	require.Equal(t, "t_x: v changed on 2 resources in 2 workspaces", groups[0].Title)

	kept, rest := Compute(one, nil, Options{Open: map[string]bool{groups[0].ID: true}})
	require.Empty(t, rest)
	require.Len(t, kept, 1)
	require.Equal(t, groups[0].ID, kept[0].ID)
	require.Equal(t, "t_x: v changed on 1 resource in 1 workspace", kept[0].Title)
}

func TestGroupable(t *testing.T) {
	require.True(t, Groupable(Finding{Kind: drift.KindDrift, Type: "t_x", Attributes: []string{"v"}}))
	require.False(t, Groupable(Finding{Kind: drift.KindDrift, Type: "t_x"}), "a deleted resource has no attributes")
	require.True(t, Groupable(Finding{Kind: drift.KindPending, Commit: "abc"}))
	require.False(t, Groupable(Finding{Kind: drift.KindPending}))
}
