package backend

import (
	"fmt"
	"maps"
	"strings"

	"github.com/driftwatch/driftwatch/internal/source"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// configFile is one configuration file: its name relative to the module
// directory (used in error positions) and its bytes.
type configFile struct {
	name string
	src  []byte
}

// value is one attribute value. known is false for anything that is not a
// static literal (a variable, a function call, an unparsable conversion).
type value struct {
	v     cty.Value
	known bool
}

// config is the effective backend of a root module.
type config struct {
	typ string // backend type; "local" when implicit, "cloud" for a cloud block
	// implicit is set when the module has no backend or cloud block.
	implicit bool
	attrs    map[string]value
}

// presence says whether an attribute is set, and if so whether its value is
// statically known.
type presence int

const (
	unset presence = iota
	unknown
	known
)

// get returns the attribute converted to typ; a null value counts as unset
// (as in Terraform) and a failed conversion as unknown.
func (c config) get(name string, typ cty.Type) (cty.Value, presence) {
	a, ok := c.attrs[name]
	switch {
	case !ok:
		return cty.NilVal, unset
	case !a.known:
		return cty.NilVal, unknown
	case a.v.IsNull():
		return cty.NilVal, unset
	}
	v, err := convert.Convert(a.v, typ)
	if err != nil || !v.IsWhollyKnown() || v.IsNull() {
		return cty.NilVal, unknown
	}
	return v, known
}

// str returns a string attribute.
func (c config) str(name string) (string, presence) {
	v, p := c.get(name, cty.String)
	if p != known {
		return "", p
	}
	return v.AsString(), known
}

// boolean returns a bool attribute; the strings "true" and "false" convert.
func (c config) boolean(name string) (bool, presence) {
	v, p := c.get(name, cty.Bool)
	if p != known {
		return false, p
	}
	return v.True(), known
}

// staticValue evaluates expr without variables or functions. Anything else
// is unknown; the diagnostics are dropped because they may quote the
// expression.
func staticValue(expr hcl.Expression) value {
	if len(expr.Variables()) > 0 {
		return value{}
	}
	// A non-nil, empty context makes JSON strings parse as templates (with a
	// nil context they are taken literally) while still refusing variables
	// and function calls.
	v, diags := expr.Value(&hcl.EvalContext{})
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return value{}
	}
	return value{v: v, known: true}
}

// parseFile parses one file (source.ParseConfig).
func parseFile(s configFile) (*hcl.File, error) {
	return source.ParseConfig(s.name, s.src)
}

// attributes returns the attributes of body, ignoring nested blocks (such
// as s3's assume_role or endpoints), which no check reads.
func attributes(body hcl.Body, name string) (map[string]value, error) {
	if b, ok := body.(*hclsyntax.Body); ok {
		out := make(map[string]value, len(b.Attributes))
		for n, a := range b.Attributes {
			out[n] = staticValue(a.Expr)
		}
		return out, nil
	}
	// JSON cannot tell a nested block from an object value: everything is an
	// attribute, and an object value is simply never read.
	attrs, diags := body.JustAttributes()
	if err := source.DiagError(name, diags); err != nil {
		return nil, err
	}
	out := make(map[string]value, len(attrs))
	for n, a := range attrs {
		out[n] = staticValue(a.Expr)
	}
	return out, nil
}

var (
	rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "terraform"}}}
	tfSchema   = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "backend", LabelNames: []string{"type"}},
		{Type: "cloud"},
	}}
)

// stateBlock is one backend or cloud block.
type stateBlock struct {
	typ  string
	body hcl.Body
	file string
	pos  string
}

