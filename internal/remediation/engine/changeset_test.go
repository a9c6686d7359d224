package engine

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func base() ChangeSet {
	return ChangeSet{Entries: []Entry{
		{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content", "tags.team"}},
		{Address: `module.app["x"].dwtest_file.cfg`, Action: "create", Attributes: nil},
	}}
}

func TestChangeSetHashStable(t *testing.T) {
	want := base().Hash()
	// Pinned: an approval stored by one driftwatch version must still match
	// the same plan under the next one. Change changeSetVersion, not this
	// value, when the normalisation must change.
	require.Equal(t, "0af4a521a7260f170c5b9ef6ed778610f7929ee8936dac634c83138f47f0b65c", want)

	cases := map[string]ChangeSet{
		"entries reordered": {Entries: []Entry{
			{Address: `module.app["x"].dwtest_file.cfg`, Action: "create"},
			{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content", "tags.team"}},
		}},
		"attributes reordered": {Entries: []Entry{
			{Address: "dwtest_file.a", Action: "update", Attributes: []string{"tags.team", "content"}},
			{Address: `module.app["x"].dwtest_file.cfg`, Action: "create", Attributes: []string{}},
		}},
		"duplicates collapse": {Entries: []Entry{
			{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content", "tags.team", "content"}},
			{Address: `module.app["x"].dwtest_file.cfg`, Action: "create"},
			{Address: `module.app["x"].dwtest_file.cfg`, Action: "create"},
		}},
	}
	for name, cs := range cases {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, want, cs.Hash())
			require.Empty(t, DescribeDiff(base(), cs))
		})
	}

	t.Run("json round trip", func(t *testing.T) {
		b, err := json.Marshal(base())
		require.NoError(t, err)
		var cs ChangeSet
		require.NoError(t, json.Unmarshal(b, &cs))
		require.Equal(t, want, cs.Hash())
	})
}

func TestChangeSetHashSensitive(t *testing.T) {
	want := base().Hash()
	mutate := map[string]func(cs *ChangeSet){
		"address":         func(cs *ChangeSet) { cs.Entries[0].Address = "dwtest_file.b" },
		"instance key":    func(cs *ChangeSet) { cs.Entries[1].Address = `module.app["y"].dwtest_file.cfg` },
		"action":          func(cs *ChangeSet) { cs.Entries[0].Action = "replace" },
		"attribute added": func(cs *ChangeSet) { cs.Entries[0].Attributes = append(cs.Entries[0].Attributes, "mode") },
		"attribute gone":  func(cs *ChangeSet) { cs.Entries[0].Attributes = cs.Entries[0].Attributes[:1] },
		"attribute moved": func(cs *ChangeSet) { cs.Entries[0].Attributes[1] = "tags.owner" },
		"entry added": func(cs *ChangeSet) {
			cs.Entries = append(cs.Entries, Entry{Address: "dwtest_file.c", Action: "update"})
		},
		"entry removed": func(cs *ChangeSet) { cs.Entries = cs.Entries[:1] },
		"path to address": func(cs *ChangeSet) {
			cs.Entries[0].Address += ".content"
			cs.Entries[0].Attributes = []string{"tags.team"}
		},
		"empty change set": func(cs *ChangeSet) { cs.Entries = nil },
	}
	seen := map[string]string{want: "base"}
	for name, m := range mutate {
		t.Run(name, func(t *testing.T) {
			cs := base()
			m(&cs)
			h := cs.Hash()
			require.NotEqual(t, want, h)
			require.NotEmpty(t, DescribeDiff(base(), cs))
			if other, ok := seen[h]; ok {
				t.Fatalf("same hash as %q", other)
			}
			seen[h] = name
		})
	}
}

func TestChangeSetOfRealPlan(t *testing.T) {
	cs := ChangeSetOf(loadFixture(t, "content_drift"))
	require.Equal(t, []Entry{{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content"}}}, cs.Entries)
	require.Equal(t, []string{"dwtest_file.a"}, cs.Addresses())
	require.Equal(t, ChangeSet{}.Hash(), ChangeSetOf(loadFixture(t, "clean")).Hash())
	require.Equal(t, ChangeSet{}.Hash(), ChangeSetOf(nil).Hash())
}

func TestDescribeDiff(t *testing.T) {
	approved := ChangeSet{Entries: []Entry{
		{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content"}},
		{Address: "dwtest_file.c", Action: "update", Attributes: []string{"content"}},
	}}
	fresh := ChangeSet{Entries: []Entry{
		{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content", "mode"}},
		{Address: "dwtest_file.b", Action: "update", Attributes: []string{"content"}},
		{Address: "dwtest_file.c", Action: "create"},
	}}
	require.Equal(t,
		"changed: dwtest_file.a: update [content, mode] (approved [content]); new: dwtest_file.b: update [content]; "+
			"new: dwtest_file.c: create; gone: dwtest_file.c: update [content]",
		DescribeDiff(approved, fresh))

	var many ChangeSet
	for i := range 8 {
		many.Entries = append(many.Entries, Entry{Address: "x.r" + string(rune('a'+i)), Action: "update"})
	}
	require.Equal(t, "new: x.ra: update; new: x.rb: update; new: x.rc: update; new: x.rd: update; new: x.re: update; and 3 more",
		DescribeDiff(ChangeSet{}, many))
}
