package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// actions maps an action word to resource_changes actions.
func actions(word string) []string {
	switch word {
	case "replace":
		return []string{"delete", "create"}
	case "import", "none":
		return []string{"no-op"}
	}
	return []string{word}
}

// chg is a managed resource_changes entry of type dwtest_file.
func chg(addr, action string, attrs ...string) planparse.Change {
	return planparse.Change{Address: addr, Mode: "managed", Type: typeOf(addr), Actions: actions(action), Attributes: attrs, Importing: action == "import"}
}

// drifted is a managed resource_drift entry.
func drifted(addr, action string, attrs ...string) planparse.Change {
	return planparse.Change{Address: addr, Mode: "managed", Type: typeOf(addr), Actions: actions(action), Attributes: attrs}
}

func typeOf(addr string) string {
	t, _, _ := strings.Cut(addr, ".")
	return t
}

func boolp(b bool) *bool { return &b }

var forbiddenRules = policy.Rules{Forbidden: []policy.Glob{policy.MustCompileGlob("kubernetes_*")}}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name  string
		env   Envelope
		plan  *planparse.Plan
		rules policy.Rules
		// findings replace Classify's when set.
		findings []drift.Finding
		want     []Entry
		refused  []string // refusal codes, in order; nil: allowed
		addrs    []string // refusal addresses, in order, when checked
	}{
		{
			name: "update drift is allowed by default",
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{chg("dwtest_file.a", "update", "content")},
			},
			want: []Entry{{"dwtest_file.a", "update", []string{"content"}}},
		},
		{
			name:    "nil plan",
			refused: []string{CodePlanErrored},
		},
		{
			name: "errored plan",
			plan: &planparse.Plan{
				Errored: true,
				Drift:   []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{chg("dwtest_file.a", "update", "content")},
			},
			want:    []Entry{{"dwtest_file.a", "update", []string{"content"}}},
			refused: []string{CodePlanErrored},
		},
		{
			name: "incomplete plan",
			plan: &planparse.Plan{
				Complete: boolp(false),
				Drift:    []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes:  []planparse.Change{chg("dwtest_file.a", "update", "content")},
			},
			want:    []Entry{{"dwtest_file.a", "update", []string{"content"}}},
			refused: []string{CodePlanErrored},
		},
		{
			name:    "no drift at all",
			plan:    &planparse.Plan{Complete: boolp(true)},
			refused: []string{CodeNoDrift},
		},
		{
			name: "noise only is no drift",
			plan: &planparse.Plan{
				// Empty normalised diff: null/{} churn.
				Drift: []planparse.Change{drifted("dwtest_file.a", "update")},
			},
			refused: []string{CodeNoDrift},
		},
		{
			name:  "forbidden type present, even without a change",
			rules: forbiddenRules,
			plan: &planparse.Plan{
				Drift:     []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes:   []planparse.Change{chg("dwtest_file.a", "update", "content")},
				Resources: []planparse.TypedResource{{Address: "kubernetes_config_map.cm", Mode: "managed", Type: "kubernetes_config_map", SeenIn: []string{drift.SeenInState}}},
			},
			want:    []Entry{{"dwtest_file.a", "update", []string{"content"}}},
			refused: []string{CodeForbidden},
			addrs:   []string{"kubernetes_config_map.cm"},
		},
		{
			name: "pending config next to drift",
			plan: &planparse.Plan{
				Drift: []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{
					chg("dwtest_file.a", "update", "content"),
					chg("terraform_data.new", "create"),
				},
			},
			want: []Entry{
				{"dwtest_file.a", "update", []string{"content"}},
				{"terraform_data.new", "create", []string{}},
			},
			refused: []string{CodePending},
			addrs:   []string{"terraform_data.new"},
		},
		{
			name: "pending config alone",
			plan: &planparse.Plan{
				Changes: []planparse.Change{chg("dwtest_file.a", "update", "content")},
			},
			want:    []Entry{{"dwtest_file.a", "update", []string{"content"}}},
			refused: []string{CodePending, CodeNoDrift},
		},
		{
			name: "deleted resource: create refused by default",
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("local_file.gone", "delete")},
				Changes: []planparse.Change{chg("local_file.gone", "create")},
			},
			want:    []Entry{{"local_file.gone", "create", []string{}}},
			refused: []string{CodeActionNotAllowed},
			addrs:   []string{"local_file.gone"},
		},
		{
			name: "deleted resource: create allowed when listed",
			env:  Envelope{AllowActions: []string{ActionUpdate, ActionCreate}},
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("local_file.gone", "delete")},
				Changes: []planparse.Change{chg("local_file.gone", "create")},
			},
			want: []Entry{{"local_file.gone", "create", []string{}}},
		},
		{
			name: "create listed does not allow update",
			env:  Envelope{AllowActions: []string{ActionCreate}},
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{chg("dwtest_file.a", "update", "content")},
			},
			want:    []Entry{{"dwtest_file.a", "update", []string{"content"}}},
			refused: []string{CodeActionNotAllowed},
		},
		{
			name: "replace refused by default",
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("local_file.a", "update", "content")},
				Changes: []planparse.Change{chg("local_file.a", "replace", "content", "id")},
			},
			want:    []Entry{{"local_file.a", "replace", []string{"content", "id"}}},
			refused: []string{CodeActionNotAllowed},
		},
		{
			name: "replace allowed when listed",
			env:  Envelope{AllowActions: []string{ActionUpdate, ActionReplace}},
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("local_file.a", "update", "content")},
				Changes: []planparse.Change{chg("local_file.a", "replace", "content", "id")},
			},
			want: []Entry{{"local_file.a", "replace", []string{"content", "id"}}},
		},
		{
			name: "delete refused by default",
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{chg("dwtest_file.a", "delete")},
			},
			want:    []Entry{{"dwtest_file.a", "delete", []string{}}},
			refused: []string{CodeActionNotAllowed},
		},
		{
			name: "delete allowed when listed",
			env:  Envelope{AllowActions: []string{ActionDelete}},
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{chg("dwtest_file.a", "delete")},
			},
			want: []Entry{{"dwtest_file.a", "delete", []string{}}},
		},
		{
			name:  "drift silenced by an ignore rule is not reverted",
			rules: policy.Rules{Ignore: []policy.IgnoreRule{{Address: policy.MustCompileGlob("dwtest_file.scaled")}}},
			plan: &planparse.Plan{
				Drift: []planparse.Change{
					drifted("dwtest_file.a", "update", "content"),
					drifted("dwtest_file.scaled", "update", "content"),
				},
				Changes: []planparse.Change{
					chg("dwtest_file.a", "update", "content"),
					chg("dwtest_file.scaled", "update", "content"),
				},
			},
			want: []Entry{
				{"dwtest_file.a", "update", []string{"content"}},
				{"dwtest_file.scaled", "update", []string{"content"}},
			},
			refused: []string{CodeIgnoredDrift},
			addrs:   []string{"dwtest_file.scaled"},
		},
		{
			name: "ignored attribute of a drifted resource would be reverted",
			rules: policy.Rules{Ignore: []policy.IgnoreRule{{
				Address: policy.MustCompileGlob("dwtest_file.a"), Attributes: []policy.Glob{policy.MustCompileGlob("tags.*")},
			}}},
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("dwtest_file.a", "update", "content", "tags.team")},
				Changes: []planparse.Change{chg("dwtest_file.a", "update", "content", "tags")},
			},
			want:    []Entry{{"dwtest_file.a", "update", []string{"content", "tags"}}},
			refused: []string{CodeIgnoredAttribute},
			addrs:   []string{"dwtest_file.a"},
		},
		{
			name: "ignored attribute the apply leaves alone",
			rules: policy.Rules{Ignore: []policy.IgnoreRule{{
				Address: policy.MustCompileGlob("dwtest_file.a"), Attributes: []policy.Glob{policy.MustCompileGlob("tags.*")},
			}}},
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("dwtest_file.a", "update", "content", "tags.team")},
				Changes: []planparse.Change{chg("dwtest_file.a", "update", "content", "tagsx")},
			},
			want: []Entry{{"dwtest_file.a", "update", []string{"content", "tagsx"}}},
		},
		{
			name: "deposed object is refused",
			env:  Envelope{AllowActions: []string{ActionUpdate, ActionDelete}},
			plan: &planparse.Plan{
				Drift: []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{
					chg("dwtest_file.a", "update", "content"),
					{Address: "dwtest_file.a", Mode: "managed", Type: "dwtest_file", Deposed: "abcd1234", Actions: []string{"delete"}},
				},
			},
			want: []Entry{
				{"dwtest_file.a", "update", []string{"content"}},
				{"dwtest_file.a (deposed object abcd1234)", "delete", []string{}},
			},
			// Classify reports the deposed delete as pending.
			refused: []string{CodePending},
			addrs:   []string{"dwtest_file.a (deposed object abcd1234)"},
		},
		{
			name: "import is refused",
			plan: &planparse.Plan{
				Drift: []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{
					chg("dwtest_file.a", "update", "content"),
					chg("dwtest_file.imported", "import"),
				},
			},
			want: []Entry{
				{"dwtest_file.a", "update", []string{"content"}},
				{"dwtest_file.imported", "import", []string{}},
			},
			refused: []string{CodePending},
		},
		{
			name: "planned change without any finding",
			plan: &planparse.Plan{
				Drift:   []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{chg("dwtest_file.a", "update", "content"), chg("dwtest_file.b", "update", "content")},
			},
			findings: []drift.Finding{{Kind: drift.KindDrift, Address: "dwtest_file.a", Type: "dwtest_file", Action: "update", Attributes: []string{"content"}}},
			want: []Entry{
				{"dwtest_file.a", "update", []string{"content"}},
				{"dwtest_file.b", "update", []string{"content"}},
			},
			refused: []string{CodeUnexpectedChange},
			addrs:   []string{"dwtest_file.b"},
		},
		{
			name: "drift the plan does not revert",
			plan: &planparse.Plan{
				Drift:              []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				RelevantAttributes: map[string][]string{"dwtest_file.a": {"content"}},
			},
			refused: []string{CodeDriftNotReverted},
			addrs:   []string{"dwtest_file.a"},
		},
		{
			name: "data reads and outputs are not governed",
			plan: &planparse.Plan{
				Drift: []planparse.Change{drifted("dwtest_file.a", "update", "content")},
				Changes: []planparse.Change{
					chg("dwtest_file.a", "update", "content"),
					{Address: "data.dwtest_file.cfg", Mode: "data", Type: "dwtest_file", Actions: []string{"read"}},
				},
				OutputChanges: []string{"name"},
			},
			want: []Entry{{"dwtest_file.a", "update", []string{"content"}}},
		},
		{
			name: "at most max_resources",
			env:  Envelope{MaxResources: 3},
			plan: manyDrifted(3),
			want: manyEntries(3),
		},
		{
			name:    "more than max_resources",
			env:     Envelope{MaxResources: 2},
			plan:    manyDrifted(3),
			want:    manyEntries(3),
			refused: []string{CodeTooManyResources},
		},
		{
			name:    "default max_resources is 10",
			plan:    manyDrifted(11),
			want:    manyEntries(11),
			refused: []string{CodeTooManyResources},
		},
		{
			name:    "invalid envelope",
			env:     Envelope{AllowActions: []string{"destroy"}},
			plan:    manyDrifted(1),
			refused: []string{CodeInvalidEnvelope},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			findings := policy.Classify(tc.plan, tc.rules)
			if tc.findings != nil {
				findings = tc.findings
			}
			cs, refusals := Evaluate(tc.env, findings, tc.plan)
			if diff := cmp.Diff(tc.want, cs.Entries); tc.want != nil && diff != "" {
				t.Errorf("change set mismatch (-want +got):\n%s", diff)
			}
			var codes, addrs []string
			for _, r := range refusals {
				codes = append(codes, r.Code)
				addrs = append(addrs, r.Address)
				require.NotEmpty(t, r.Reason)
				require.NotContains(t, r.Reason, "\n")
			}
			require.Equal(t, tc.refused, codes, "refusals: %v", refusals)
			if tc.addrs != nil {
				require.Equal(t, tc.addrs, addrs)
			}
		})
	}
}

