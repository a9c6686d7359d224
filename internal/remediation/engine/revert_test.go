package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNotRevertedRealPlans(t *testing.T) {
	for _, fixture := range []string{"content_drift", "deleted_file", "sensitive_drift", "nested_module_drift", "pending_config", "clean"} {
		t.Run(fixture, func(t *testing.T) {
			f, err := os.Open(filepath.Join(fixtureDir, fixture, "plan.json"))
			require.NoError(t, err)
			defer f.Close()
			nr, err := notReverted(f)
			require.NoError(t, err)
			require.Empty(t, nr, "a pure drift revert restores every prior value")
		})
	}
}

// planJSON builds a plan document with one drift entry and one change for
// dwtest_file.a; changesFirst puts resource_changes before resource_drift.
func planJSON(driftBefore, actions, after, afterUnknown string, changesFirst bool) string {
	d := `"resource_drift":[{"address":"dwtest_file.a","mode":"managed","type":"dwtest_file","change":{"actions":["update"],"before":` + driftBefore + `,"after":{"content":"edited"}}}]`
	c := `"resource_changes":[` +
		`{"address":"data.dwtest_file.x","mode":"data","change":{"actions":["read"],"before":null,"after":{"content":"zz"}}},` +
		`{"address":"dwtest_file.a","mode":"managed","type":"dwtest_file","change":{"actions":` + actions + `,"before":{"content":"edited"},"after":` + after + `,"after_unknown":` + afterUnknown + `}},` +
		`{"address":"dwtest_file.a","mode":"managed","deposed":"00aa","change":{"actions":["delete"],"before":{"content":"old"},"after":null}}]`
	parts := []string{`"format_version":"1.2"`, `"prior_state":{"values":{"root_module":{"resources":[{"address":"dwtest_file.a","values":{"content":"v1","nested":[{"a":[1,2,{"b":null}]}]}}]}}}`, d, c, `"configuration":{"root_module":{}}`}
	if changesFirst {
		parts[2], parts[3] = c, d
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func TestNotReverted(t *testing.T) {
	prior := `{"content":"v1","id":"x","tags":{"b":"2","a":"1"},"n":1.5,"secret":"canary-9c1"}`
	cases := []struct {
		name         string
		actions      string
		after        string
		afterUnknown string
		want         map[string][]string
	}{
		{name: "revert", actions: `["update"]`, after: `{"content":"v1","id":"x","tags":{"a":"1","b":"2"},"n":1.5,"secret":"canary-9c1"}`, afterUnknown: `{}`, want: map[string][]string{}},
		{name: "revert with whitespace", actions: `["update"]`, after: `{ "tags" : { "a" : "1", "b":"2" }, "content":"v1","id":"x","n":1.5,"secret":"canary-9c1"}`, afterUnknown: `{}`, want: map[string][]string{}},
		{name: "config changed the drifted attribute", actions: `["update"]`, after: `{"content":"v2","id":"x","tags":{"a":"1","b":"2"},"n":1.5,"secret":"canary-9c1"}`, afterUnknown: `{}`,
			want: map[string][]string{"dwtest_file.a": {"content"}}},
		{name: "config changed other attributes", actions: `["update"]`, after: `{"content":"v1","id":"x","tags":{"a":"1"},"n":2,"secret":"canary-new"}`, afterUnknown: `{}`,
			want: map[string][]string{"dwtest_file.a": {"n", "secret", "tags"}}},
		{name: "new attribute", actions: `["update"]`, after: `{"content":"v1","id":"x","tags":{"a":"1","b":"2"},"n":1.5,"secret":"canary-9c1","extra":null}`, afterUnknown: `{}`,
			want: map[string][]string{"dwtest_file.a": {"extra"}}},
		{name: "unknown after apply is skipped", actions: `["delete","create"]`, after: `{"content":"v1","tags":{"a":"1","b":"2"},"n":1.5,"secret":"canary-9c1"}`, afterUnknown: `{"id":true,"tags":{"c":true}}`, want: map[string][]string{}},
		{name: "re-create of a deleted resource", actions: `["create"]`, after: `{"content":"v1","tags":{"a":"1","b":"2"},"n":1.5,"secret":"canary-9c1"}`, afterUnknown: `{"id":true}`, want: map[string][]string{}},
		{name: "delete is not compared", actions: `["delete"]`, after: `null`, afterUnknown: `{}`, want: map[string][]string{}},
	}
	for _, tc := range cases {
		for _, changesFirst := range []bool{false, true} {
			name := tc.name
			if changesFirst {
				name += ", changes first"
			}
			t.Run(name, func(t *testing.T) {
				nr, err := notReverted(strings.NewReader(planJSON(prior, tc.actions, tc.after, tc.afterUnknown, changesFirst)))
				require.NoError(t, err)
				require.Equal(t, tc.want, nr)
				for _, paths := range nr {
					for _, p := range paths {
						require.NotContains(t, p, "canary")
					}
				}
			})
		}
	}
}

func TestNotRevertedMalformed(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":       ``,
		"not object":  `[]`,
		"truncated":   `{"resource_drift":[{"address":"a","mode":"managed","change":{"before":{"x":1}`,
		"bad entry":   `{"resource_changes":[1]}`,
		"bad section": `{"resource_drift":{"a":1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := notReverted(strings.NewReader(doc))
			require.Error(t, err)
		})
	}
}
