package tfsession

import (
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// LockFile is the dependency lock file init writes in a module directory.
const LockFile = ".terraform.lock.hcl"

// Providers reads the provider versions init selected from dir's lock
// file: source address (registry.terraform.io/hashicorp/aws) to version.
// A missing or unreadable file, or one that does not parse, is none (nil):
// the versions only date drift (incident/group's provider cause), they
// never fail a run.
func Providers(dir string) map[string]string {
	src, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		return nil
	}
	f, diags := hclsyntax.ParseConfig(src, LockFile, hcl.InitialPos)
	if diags.HasErrors() {
		return nil
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, b := range body.Blocks {
		if b.Type != "provider" || len(b.Labels) != 1 {
			continue
		}
		attr, ok := b.Body.Attributes["version"]
		if !ok {
			continue
		}
		v, diags := attr.Expr.Value(nil)
		if diags.HasErrors() || !v.Type().Equals(cty.String) || v.IsNull() {
			continue
		}
		out[b.Labels[0]] = v.AsString()
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
