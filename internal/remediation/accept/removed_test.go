package accept_test

import (
	"path/filepath"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/remediation/accept"
)

// deletionPlan is a plan in which each address was deleted outside
// Terraform and the code creates again those of recreate.
func deletionPlan(deleted []*tfjson.ResourceChange, recreate ...string) *tfjson.Plan {
	p := &tfjson.Plan{ResourceDrift: deleted}
	for _, a := range recreate {
		p.ResourceChanges = append(p.ResourceChanges, &tfjson.ResourceChange{Address: a, Mode: tfjson.ManagedResourceMode,
			Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionCreate}}})
	}
	return p
}

// goneBlock is testdata/ws/gone.tf's block of dwtest_file.gone.
const goneBlock = `resource "dwtest_file" "gone" {
  filename = "gone.txt"
  content  = "v1" # the removed block replaces this block
}`

// goneTF is testdata/ws/gone.tf with goneBlock replaced by block.
func goneTF(t *testing.T, block string) string {
	t.Helper()
	orig := mustRead(t, "testdata/ws/gone.tf")
	require.Contains(t, orig, goneBlock)
	return strings.Replace(orig, goneBlock, block, 1)
}

// refusalTexts is each refusal as a person reads it.
func refusalTexts(rs []accept.Refusal) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// On request, a deleted resource's block becomes, in place, a removed
// block that keeps the object out of the code without destroying
// anything, written as the tool reads it; the rest of the file is kept
// byte for byte. Without the request it is refused, saying how to ask.
func TestComputeAcceptsADeletionOnRequest(t *testing.T) {
	lifecycle := goneTF(t, "removed {\n  from = dwtest_file.gone\n\n  lifecycle {\n    destroy = false\n  }\n}")
	plain := goneTF(t, "removed {\n  from = dwtest_file.gone\n}")
	for tool, want := range map[string]string{
		"terraform 1.11.4": lifecycle, "terraform 1.7.0": lifecycle, "tofu 1.10.6": lifecycle,
		"tofu 1.8.2": plain, "tofu 1.7.0": plain,
		"tofu": lifecycle, // no version, and none in the plan: the proof decides
	} {
		t.Run(tool, func(t *testing.T) {
			dir := copyTree(t)
			plan := deletionPlan([]*tfjson.ResourceChange{drift("dwtest_file.gone", "", map[string]any{"content": "v1"}, nil)}, "dwtest_file.gone")
			res, err := accept.Compute(accept.Request{Dir: dir, Plan: plan, Deletions: true, Tool: tool})
			require.NoError(t, err)
			require.Empty(t, res.Refused)
			require.Equal(t, []string{"dwtest_file.gone: gone.tf:2 (removed block)"}, texts(res.Accepted))
			require.Equal(t, accept.Accepted{Address: "dwtest_file.gone", Where: "gone.tf:2", Kind: accept.KindRemoved}, res.Accepted[0])
			require.Len(t, res.Files, 1)
			require.Equal(t, want, string(res.Files[0].New))
			require.NoError(t, res.Apply())
			require.Equal(t, want, mustRead(t, filepath.Join(dir, "gone.tf")))
		})
	}
	t.Run("the plan's version stands in", func(t *testing.T) {
		plan := deletionPlan([]*tfjson.ResourceChange{drift("dwtest_file.gone", "", map[string]any{"content": "v1"}, nil)}, "dwtest_file.gone")
		plan.TerraformVersion = "1.9.1"
		res, err := accept.Compute(accept.Request{Dir: copyTree(t), Plan: plan, Deletions: true, Tool: "tofu"})
		require.NoError(t, err)
		require.Equal(t, plain, string(res.Files[0].New))
	})
	t.Run("not asked", func(t *testing.T) {
		plan := deletionPlan([]*tfjson.ResourceChange{drift("dwtest_file.gone", "", map[string]any{"content": "v1"}, nil)}, "dwtest_file.gone")
		res, err := accept.Compute(accept.Request{Dir: copyTree(t), Plan: plan, Tool: "terraform 1.11.4"})
		require.NoError(t, err)
		require.Empty(t, res.Accepted)
		require.Empty(t, res.Files)
		require.Equal(t, []accept.Refusal{{Address: "dwtest_file.gone", Reason: "deleted outside Terraform: accepting a deletion is a removed block with destroy = false, " +
			`made only on request (driftwatch accept --deletions, or "deletions": true in the API's body)`}}, res.Refused)
	})
}

// A deletion whose removed block would change more than the one object
// is refused, naming why; nothing is written.
func TestComputeRefusesDeletionsNamingWhy(t *testing.T) {
	gone := func(addr, module string) *tfjson.ResourceChange {
		return drift(addr, module, map[string]any{"content": "v1"}, nil)
	}
	counted := gone("dwtest_file.counted[0]", "")
	counted.Name, counted.Index = "counted", 0.0
	plan := deletionPlan([]*tfjson.ResourceChange{
		gone("module.app.dwtest_file.m", "module.app"), counted, gone("dwtest_file.used", ""), gone("dwtest_file.lit", ""),
		gone("dwtest_file.gone", ""),
	}, "module.app.dwtest_file.m", "dwtest_file.counted[0]", "dwtest_file.used", "dwtest_file.lit")
	res, err := accept.Compute(accept.Request{Dir: copyTree(t), Plan: plan, Deletions: true, Tool: "terraform 1.11.4"})
	require.NoError(t, err)
	require.Empty(t, res.Accepted)
	require.Empty(t, res.Files)
	require.ElementsMatch(t, []string{
		"module.app.dwtest_file.m: deleted outside Terraform, in module.app: its resource block is the module's, shared by every call of it, so a removed block is not proposed",
		"dwtest_file.counted[0]: deleted outside Terraform, an instance of count or for_each: removing its block would remove every instance",
		"dwtest_file.used: deleted outside Terraform, but the code refers to it at gone.tf:17: removing its block would break that",
		"dwtest_file.lit: deleted outside Terraform, but the code refers to it at main.tf:50: removing its block would break that",
		"dwtest_file.gone: deleted outside Terraform, and the plan does not create it again: there is nothing to accept",
	}, refusalTexts(res.Refused))

	// A tool without removed blocks.
	for _, tool := range []string{"terraform 1.6.6", "tofu 1.6.2"} {
		plan := deletionPlan([]*tfjson.ResourceChange{gone("dwtest_file.gone", "")}, "dwtest_file.gone")
		res, err := accept.Compute(accept.Request{Dir: copyTree(t), Plan: plan, Deletions: true, Tool: tool})
		require.NoError(t, err)
		require.Empty(t, res.Files)
		require.Equal(t, []string{"dwtest_file.gone: deleted outside Terraform: accepting it needs a removed block, which Terraform and OpenTofu read from 1.7 on"},
			refusalTexts(res.Refused), tool)
	}
}
