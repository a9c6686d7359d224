package accept

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	tfjson "github.com/hashicorp/terraform-json"
)

// Request is what to accept: the drift of a plan of the workspace whose
// root module is Dir.
type Request struct {
	// Dir is the root module's directory (a scratch copy: Apply writes
	// there).
	Dir string
	// VarFiles are the -var-file files the workspace's plans use,
	// relative to Dir, in order.
	VarFiles []string
	// Plan is the plan (show -json) whose resource_drift is accepted.
	Plan *tfjson.Plan
	// Addresses limits the accepted resources (empty: every drifted one).
	Addresses []string
	// Deletions, when set, accepts a resource deleted outside Terraform
	// that the plan creates again: its block becomes a removed block
	// with destroy = false (KindRemoved). Unset, a deletion is refused.
	Deletions bool
	// Tool is the tool that planned and its version ("terraform 1.11.4",
	// "tofu 1.10.6"), which decides how a removed block is written; the
	// plan's terraform_version stands in for a missing version.
	Tool string
}

// Accepted is one attribute accepted: where its value is set, rewritten;
// or a deletion accepted (Attribute empty, Kind KindRemoved): where its
// resource block was.
type Accepted struct {
	Address   string `json:"address"`
	Attribute string `json:"attribute"`
	// Where is the place rewritten, FILE:LINE relative to the root
	// module, and what it is ("literal", "variable NAME in FILE", ...).
	Where string `json:"where"`
	Kind  string `json:"kind"`
}

// Refusal is one attribute (or resource) not accepted, and why.
type Refusal struct {
	Address   string `json:"address"`
	Attribute string `json:"attribute,omitempty"`
	Reason    string `json:"reason"`
}

// Kinds of place an accepted value is written to.
const (
	KindLiteral     = "literal"
	KindLocal       = "local"
	KindTfvars      = "tfvars"
	KindDefault     = "variable default"
	KindModuleInput = "module input"
)

// Result is the code change: the files' new contents, what each change
// accepts and what is refused.
type Result struct {
	dir      string
	Files    []File     `json:"files"`
	Accepted []Accepted `json:"accepted"`
	Refused  []Refusal  `json:"refused"`
}

// File is one changed file, relative to the root module.
type File struct {
	Path     string `json:"path"`
	Old, New []byte `json:"-"`
}

// Compute traces each drifted attribute of req's plan to where the
// configuration sets its value and rewrites it there; what it cannot
// rewrite is refused with the reason. Nothing is written: see Apply and
// Patch.
func Compute(req Request) (*Result, error) {
	if req.Plan == nil {
		return nil, fmt.Errorf("accept: no plan")
	}
	w, err := newWorkspace(req.Dir, req.VarFiles)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, a := range req.Addresses {
		want[a] = true
	}
	if req.Deletions {
		w.deletions, w.recreated = true, recreated(req.Plan)
		w.removed = removedSyntaxFor(req.Tool, req.Plan.TerraformVersion)
	}
	found := map[string]bool{}
	res := &Result{dir: req.Dir}
	for _, rc := range req.Plan.ResourceDrift {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode || (len(want) > 0 && !want[rc.Address]) {
			continue
		}
		found[rc.Address] = true
		w.resource(rc, res)
	}
	for _, a := range req.Addresses {
		if !found[a] {
			res.Refused = append(res.Refused, Refusal{Address: a, Reason: "no drift in the plan for this address"})
		}
	}
	if err := w.finish(res); err != nil {
		return nil, err
	}
	return res, nil
}

