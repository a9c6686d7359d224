package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/driftwatch/driftwatch/internal/source"
)

// SensitiveValues returns the values the run will give the root module's
// variables declared `sensitive = true`, as far as they can be read
// statically: from the var files Terraform loads itself (terraform.tfvars,
// *.auto.tfvars and their .json forms), from the workspace's var_files and
// vars, and from TF_VAR_ entries of env. Strings and numbers are returned,
// also nested in lists, maps and objects (bools are not: "true" is no
// secret), so that the redactor removes them from logs and error texts:
// providers' errors and provisioners print values Terraform itself would
// show as "(sensitive value)".
//
// moduleDir lies in the source tree root (SourceDir), and every file is
// read with source.ReadFile confined to it: a .tf file that is a named
// pipe, or a symlink to /dev/zero or out of the tree, is refused rather
// than read. Only a var_files entry outside root (the operator's own file)
// is read unconfined, but as safely otherwise. A done ctx stops the reads.
//
// It never fails: a file it cannot read or parse is skipped (init or plan
// reports it properly), which can only make redaction weaker, never break a
// run. Values of variables not declared sensitive are not returned.
func SensitiveValues(ctx context.Context, root, moduleDir string, varFiles []string, vars, env map[string]string) []string {
	if root == "" {
		root = moduleDir
	}
	r := &hclReader{ctx: ctx, root: root, p: hclparse.NewParser()}
	names := r.sensitiveVariables(moduleDir)
	if len(names) == 0 {
		return nil
	}
	var out []string
	add := func(name string, v cty.Value) {
		if names[name] {
			out = appendLeaves(out, v)
		}
	}
	files := autoVarFiles(moduleDir)
	for _, f := range varFiles {
		if !filepath.IsAbs(f) {
			f = filepath.Join(moduleDir, f)
		}
		files = append(files, f)
	}
	for _, f := range files {
		attrs := r.varFileAttributes(f)
		for name, a := range attrs {
			v, diags := a.Expr.Value(nil)
			if !diags.HasErrors() {
				add(name, v)
			}
		}
	}
	for name, v := range vars {
		add(name, cty.StringVal(v))
	}
	for k, v := range env {
		if name, ok := strings.CutPrefix(k, "TF_VAR_"); ok {
			add(name, cty.StringVal(v))
		}
	}
	slices.Sort(out)
	return slices.DeleteFunc(slices.Compact(out), func(s string) bool { return s == "" })
}

var variableSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "variable", LabelNames: []string{"name"}}}}

var sensitiveSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "sensitive"}}}

// sensitiveVariables reads the root module's variable blocks and returns
// the names of those with a literal `sensitive = true`.
func (r *hclReader) sensitiveVariables(dir string) map[string]bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := map[string]bool{}
	for _, e := range entries {
		if r.ctx.Err() != nil {
			return names
		}
		n := e.Name()
		if e.IsDir() || (!strings.HasSuffix(n, ".tf") && !strings.HasSuffix(n, ".tf.json")) {
			continue
		}
		f := r.parseFile(filepath.Join(dir, n))
		if f == nil {
			continue
		}
		content, _, _ := f.Body.PartialContent(variableSchema)
		if content == nil {
			continue
		}
		for _, b := range content.Blocks {
			c, _, _ := b.Body.PartialContent(sensitiveSchema)
			if c == nil || c.Attributes["sensitive"] == nil {
				continue
			}
			v, diags := c.Attributes["sensitive"].Expr.Value(nil)
			if diags.HasErrors() {
				continue
			}
			if v, err := convert.Convert(v, cty.Bool); err == nil && v.IsKnown() && !v.IsNull() && v.True() {
				names[b.Labels[0]] = true
			}
		}
	}
	return names
}

// autoVarFiles lists the var files Terraform loads without being told, in
// its order.
func autoVarFiles(dir string) []string {
	var out []string
	for _, n := range []string{"terraform.tfvars", "terraform.tfvars.json"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			out = append(out, filepath.Join(dir, n))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".auto.tfvars") || strings.HasSuffix(n, ".auto.tfvars.json")) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// hclReader parses a workspace's files, read with source.ReadFile.
type hclReader struct {
	ctx  context.Context
	root string
	p    *hclparse.Parser
}

// parseFile reads and parses path; nil if it cannot be read or parsed.
func (r *hclReader) parseFile(path string) *hcl.File {
	root := r.root
	if rel, err := filepath.Rel(root, path); err != nil || !filepath.IsLocal(rel) {
		// Not part of the source: an absolute (or ../) var_files entry of
		// the operator's, whose location is trusted.
		root = string(filepath.Separator)
	}
	src, err := source.ReadFile(r.ctx, root, path, source.MaxConfigFileSize)
	if err != nil {
		return nil
	}
	var f *hcl.File
	if strings.HasSuffix(path, ".json") {
		f, _ = r.p.ParseJSON(src, path)
	} else {
		f, _ = r.p.ParseHCL(src, path)
	}
	if f == nil || f.Body == nil {
		return nil
	}
	return f
}

func (r *hclReader) varFileAttributes(path string) hcl.Attributes {
	f := r.parseFile(path)
	if f == nil {
		return nil
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() && attrs == nil {
		return nil
	}
	return attrs
}

// appendLeaves appends the primitive values inside v as strings.
func appendLeaves(out []string, v cty.Value) []string {
	if v.IsNull() || !v.IsKnown() {
		return out
	}
	t := v.Type()
	switch {
	case t == cty.Bool:
		// "true" in a log is not worth redacting everywhere.
	case t.IsPrimitiveType():
		if s, err := convert.Convert(v, cty.String); err == nil && s.IsKnown() && !s.IsNull() {
			out = append(out, s.AsString())
		}
	case t.IsListType(), t.IsSetType(), t.IsTupleType(), t.IsMapType(), t.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = appendLeaves(out, e)
		}
	}
	return out
}
