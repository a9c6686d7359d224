package accept

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// workspace is the parsed configuration: the root module and every module
// it calls from a local path, and the edits made so far.
type workspace struct {
	dir      string
	varFiles []string
	root     *module
	// calls counts the module blocks, anywhere in the tree, that call a
	// directory.
	calls map[string]int
	src   map[string][]byte // file -> contents
	edits map[string][]edit // file -> edits
	// deletions accepts deletions the plan creates again (recreated),
	// with removed blocks the tool reads (removed).
	deletions bool
	recreated map[string]bool
	removed   removedSyntax
}

// module is one module's files.
type module struct {
	dir    string
	parent *module
	call   *hclsyntax.Block // the module block calling it (nil: root)
	bodies []*hclsyntax.Body
	kids   map[string]*module // by module block name
	// remote maps a module block name to its non-local source.
	remote map[string]string
}

// edit replaces the bytes [start, end) of a file with text.
type edit struct {
	start, end int
	text       []byte
	accepted   Accepted
}

func newWorkspace(dir string, varFiles []string) (*workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	w := &workspace{dir: abs, varFiles: varFiles, calls: map[string]int{}, src: map[string][]byte{}, edits: map[string][]edit{}}
	w.root, err = w.load(abs, nil, nil, 0)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// load parses the *.tf files of dir and, recursively, the modules they
// call from local paths.
func (w *workspace) load(dir string, parent *module, call *hclsyntax.Block, depth int) (*module, error) {
	if depth > 20 {
		return nil, fmt.Errorf("accept: modules nested more than 20 deep at %s", dir)
	}
	m := &module{dir: dir, parent: parent, call: call, kids: map[string]*module{}, remote: map[string]string{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		body, err := w.parse(f)
		if err != nil {
			return nil, err
		}
		m.bodies = append(m.bodies, body)
	}
	for _, b := range m.blocks("module") {
		name := b.Labels[0]
		a, ok := b.Body.Attributes["source"]
		src := ""
		if ok {
			if v, diags := a.Expr.Value(nil); !diags.HasErrors() && v.Type().FriendlyName() == "string" && v.IsKnown() && !v.IsNull() {
				src = v.AsString()
			}
		}
		if !strings.HasPrefix(src, "./") && !strings.HasPrefix(src, "../") {
			m.remote[name] = src
			continue
		}
		kdir := filepath.Join(dir, src)
		w.calls[kdir]++
		kid, err := w.load(kdir, m, b, depth+1)
		if err != nil {
			return nil, err
		}
		m.kids[name] = kid
	}
	return m, nil
}

// parse reads and parses one HCL file (a .tf or .tfvars file).
func (w *workspace) parse(path string) (*hclsyntax.Body, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("accept: %w", err)
	}
	f, diags := hclsyntax.ParseConfig(b, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, fmt.Errorf("accept: %s", diags.Error())
	}
	w.src[path] = b
	return f.Body.(*hclsyntax.Body), nil
}

func (m *module) blocks(typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, body := range m.bodies {
		for _, b := range body.Blocks {
			if b.Type == typ {
				out = append(out, b)
			}
		}
	}
	return out
}

func (m *module) block(typ string, labels ...string) *hclsyntax.Block {
	for _, b := range m.blocks(typ) {
		if reflect.DeepEqual(b.Labels, labels) {
			return b
		}
	}
	return nil
}

func (m *module) resource(typ, name string) *hclsyntax.Block { return m.block("resource", typ, name) }

func (m *module) local(name string) *hclsyntax.Attribute {
	for _, b := range m.blocks("locals") {
		if a, ok := b.Body.Attributes[name]; ok {
			return a
		}
	}
	return nil
}

// module is the module at addr ("" or "module.a.module.b").
func (w *workspace) module(addr string) (*module, error) {
	m := w.root
	rest := addr
	for rest != "" {
		var step string
		step, rest, _ = strings.Cut(strings.TrimPrefix(rest, "module."), ".module.")
		if rest != "" {
			rest = "module." + rest
		}
		if strings.ContainsAny(step, "[]") {
			return nil, fmt.Errorf("in an instance of a module with count or for_each (%s): its block sets every instance, so the change would change the others", addr)
		}
		if src, ok := m.remote[step]; ok {
			return nil, fmt.Errorf("in module.%s, whose code comes from %q, not from this workspace's files", step, src)
		}
		kid, ok := m.kids[step]
		if !ok {
			return nil, fmt.Errorf("module.%s is not called from the workspace's files", step)
		}
		m = kid
	}
	return m, nil
}

// trace follows expr, which sets the drifted value, to a constant and
// rewrites it from before to after; kind is what the place is so far.
func (w *workspace) trace(m *module, expr hclsyntax.Expression, before, after any, t target, kind string) {
	switch e := expr.(type) {
	case *hclsyntax.ScopeTraversalExpr:
		w.traceReference(m, e, before, after, t, kind)
		return
	case *hclsyntax.ObjectConsExpr:
		bm, bok := before.(map[string]any)
		am, aok := after.(map[string]any)
		if bok && aok {
			w.traceObject(m, e, bm, am, t, kind)
			return
		}
	}
	if !constant(expr) {
		t.refuse("the value comes from " + exprKind(expr) + " at " + rangeText(w.dir, expr.Range()) + ", which cannot be rewritten to a value")
		return
	}
	if !w.editable(m, kind, t) {
		return
	}
	text, err := valueTokens(after)
	if err != nil {
		t.refuse(err.Error())
		return
	}
	rng := expr.Range()
	w.add(rng.Filename, edit{start: rng.Start.Byte, end: rng.End.Byte, text: text,
		accepted: Accepted{Address: t.address, Attribute: t.attribute, Where: rangeText(w.dir, rng), Kind: kind}}, t)
}

// editable refuses a place in a module that several module blocks call,
// unless it is a calling block's argument (kind module input): the
// change would change the other callers.
func (w *workspace) editable(m *module, kind string, t target) bool {
	if n := w.calls[m.dir]; m.parent != nil && n > 1 && kind != KindModuleInput {
		t.refuse(fmt.Sprintf("set in module %s, which %d module blocks call: the change would change the others", w.rel(m.dir), n))
		return false
	}
	return true
}

// traceReference follows var.NAME and local.NAME.
func (w *workspace) traceReference(m *module, e *hclsyntax.ScopeTraversalExpr, before, after any, t target, kind string) {
	trav := e.Traversal
	root := trav.RootName()
	name := ""
	if len(trav) == 2 {
		if a, ok := trav[1].(hcl.TraverseAttr); ok {
			name = a.Name
		}
	}
	switch {
	case root != "var" && root != "local":
		t.refuse(fmt.Sprintf("the value comes from %s at %s, a reference to another object, which cannot be rewritten", traversalText(trav), rangeText(w.dir, e.Range())))
	case name == "":
		t.refuse(fmt.Sprintf("the value comes from a part of %s at %s, which cannot be rewritten", traversalText(trav), rangeText(w.dir, e.Range())))
	case root == "local":
		a := m.local(name)
		if a == nil {
			t.refuse("local." + name + " is not in the module's files")
			return
		}
		if kind == KindLiteral {
			kind = KindLocal
		}
		w.trace(m, a.Expr, before, after, t, kind)
	case m.parent != nil:
		// A module's variable: the calling block's argument, else its default.
		if a, ok := m.call.Body.Attributes[name]; ok {
			w.trace(m.parent, a.Expr, before, after, t, KindModuleInput)
			return
		}
		w.traceDefault(m, name, before, after, t)
	default:
		w.traceRootVar(m, name, before, after, t)
	}
}

// traceRootVar finds where the root module's variable name gets its
// value: the last tfvars file that sets it (terraform.tfvars,
// *.auto.tfvars, then the workspace's var files, as Terraform reads
// them), else its default.
func (w *workspace) traceRootVar(m *module, name string, before, after any, t target) {
	files := []string{filepath.Join(w.dir, "terraform.tfvars")}
	auto, _ := filepath.Glob(filepath.Join(w.dir, "*.auto.tfvars"))
	sort.Strings(auto)
	files = append(files, auto...)
	for _, f := range w.varFiles {
		if !filepath.IsAbs(f) {
			f = filepath.Join(w.dir, f)
		}
		files = append(files, f)
	}
	var set *hclsyntax.Attribute
	for _, f := range files {
		if strings.HasSuffix(f, ".json") {
			if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(`"`+name+`"`)) {
				t.refuse("variable " + name + " may be set in the JSON file " + w.rel(f) + ", which is not rewritten")
				return
			}
			continue
		}
		if _, err := os.Stat(f); err != nil {
			continue
		}
		body, err := w.parse(f)
		if err != nil {
			t.refuse(err.Error())
			return
		}
		if a, ok := body.Attributes[name]; ok {
			set = a
		}
	}
	if set != nil {
		w.trace(m, set.Expr, before, after, t, KindTfvars)
		return
	}
	w.traceDefault(m, name, before, after, t)
}