// blocks returns the backend and cloud blocks of one file.
func blocks(s configFile) ([]stateBlock, error) {
	f, err := parseFile(s)
	if err != nil {
		return nil, err
	}
	root, _, diags := f.Body.PartialContent(rootSchema)
	if err := source.DiagError(s.name, diags); err != nil {
		return nil, err
	}
	var out []stateBlock
	for _, tb := range root.Blocks {
		tc, _, diags := tb.Body.PartialContent(tfSchema)
		if err := source.DiagError(s.name, diags); err != nil {
			return nil, err
		}
		for _, b := range tc.Blocks {
			sb := stateBlock{typ: "cloud", body: b.Body, file: s.name, pos: fmt.Sprintf("%s:%d,%d", s.name, b.DefRange.Start.Line, b.DefRange.Start.Column)}
			if b.Type == "backend" {
				sb.typ = b.Labels[0]
			}
			out = append(out, sb)
		}
	}
	return out, nil
}

// isOverride reports whether a configuration file is an override file
// (override.tf, foo_override.tf, and their .tf.json forms).
func isOverride(name string) bool {
	base := strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".tf")
	return base == "override" || strings.HasSuffix(base, "_override")
}

// effectiveBackend finds the backend of a root module from its files, in
// directory order. Like Terraform, it rejects more than one backend or cloud
// block across the primary files (or within one override file), and lets a
// block in an override file replace the primary one.
func effectiveBackend(files []configFile) (config, error) {
	var (
		primary  []stateBlock
		override *stateBlock
	)
	for _, s := range files {
		bs, err := blocks(s)
		if err != nil {
			return config{}, err
		}
		if !isOverride(s.name) {
			primary = append(primary, bs...)
			continue
		}
		if len(bs) > 1 {
			return config{}, fmt.Errorf("%s: duplicate backend configuration (first at %s)", bs[1].pos, bs[0].pos)
		}
		if len(bs) == 1 {
			override = &bs[0]
		}
	}
	if len(primary) > 1 {
		return config{}, fmt.Errorf("%s: duplicate backend configuration (first at %s)", primary[1].pos, primary[0].pos)
	}
	chosen := override
	if chosen == nil && len(primary) == 1 {
		chosen = &primary[0]
	}
	if chosen == nil {
		return config{typ: "local", implicit: true, attrs: map[string]value{}}, nil
	}
	attrs, err := attributes(chosen.body, chosen.file)
	if err != nil {
		return config{}, err
	}
	return config{typ: chosen.typ, attrs: attrs}, nil
}

// parseEntry splits a backend_config entry. Like terraform init
// -backend-config, an entry with "=" is key=value (the value a literal
// string, converted to the attribute's type later), anything else is a
// file path.
func parseEntry(i int, e string) (key string, v value, isFile bool, err error) {
	k, raw, ok := strings.Cut(e, "=")
	if !ok {
		return "", value{}, true, nil
	}
	if k = strings.TrimSpace(k); k == "" {
		// The entry is not echoed: its value may be a secret.
		return "", value{}, false, fmt.Errorf("backend_config[%d]: empty key before \"=\"", i)
	}
	return k, value{v: cty.StringVal(raw), known: true}, false, nil
}

// mergeConfig applies backend_config entries to c, later entries winning.
// read returns a file entry's contents given the entry; it is the only I/O.
// Entries are ignored when the module has no backend block (Terraform does
// not apply them to the implicit local backend) and for a cloud block.
func mergeConfig(c config, entries []string, read func(string) ([]byte, error)) (config, error) {
	over := map[string]value{}
	for i, e := range entries {
		k, v, isFile, err := parseEntry(i, e)
		if err != nil {
			return config{}, err
		}
		if !isFile {
			over[k] = v
			continue
		}
		src, err := read(e)
		if err != nil {
			return config{}, fmt.Errorf("backend_config[%d]: %w", i, err)
		}
		f, err := parseFile(configFile{name: e, src: src})
		if err != nil {
			return config{}, fmt.Errorf("backend_config[%d]: %w", i, err)
		}
		attrs, err := attributes(f.Body, e)
		if err != nil {
			return config{}, fmt.Errorf("backend_config[%d]: %w", i, err)
		}
		maps.Copy(over, attrs)
	}
	if c.implicit || c.typ == "cloud" {
		return c, nil
	}
	merged := maps.Clone(c.attrs)
	maps.Copy(merged, over)
	c.attrs = merged
	return c, nil
}
