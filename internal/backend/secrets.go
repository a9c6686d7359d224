package backend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/driftwatch/driftwatch/internal/source"
)

// ConfigFileReader reads backend_config files the way Check does: a
// relative name against dir (the module directory), confined to root (the
// source tree) when it lies in it; a file outside root is the operator's
// and is read unconfined, but as safely (no pipe, device or oversized
// file). With dir empty, only absolute names are read. The error never
// quotes the entry: an entry without "=" may be a mistyped secret.
func ConfigFileReader(ctx context.Context, root, dir string) func(name string) ([]byte, error) {
	if root == "" {
		root = dir
	}
	return func(name string) ([]byte, error) {
		if !filepath.IsAbs(name) {
			if dir == "" {
				return nil, errors.New("read file: relative path without a module directory")
			}
			name = filepath.Join(dir, name)
		}
		src, err := source.ReadFile(ctx, confinedTo(root, name), name, source.MaxConfigFileSize)
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = fmt.Errorf("read file: %w", pe.Err)
		}
		return src, err
	}
}

// ConfigSecrets returns the values of a workspace's backend_config entries,
// every one of which is a secret for redaction (a state backend's address
// may carry a token, "address=https://host/state?token=..."):
//
//   - of a "key=value" entry, the whole entry and its value;
//   - of a file entry (read with read; nil reads no file), every value the
//     file sets, in nested blocks too, parsed as HCL (or JSON, for a .json
//     name), or line by line ("key = value") when it does not parse, since
//     Terraform then quotes the offending lines;
//   - of a value that is a URL, also its user info's name and password and
//     its query parameters' values: Terraform may print them apart, or
//     escaped differently.
//
// Booleans and numbers ("encrypt=true", "max_retries=5") are not returned
// (the whole entry is): they are no secrets and would shred ordinary text.
// It never fails: a file that cannot be read or parsed yields what it can
// (init reports the file itself).
func ConfigSecrets(entries []string, read func(name string) ([]byte, error)) []string {
	var out []string
	for _, e := range entries {
		if _, v, ok := strings.Cut(e, "="); ok {
			out = append(out, e)
			out = appendValue(out, v)
			continue
		}
		if read == nil {
			continue
		}
		src, err := read(e)
		if err != nil || len(src) == 0 {
			continue
		}
		out = append(out, fileValues(e, src)...)
	}
	slices.Sort(out)
	return slices.DeleteFunc(slices.Compact(out), func(s string) bool { return s == "" })
}

// appendValue appends v (and v without surrounding space or quotes, and
// the secret parts of a URL) unless it is trivial.
func appendValue(out []string, v string) []string {
	vals := []string{v}
	if t := strings.Trim(strings.TrimSpace(v), `"'`); t != v {
		vals = append(vals, t)
	}
	for _, s := range vals {
		if trivial(s) {
			continue
		}
		out = append(out, s)
		if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.Scheme != "" {
			if u.User != nil {
				out = append(out, u.User.Username())
				if p, ok := u.User.Password(); ok {
					out = append(out, p)
				}
			}
			out = append(out, u.RawQuery, u.Fragment)
			for _, vs := range u.Query() {
				for _, q := range vs {
					if !trivial(q) {
						out = append(out, q)
					}
				}
			}
		}
	}
	return out
}

// trivial reports whether v is no secret: empty, a boolean or a number.
func trivial(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || v == "true" || v == "false" {
		return true
	}
	_, err := strconv.ParseFloat(v, 64)
	return err == nil
}

// fileValues returns the values a backend_config file sets.
func fileValues(name string, src []byte) []string {
	f, err := source.ParseConfig(name, src)
	if err != nil {
		return lineValues(src)
	}
	var out []string
	if b, ok := f.Body.(*hclsyntax.Body); ok {
		return syntaxValues(out, b)
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() && len(attrs) == 0 {
		return lineValues(src)
	}
	for _, a := range attrs {
		out = exprValues(out, a.Expr)
	}
	return out
}

// syntaxValues appends the values of b's attributes and nested blocks.
func syntaxValues(out []string, b *hclsyntax.Body) []string {
	for _, a := range b.Attributes {
		out = exprValues(out, a.Expr)
	}
	for _, blk := range b.Blocks {
		out = syntaxValues(out, blk.Body)
	}
	return out
}

// exprValues appends the leaves of a static expression (strings, numbers
// as text); an expression that is not static yields nothing (Terraform
// refuses it anyway).
func exprValues(out []string, expr hcl.Expression) []string {
	v, diags := expr.Value(&hcl.EvalContext{})
	if diags.HasErrors() {
		return out
	}
	return leaves(out, v)
}

// leaves appends the primitive values inside v as strings.
func leaves(out []string, v cty.Value) []string {
	if v.IsNull() || !v.IsKnown() {
		return out
	}
	t := v.Type()
	switch {
	case t.IsPrimitiveType():
		if s, err := convert.Convert(v, cty.String); err == nil && s.IsKnown() && !s.IsNull() {
			out = appendValue(out, s.AsString())
		}
	case t.IsListType(), t.IsSetType(), t.IsTupleType(), t.IsMapType(), t.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = leaves(out, e)
		}
	}
	return out
}

// lineValues reads "key = value" (or "key: value", "key=value") lines
// of a file that does not parse: the value up to a closing quote, or
// up to a comment.
func lineValues(src []byte) []string {
	var out []string
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "//") {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			continue
		}
		v := strings.TrimSpace(line[i+1:])
		if q := v[:min(1, len(v))]; q == `"` || q == "'" {
			if end := strings.Index(v[1:], q); end >= 0 {
				v = v[1 : end+1]
			} else {
				v = v[1:]
			}
		} else if c := strings.Index(v, " #"); c >= 0 {
			v = strings.TrimSpace(v[:c])
		}
		out = appendValue(out, v)
	}
	return out
}