func (w *workspace) traceDefault(m *module, name string, before, after any, t target) {
	v := m.block("variable", name)
	if v == nil {
		t.refuse("variable " + name + " is not declared in " + w.rel(m.dir))
		return
	}
	if sens, ok := v.Body.Attributes["sensitive"]; ok {
		if val, diags := sens.Expr.Value(nil); !diags.HasErrors() && val.True() {
			t.refuse("variable " + name + " is sensitive: its value is never written or shown")
			return
		}
	}
	d, ok := v.Body.Attributes["default"]
	if !ok {
		t.refuse("variable " + name + " has no default and is set outside the code (driftwatch's vars, TF_VAR_" + name + " or -var): change it there")
		return
	}
	w.trace(m, d.Expr, before, after, t, KindDefault)
}

// traceObject accepts a map attribute set by an object constructor key
// by key: a changed value is traced, a key reality added is added, a key
// reality removed is removed.
func (w *workspace) traceObject(m *module, e *hclsyntax.ObjectConsExpr, before, after map[string]any, t target, kind string) {
	items := map[string]hclsyntax.ObjectConsItem{}
	for _, it := range e.Items {
		k, diags := it.KeyExpr.Value(nil)
		if diags.HasErrors() || !k.IsKnown() || k.IsNull() || k.Type().FriendlyName() != "string" {
			t.refuse("a key of the object at " + rangeText(w.dir, it.KeyExpr.Range()) + " is an expression")
			return
		}
		items[k.AsString()] = it
	}
	base := t.attribute
	for _, k := range sortedKeys(union(before, after)) {
		bv, inB := before[k]
		av, inA := after[k]
		if inB && inA && reflect.DeepEqual(bv, av) {
			continue
		}
		kt := t
		kt.attribute = base + "." + k
		it, inConfig := items[k]
		if inA != inConfig && !w.editable(m, kind, kt) {
			continue
		}
		switch {
		case inA && inConfig:
			w.trace(m, it.ValueExpr, bv, av, kt, kind)
		case inA:
			text, err := valueTokens(av)
			if err != nil {
				kt.refuse(err.Error())
				continue
			}
			at, line := w.closingLine(e)
			line = append(append(line, keyText(k)+" = "...), text...)
			w.add(e.Range().Filename, edit{start: at, end: at, text: append(line, '\n'),
				accepted: Accepted{Address: kt.address, Attribute: kt.attribute, Where: rangeText(w.dir, e.Range()), Kind: kind + " (key added)"}}, kt)
		case inConfig:
			start, end := w.itemSpan(it)
			w.add(e.Range().Filename, edit{start: start, end: end,
				accepted: Accepted{Address: kt.address, Attribute: kt.attribute, Where: rangeText(w.dir, it.KeyExpr.Range()), Kind: kind + " (key removed)"}}, kt)
		default:
			kt.refuse("the key is set by the provider, not in the configuration")
		}
	}
}

