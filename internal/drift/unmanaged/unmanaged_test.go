package unmanaged

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

func listed(path string) drift.Listed {
	return drift.Listed{Type: "dwtest_file", DisplayName: path, Identity: map[string]string{"filename": path}}
}

func TestCompare(t *testing.T) {
	fleet := []Workspace{
		{Name: "a", Managed: []drift.Managed{
			{Address: "dwtest_file.one", Type: "dwtest_file", ID: "/d/one", Identity: map[string]string{"filename": "/d/one"}},
			{Address: "dwtest_file.shared", Type: "dwtest_file", ID: "/d/shared", Identity: map[string]string{"filename": "/d/shared"}},
		}},
		// A state written before resource identities: its id stands in.
		{Name: "b", Managed: []drift.Managed{{Address: "module.m.dwtest_file.s", Type: "dwtest_file", ID: "/d/shared"}}},
		// Same identity, another type: not the same resource.
		{Name: "c", Managed: []drift.Managed{{Address: "other_file.x", Type: "other_file", Identity: map[string]string{"filename": "/d/hand"}}}},
	}
	ignoreTmp := Rule{Type: prefix("dwtest_"), Identity: prefix("/d/tmp-")}
	got := Compare([]drift.Listed{listed("/d/one"), listed("/d/shared"), listed("/d/hand"), listed("/d/tmp-1"), listed("/d/hand")}, fleet, []Rule{ignoreTmp})
	require.Equal(t, []drift.Finding{
		{Kind: drift.KindManagedTwice, Address: `dwtest_file[filename="/d/shared"]`, Type: "dwtest_file", Action: "none", Detail: "/d/shared",
			ManagedBy: []string{"a: dwtest_file.shared", "b: module.m.dwtest_file.s"}},
		{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="/d/hand"]`, Type: "dwtest_file", Action: "none", Detail: "/d/hand"},
		{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="/d/tmp-1"]`, Type: "dwtest_file", Action: "none", Detail: "/d/tmp-1", Ignored: true},
	}, got)
	require.Equal(t, drift.StatusDrift, drift.StatusOf(got))
	c := drift.CountFindings(got)
	require.Equal(t, 1, c.Unmanaged)
	require.Equal(t, 1, c.ManagedTwice)

	// Everything held once: nothing to say.
	require.Empty(t, Compare([]drift.Listed{listed("/d/one")}, fleet, nil))
	require.Equal(t, drift.StatusClean, drift.StatusOf(Compare([]drift.Listed{listed("/d/tmp-1")}, fleet, []Rule{ignoreTmp})))
}

func TestHolds(t *testing.T) {
	l := drift.Listed{Type: "t", Identity: map[string]string{"id": "x", "region": "eu"}}
	require.True(t, Holds(drift.Managed{Type: "t", Identity: map[string]string{"id": "x", "region": "eu"}}, l))
	// An identity recorded is compared whole, never through the id.
	require.False(t, Holds(drift.Managed{Type: "t", ID: "x", Identity: map[string]string{"id": "x", "region": "us"}}, l))
	require.True(t, Holds(drift.Managed{Type: "t", ID: "x"}, l))
	require.False(t, Holds(drift.Managed{Type: "t"}, l))
	require.False(t, Holds(drift.Managed{Type: "u", ID: "x"}, l))
}

func prefix(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) }
}

func TestRules(t *testing.T) {
	byName := Rule{Identity: func(s string) bool { return strings.Contains(s, "keep") }}
	require.True(t, byName.match(drift.Listed{Type: "x", DisplayName: "a keep b"}))
	require.True(t, byName.match(drift.Listed{Type: "x", Identity: map[string]string{"k": "keeper"}}))
	require.False(t, byName.match(drift.Listed{Type: "x", DisplayName: "other"}))
	require.True(t, Rule{}.match(drift.Listed{Type: "x"}), "no matcher: everything")
}
