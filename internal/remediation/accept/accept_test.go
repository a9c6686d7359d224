package accept_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/remediation/accept"
)

// drift is one resource_drift entry.
func drift(addr, module string, before, after map[string]any) *tfjson.ResourceChange {
	local := strings.TrimPrefix(strings.TrimPrefix(addr, module), ".")
	typ, name, _ := strings.Cut(local, ".")
	rc := &tfjson.ResourceChange{Address: addr, ModuleAddress: module, Mode: tfjson.ManagedResourceMode, Type: typ, Name: name,
		Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionUpdate}, Before: before, After: after}}
	if after == nil {
		rc.Change.Actions = tfjson.Actions{tfjson.ActionDelete}
		rc.Change.After = nil
	}
	return rc
}

// copyTree copies testdata/ws into a scratch directory.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, filepath.WalkDir("testdata/ws", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/ws", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	}))
	return dst
}

func wholePlan() *tfjson.Plan {
	return &tfjson.Plan{ResourceDrift: []*tfjson.ResourceChange{
		drift("dwtest_file.lit", "",
			map[string]any{"filename": "a.txt", "content": "v1", "tags": map[string]any{"team": "core", "owner": "ops"}},
			map[string]any{"filename": "a.txt", "content": "hand edit", "tags": map[string]any{"team": "platform", "cost-center": "42"}}),
		drift("dwtest_file.loc", "", map[string]any{"content": "prod"}, map[string]any{"content": "staging"}),
		drift("dwtest_file.def", "", map[string]any{"size": 3.0}, map[string]any{"size": 5.0}),
		drift("dwtest_file.tfv", "", map[string]any{"region": "eu-west-1"}, map[string]any{"region": "us-east-1"}),
		drift("module.app.dwtest_file.m", "module.app", map[string]any{"content": "one", "mode": "0644"}, map[string]any{"content": "two", "mode": "0600"}),
	}}
}

// Each place a value can be set is rewritten there, the rest of each file
// (comments, layout) kept.
func TestComputeRewritesWhereTheValueIsSet(t *testing.T) {
	dir := copyTree(t)
	res, err := accept.Compute(accept.Request{Dir: dir, Plan: wholePlan()})
	require.NoError(t, err)
	require.Empty(t, res.Refused)
	require.ElementsMatch(t, []string{
		"dwtest_file.lit.content: main.tf:27 (literal)",
		"dwtest_file.lit.tags.cost-center: main.tf:28 (literal (key added))",
		"dwtest_file.lit.tags.owner: main.tf:30 (literal (key removed))",
		"dwtest_file.lit.tags.team: main.tf:29 (literal)",
		"dwtest_file.loc.content: main.tf:3 (local)",
		"dwtest_file.def.size: main.tf:8 (variable default)",
		"dwtest_file.tfv.region: terraform.tfvars:2 (tfvars)",
		"module.app.dwtest_file.m.content: main.tf:58 (module input)",
		"module.app.dwtest_file.m.mode: modules/app/main.tf:7 (literal)",
	}, texts(res.Accepted))
	require.NoError(t, res.Apply())
	main := mustRead(t, filepath.Join(dir, "main.tf"))
	for _, want := range []string{
		"  # the environment\n  env = \"staging\"\n",
		"  default = 5\n",
		"  content  = \"hand edit\" # keep this comment\n",
		"  tags = {\n    team          = \"platform\"\n    \"cost-center\" = \"42\"\n  }\n",
		"  source = \"./modules/app\"\n  name   = \"two\"\n",
	} {
		require.Contains(t, main, want)
	}
	require.NotContains(t, main, "owner")
	require.Equal(t, "# set per environment\nregion = \"us-east-1\"\n", mustRead(t, filepath.Join(dir, "terraform.tfvars")))
	require.Contains(t, mustRead(t, filepath.Join(dir, "modules/app/main.tf")), "  mode    = \"0600\"\n")
	// Untouched files are not in the change.
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, []string{"main.tf", "modules/app/main.tf", "terraform.tfvars"}, paths)
}