func manyDrifted(n int) *planparse.Plan {
	p := &planparse.Plan{}
	for i := range n {
		addr := "dwtest_file.f[" + string(rune('a'+i)) + "]"
		p.Drift = append(p.Drift, drifted(addr, "update", "content"))
		p.Changes = append(p.Changes, chg(addr, "update", "content"))
	}
	return p
}

func manyEntries(n int) []Entry {
	var out []Entry
	for i := range n {
		out = append(out, Entry{"dwtest_file.f[" + string(rune('a'+i)) + "]", "update", []string{"content"}})
	}
	return out
}

func TestEvaluateReasons(t *testing.T) {
	p := &planparse.Plan{
		Drift:   []planparse.Change{drifted("local_file.gone", "delete"), drifted("dwtest_file.a", "update", "content")},
		Changes: []planparse.Change{chg("local_file.gone", "create"), chg("dwtest_file.a", "replace", "content")},
	}
	_, refusals := Evaluate(Envelope{}, policy.Classify(p, policy.Rules{}), p)
	require.Equal(t, []Refusal{
		{Code: CodeActionNotAllowed, Address: "dwtest_file.a", Reason: "dwtest_file.a would be replaced: not in remediation.allow_actions [update]"},
		{Code: CodeActionNotAllowed, Address: "local_file.gone", Reason: `local_file.gone was deleted outside Terraform: re-creating it needs "create" in remediation.allow_actions [update]`},
	}, refusals)
	require.Equal(t, "dwtest_file.a would be replaced: not in remediation.allow_actions [update] (and 1 more)", summarize(refusals))
}