// closingLine is where a new item of e goes: the start of the line of
// its closing brace when the brace stands alone there, else just before
// the brace after a line break (prefix).
func (w *workspace) closingLine(e *hclsyntax.ObjectConsExpr) (at int, prefix []byte) {
	src := w.src[e.Range().Filename]
	at = e.Range().End.Byte - 1
	ls := at
	for ls > 0 && (src[ls-1] == ' ' || src[ls-1] == '\t') {
		ls--
	}
	if ls > 0 && src[ls-1] == '\n' {
		return ls, nil
	}
	return at, []byte("\n")
}

// itemSpan is the bytes of an object item to remove: its whole lines
// when it stands on lines of its own, with a comma after it.
func (w *workspace) itemSpan(it hclsyntax.ObjectConsItem) (start, end int) {
	src := w.src[it.KeyExpr.Range().Filename]
	start, end = it.KeyExpr.Range().Start.Byte, it.ValueExpr.Range().End.Byte
	for end < len(src) && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	if end < len(src) && src[end] == ',' {
		end++
	}
	ls := start
	for ls > 0 && (src[ls-1] == ' ' || src[ls-1] == '\t') {
		ls--
	}
	le := end
	for le < len(src) && (src[le] == ' ' || src[le] == '\t') {
		le++
	}
	if (ls == 0 || src[ls-1] == '\n') && le < len(src) && src[le] == '\n' {
		return ls, le + 1
	}
	return start, end
}

