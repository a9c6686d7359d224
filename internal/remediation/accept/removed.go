package accept

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/zclconf/go-cty/cty"
)

// KindRemoved is an accepted deletion: the resource block replaced by a
// removed block that keeps the object out of the code without
// destroying anything (Attribute is empty).
const KindRemoved = "removed block"

// deletionOnRequest is the refusal of a deletion without
// Request.Deletions, saying how to ask for it.
const deletionOnRequest = "deleted outside Terraform: accepting a deletion is a removed block with destroy = false, " +
	"made only on request (driftwatch accept --deletions, or \"deletions\": true in the API's body)"

// removedSyntax is how the tool reads a removed block that keeps the
// object.
type removedSyntax int

const (
	// removedLifecycle: removed { from, lifecycle { destroy = false } }
	// (Terraform >= 1.7, OpenTofu >= 1.10).
	removedLifecycle removedSyntax = iota
	// removedPlain: removed { from }, which only forgets (OpenTofu 1.7
	// to 1.9, which do not read a lifecycle block there).
	removedPlain
	// removedUnsupported: no removed block (before 1.7).
	removedUnsupported
)

// removedSyntaxFor is the removed block tool ("terraform 1.11.4", "tofu
// 1.10.6", as engine reports it) reads; planVersion (the plan's
// terraform_version) stands in for a version tool does not name. A
// version that does not parse gets the lifecycle form: the proof plan
// decides.
func removedSyntaxFor(tool, planVersion string) removedSyntax {
	name, version, _ := strings.Cut(strings.TrimSpace(tool), " ")
	if version == "" {
		version = planVersion
	}
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimPrefix(version, "v"), "%d.%d", &major, &minor); err != nil {
		return removedLifecycle
	}
	switch at := major*1000 + minor; {
	case at < 1007:
		return removedUnsupported
	case name == "tofu" && at < 1010:
		return removedPlain
	}
	return removedLifecycle
}

// recreated is the addresses the plan creates (a deleted object the
// code would create again).
func recreated(p *tfjson.Plan) map[string]bool {
	out := map[string]bool{}
	for _, rc := range p.ResourceChanges {
		if rc != nil && rc.Change != nil && rc.Change.Actions.Create() {
			out[rc.Address] = true
		}
	}
	return out
}

// deletion accepts a managed resource deleted outside Terraform: its
// resource block in the root module becomes, in place, a removed block
// with destroy = false. It refuses what that would change beyond the
// one object: a block of a module (shared by its callers), a count or
// for_each instance (the block is every instance's), a resource the
// code refers to elsewhere (the references would break), a tool without
// removed blocks.
func (w *workspace) deletion(rc *tfjson.ResourceChange, res *Result) {
	t := target{address: rc.Address, res: res}
	switch {
	case rc.ModuleAddress != "":
		t.refuse("deleted outside Terraform, in " + rc.ModuleAddress + ": its resource block is the module's, shared by every call of it, so a removed block is not proposed")
		return
	case rc.Index != nil:
		t.refuse("deleted outside Terraform, an instance of count or for_each: removing its block would remove every instance")
		return
	case !w.recreated[rc.Address]:
		t.refuse("deleted outside Terraform, and the plan does not create it again: there is nothing to accept")
		return
	case w.removed == removedUnsupported:
		t.refuse("deleted outside Terraform: accepting it needs a removed block, which Terraform and OpenTofu read from 1.7 on")
		return
	}
	block := w.root.resource(rc.Type, rc.Name)
	if block == nil {
		t.refuse("its resource block is not in the module's files")
		return
	}
	if refs := w.references(block); len(refs) > 0 {
		t.refuse("deleted outside Terraform, but the code refers to it at " + strings.Join(refs, ", ") + ": removing its block would break that")
		return
	}
	rng := block.Range()
	w.add(rng.Filename, edit{start: rng.Start.Byte, end: rng.End.Byte, text: removedBlock(rc.Type, rc.Name, w.removed),
		accepted: Accepted{Address: rc.Address, Where: rangeText(w.dir, rng), Kind: KindRemoved}}, t)
}

// references lists, FILE:LINE, where the root module's files refer to
// the resource of block (type.name), outside the block itself.
func (w *workspace) references(block *hclsyntax.Block) []string {
	typ, name := block.Labels[0], block.Labels[1]
	own := block.Range()
	var out []string
	for _, body := range w.root.bodies {
		_ = hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics { // the walk returns no diagnostics
			e, ok := n.(*hclsyntax.ScopeTraversalExpr)
			if !ok || len(e.Traversal) < 2 || e.Traversal.RootName() != typ {
				return nil
			}
			if a, ok := e.Traversal[1].(hcl.TraverseAttr); !ok || a.Name != name {
				return nil
			}
			rng := e.Range()
			if rng.Filename == own.Filename && own.ContainsOffset(rng.Start.Byte) {
				return nil
			}
			out = append(out, rangeText(w.dir, rng))
			return nil
		})
	}
	sort.Strings(out)
	return out
}

// removedBlock is the removed block for typ.name, formatted.
func removedBlock(typ, name string, syntax removedSyntax) []byte {
	f := hclwrite.NewEmptyFile()
	b := f.Body().AppendNewBlock("removed", nil).Body()
	b.SetAttributeTraversal("from", hcl.Traversal{hcl.TraverseRoot{Name: typ}, hcl.TraverseAttr{Name: name}})
	if syntax == removedLifecycle {
		b.AppendNewline()
		b.AppendNewBlock("lifecycle", nil).Body().SetAttributeValue("destroy", cty.False)
	}
	return []byte(strings.TrimSuffix(string(hclwrite.Format(f.Bytes())), "\n"))
}