// resource accepts the drift of one resource instance.
func (w *workspace) resource(rc *tfjson.ResourceChange, res *Result) {
	refuse := func(attr, reason string) {
		res.Refused = append(res.Refused, Refusal{Address: rc.Address, Attribute: attr, Reason: reason})
	}
	ch := rc.Change
	if ch.Actions.Delete() || ch.After == nil {
		if !w.deletions {
			refuse("", deletionOnRequest)
			return
		}
		w.deletion(rc, res)
		return
	}
	if rc.Index != nil {
		refuse("", "an instance of count or for_each: its block sets every instance, so the change would change the others")
		return
	}
	before, _ := ch.Before.(map[string]any)
	after, _ := ch.After.(map[string]any)
	if before == nil || after == nil {
		refuse("", "the plan does not carry this resource's values")
		return
	}
	mod, err := w.module(rc.ModuleAddress)
	if err != nil {
		refuse("", err.Error())
		return
	}
	block := mod.resource(rc.Type, rc.Name)
	if block == nil {
		refuse("", "its resource block is not in the module's files")
		return
	}
	for _, attr := range sortedKeys(after) {
		if reflect.DeepEqual(before[attr], after[attr]) {
			continue
		}
		if sensitive(ch.BeforeSensitive, attr) || sensitive(ch.AfterSensitive, attr) {
			refuse(attr, "sensitive: its value is never written or shown")
			continue
		}
		a, ok := block.Body.Attributes[attr]
		if !ok {
			reason := "not set in the resource block (the provider's value): adding it is not proposed"
			for _, nb := range block.Body.Blocks {
				if nb.Type == attr {
					reason = "set by nested " + attr + " blocks, which are not rewritten"
				}
			}
			refuse(attr, reason)
			continue
		}
		w.trace(mod, a.Expr, before[attr], after[attr], target{address: rc.Address, attribute: attr, res: res}, KindLiteral)
	}
}

// target is the attribute being traced and where its outcome goes.
type target struct {
	address, attribute string
	res                *Result
}

func (t target) refuse(reason string) {
	t.res.Refused = append(t.res.Refused, Refusal{Address: t.address, Attribute: t.attribute, Reason: reason})
}

// sensitive reports whether a *_sensitive value marks attr (or anything
// inside it).
func sensitive(marks any, attr string) bool {
	m, ok := marks.(map[string]any)
	if !ok {
		return marks == true
	}
	return anyTrue(m[attr])
}

func anyTrue(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case map[string]any:
		for _, x := range v {
			if anyTrue(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if anyTrue(x) {
				return true
			}
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Apply writes the changed files into the root module's directory.
func (r *Result) Apply() error {
	for _, f := range r.Files {
		p := filepath.Join(r.dir, f.Path)
		info, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		if err := os.WriteFile(p, f.New, info.Mode().Perm()); err != nil {
			return fmt.Errorf("accept: %w", err)
		}
	}
	return nil
}

// String is the accepted attribute and its place, for a person.
func (a Accepted) String() string {
	return fmt.Sprintf("%s: %s (%s)", joinAttr(a.Address, a.Attribute), a.Where, a.Kind)
}

func (r Refusal) String() string {
	return joinAttr(r.Address, r.Attribute) + ": " + r.Reason
}

// joinAttr is ADDRESS.ATTRIBUTE, or ADDRESS for a whole resource.
func joinAttr(address, attribute string) string {
	if attribute == "" {
		return address
	}
	return address + "." + attribute
}

// rangeText is FILE:LINE of rng relative to dir.
func rangeText(dir string, rng hcl.Range) string {
	rel, err := filepath.Rel(dir, rng.Filename)
	if err != nil {
		rel = rng.Filename
	}
	return fmt.Sprintf("%s:%d", filepath.ToSlash(rel), rng.Start.Line)
}

// exprKind names an expression the trace cannot invert.
func exprKind(e hclsyntax.Expression) string {
	switch e := e.(type) {
	case *hclsyntax.FunctionCallExpr:
		return "a function call (" + e.Name + ")"
	case *hclsyntax.ConditionalExpr:
		return "a conditional expression"
	case *hclsyntax.ForExpr:
		return "a for expression"
	case *hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr:
		return "a string template with interpolations"
	case *hclsyntax.BinaryOpExpr, *hclsyntax.UnaryOpExpr:
		return "an arithmetic or logical expression"
	case *hclsyntax.SplatExpr:
		return "a splat expression"
	case *hclsyntax.IndexExpr, *hclsyntax.RelativeTraversalExpr:
		return "an index into another value"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", e), "*hclsyntax.")
}