// add records an edit, unless one already there sets the same place:
// the same text is one edit, another text a refusal.
func (w *workspace) add(file string, e edit, t target) {
	for _, o := range w.edits[file] {
		if o.start == e.start && o.end == e.end && bytes.Equal(o.text, e.text) {
			t.res.Accepted = append(t.res.Accepted, e.accepted)
			return
		}
		if e.start < o.end && o.start < e.end || e.start == e.end && o.start == e.start {
			t.refuse("set at " + e.accepted.Where + ", where " + joinAttr(o.accepted.Address, o.accepted.Attribute) + " needs another value")
			return
		}
	}
	w.edits[file] = append(w.edits[file], e)
	t.res.Accepted = append(t.res.Accepted, e.accepted)
}

// finish applies the edits to the files' contents, formatted.
func (w *workspace) finish(res *Result) error {
	for file, edits := range w.edits {
		sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
		out := append([]byte(nil), w.src[file]...)
		for _, e := range edits {
			out = append(out[:e.start:e.start], append(append([]byte(nil), e.text...), out[e.end:]...)...)
		}
		formatted := hclwrite.Format(out)
		if _, diags := hclsyntax.ParseConfig(formatted, file, hcl.InitialPos); diags.HasErrors() {
			return fmt.Errorf("accept: the rewritten %s does not parse: %s", w.rel(file), diags.Error())
		}
		res.Files = append(res.Files, File{Path: w.rel(file), Old: w.src[file], New: formatted})
	}
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	return nil
}

func (w *workspace) rel(p string) string {
	r, err := filepath.Rel(w.dir, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

// constant reports whether e is a value written out: literals, strings
// without interpolation, and lists and objects of those.
func constant(e hclsyntax.Expression) bool {
	switch e := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		return true
	case *hclsyntax.TemplateExpr:
		return e.IsStringLiteral() || len(e.Parts) == 0
	case *hclsyntax.TupleConsExpr:
		for _, x := range e.Exprs {
			if !constant(x) {
				return false
			}
		}
		return true
	case *hclsyntax.ObjectConsExpr:
		for _, it := range e.Items {
			if k, diags := it.KeyExpr.Value(nil); diags.HasErrors() || !k.IsKnown() || !constant(it.ValueExpr) {
				return false
			}
		}
		return true
	case *hclsyntax.UnaryOpExpr:
		_, lit := e.Val.(*hclsyntax.LiteralValueExpr)
		return lit && e.Op == hclsyntax.OpNegate
	}
	return false
}

// valueTokens is v (a plan's JSON value) written as HCL.
func valueTokens(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	ty, err := ctyjson.ImpliedType(b)
	if err != nil {
		return nil, fmt.Errorf("the value cannot be written: %w", err)
	}
	val, err := ctyjson.Unmarshal(b, ty)
	if err != nil {
		return nil, fmt.Errorf("the value cannot be written: %w", err)
	}
	return hclwrite.TokensForValue(val).Bytes(), nil
}

// keyText is an object key as HCL: bare when it is a plain name
// (letters, digits, underscores), else quoted.
func keyText(k string) string {
	if plainKey.MatchString(k) {
		return k
	}
	b, _ := json.Marshal(k)
	return string(b)
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func traversalText(t hcl.Traversal) string {
	var b strings.Builder
	for i, s := range t {
		switch s := s.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			b.WriteString("[…]")
		default:
			if i > 0 {
				b.WriteString("…")
			}
		}
	}
	return b.String()
}

func union(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