// Every case the trace cannot invert is refused, naming why; nothing is
// written for them, and no value appears in a reason.
func TestComputeRefusesNamingWhy(t *testing.T) {
	dir := copyTree(t)
	sens := drift("dwtest_file.lit", "", map[string]any{"content": "v1"}, map[string]any{"content": "canary-sensitive"})
	sens.Change.AfterSensitive = map[string]any{"content": true}
	counted := drift("dwtest_file.lit[0]", "", map[string]any{"content": "v1"}, map[string]any{"content": "x"})
	counted.Index = 0.0
	plan := &tfjson.Plan{ResourceDrift: []*tfjson.ResourceChange{
		drift("dwtest_file.refused", "",
			map[string]any{"fn": "X", "cond": "a", "tmpl": "prod-x", "ref": "1", "forx": []any{"a"}, "secret": "canary-default", "unset": "u", "extra": "p"},
			map[string]any{"fn": "Y", "cond": "c", "tmpl": "y", "ref": "2", "forx": []any{"b"}, "secret": "canary-new", "unset": "v", "extra": "q"}),
		sens, counted,
		drift("dwtest_file.gone", "", map[string]any{"content": "v1"}, nil),
		drift("module.s1.dwtest_file.x", "module.s1", map[string]any{"content": "same"}, map[string]any{"content": "other"}),
		drift("module.remote.aws_instance.a", "module.remote", map[string]any{"ami": "a"}, map[string]any{"ami": "b"}),
	}}
	res, err := accept.Compute(accept.Request{Dir: dir, Plan: plan, Addresses: nil})
	require.NoError(t, err)
	require.Empty(t, res.Accepted)
	require.Empty(t, res.Files)
	var got []string
	for _, r := range res.Refused {
		got = append(got, r.String())
		require.NotContains(t, r.Reason, "canary")
	}
	require.ElementsMatch(t, []string{
		"dwtest_file.refused.cond: the value comes from a conditional expression at main.tf:48, which cannot be rewritten to a value",
		"dwtest_file.refused.extra: not set in the resource block (the provider's value): adding it is not proposed",
		"dwtest_file.refused.fn: the value comes from a function call (upper) at main.tf:47, which cannot be rewritten to a value",
		"dwtest_file.refused.forx: the value comes from a for expression at main.tf:51, which cannot be rewritten to a value",
		"dwtest_file.refused.ref: the value comes from dwtest_file.lit.id at main.tf:50, a reference to another object, which cannot be rewritten",
		"dwtest_file.refused.secret: variable token is sensitive: its value is never written or shown",
		"dwtest_file.refused.tmpl: the value comes from a string template with interpolations at main.tf:49, which cannot be rewritten to a value",
		"dwtest_file.refused.unset: variable unset has no default and is set outside the code (driftwatch's vars, TF_VAR_unset or -var): change it there",
		"dwtest_file.lit.content: sensitive: its value is never written or shown",
		"dwtest_file.lit[0]: an instance of count or for_each: its block sets every instance, so the change would change the others",
		"dwtest_file.gone: deleted outside Terraform: accepting a deletion is a removed block with destroy = false, made only on request (driftwatch accept --deletions, or \"deletions\": true in the API's body)",
		"module.s1.dwtest_file.x.content: set in module modules/shared, which 2 module blocks call: the change would change the others",
		"module.remote.aws_instance.a: in module.remote, whose code comes from \"hashicorp/consul/aws\", not from this workspace's files",
	}, got)
}

// Addresses limits the change; an address with no drift is refused.
func TestComputeOnlyTheAddressesAsked(t *testing.T) {
	dir := copyTree(t)
	res, err := accept.Compute(accept.Request{Dir: dir, Plan: wholePlan(), Addresses: []string{"dwtest_file.def", "dwtest_file.nothing"}})
	require.NoError(t, err)
	require.Len(t, res.Accepted, 1)
	require.Equal(t, "dwtest_file.def", res.Accepted[0].Address)
	require.Equal(t, []accept.Refusal{{Address: "dwtest_file.nothing", Reason: "no drift in the plan for this address"}}, res.Refused)
	require.Equal(t, `--- a/main.tf
+++ b/main.tf
@@ -5,7 +5,7 @@
 
 variable "size" {
   type    = number
-  default = 3
+  default = 5
 }
 
 variable "region" {
`, res.Patch())
}

// Two accepted attributes that need one place set to different values:
// the second is refused; the same value is one edit.
func TestComputeConflictingPlaces(t *testing.T) {
	dir := copyTree(t)
	plan := &tfjson.Plan{ResourceDrift: []*tfjson.ResourceChange{
		drift("dwtest_file.loc", "", map[string]any{"content": "prod"}, map[string]any{"content": "staging"}),
		drift("dwtest_file.refused", "", map[string]any{"tmpl": "prod-x"}, map[string]any{"tmpl": "prod-x"}),
	}}
	// A second resource reading local.env would conflict: build one.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "more.tf"), []byte("resource \"dwtest_file\" \"loc2\" {\n  content = local.env\n}\n"), 0o644))
	plan.ResourceDrift = append(plan.ResourceDrift,
		drift("dwtest_file.loc2", "", map[string]any{"content": "prod"}, map[string]any{"content": "test"}))
	res, err := accept.Compute(accept.Request{Dir: dir, Plan: plan})
	require.NoError(t, err)
	require.Len(t, res.Accepted, 1)
	require.Equal(t, []accept.Refusal{{Address: "dwtest_file.loc2", Attribute: "content",
		Reason: "set at main.tf:3, where dwtest_file.loc.content needs another value"}}, res.Refused)
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// texts is each accepted attribute as a person reads it.
func texts(as []accept.Accepted) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}