// TestEvaluateRealPlans runs the envelope over real plans (planparse's
// fixtures, generated by hack/gen-fixtures.sh with real Terraform).
func TestEvaluateRealPlans(t *testing.T) {
	cases := []struct {
		fixture string
		env     Envelope
		want    []Entry
		refused []string
	}{
		{fixture: "content_drift", want: []Entry{{"dwtest_file.a", "update", []string{"content"}}}},
		{fixture: "sensitive_drift", want: []Entry{
			{"dwtest_file.secret", "update", []string{"sensitive_content"}},
			{"terraform_data.secret_map", "replace", []string{"id", "triggers_replace"}},
		}, refused: []string{CodePending}},
		{fixture: "deleted_file", want: []Entry{{"local_file.gone", "create", []string{}}}, refused: []string{CodeActionNotAllowed}},
		{fixture: "deleted_file", env: Envelope{AllowActions: []string{"update", "create"}}, want: []Entry{{"local_file.gone", "create", []string{}}}},
		{fixture: "pending_config", refused: []string{CodePending, CodePending, CodePending, CodeNoDrift}},
		{fixture: "ignore_changes_noise", refused: []string{CodeNoDrift}},
		{fixture: "clean", refused: []string{CodeNoDrift}},
		{fixture: "forbidden_prior_state", refused: []string{CodeForbidden, CodePending, CodeNoDrift}},
	}
	for _, tc := range cases {
		t.Run(tc.fixture, func(t *testing.T) {
			p := loadFixture(t, tc.fixture)
			cs, refusals := Evaluate(tc.env, policy.Classify(p, forbiddenRules), p)
			var codes []string
			for _, r := range refusals {
				codes = append(codes, r.Code)
			}
			require.Equal(t, tc.refused, codes, "refusals: %v", refusals)
			if tc.want != nil {
				require.Equal(t, tc.want, cs.Entries)
			}
		})
	}
}

const fixtureDir = "../../terraform/planparse/testdata"

func loadFixture(t *testing.T, name string) *planparse.Plan {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, name, "plan.json"))
	require.NoError(t, err)
	defer f.Close()
	p, err := planparse.Parse(f)
	require.NoError(t, err)
	return p
}

func TestEnvelopeValidate(t *testing.T) {
	require.NoError(t, Envelope{}.Validate())
	require.NoError(t, Envelope{AllowActions: []string{"update", "create", "delete", "replace"}, MaxResources: 50}.Validate())
	err := Envelope{AllowActions: []string{"update", "destroy"}, MaxResources: -1}.Validate()
	require.EqualError(t, err, "allow_actions: unknown action \"destroy\" (allowed: update, create, delete, replace)\nmax_resources: must not be negative, got -1")
	require.Equal(t, Envelope{AllowActions: []string{"update"}, MaxResources: 10}, Envelope{}.WithDefaults())
}
