package source

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Location is where a block is declared: a file (the module directory
// joined with the file's name, so relative when the directory was) and its
// 1-based line.
type Location struct {
	File string
	Line int
	// Exact is true when the address's own block was found; false for a
	// fallback (the calling module block of a module whose source is not
	// local, or the root module's main.tf, line 1).
	Exact bool
}

// Locator finds the block that declares a resource address in a root
// module's source by a static read of its .tf and .tf.json files: no
// variables are evaluated and no value is kept, only block positions and
// the literal source of module calls. Each module directory is read once.
// A Locator is not safe for concurrent use.
type Locator struct {
	modules map[string]*moduleIndex
}

// NewLocator returns an empty Locator.
func NewLocator() *Locator {
	return &Locator{modules: map[string]*moduleIndex{}}
}

// Locate returns where address is declared in the root module at root.
// Instance keys ([0], ["a.b"]) are ignored; data.T.N and ephemeral.T.N are
// data and ephemeral blocks (a data block scoped in a check block counts);
// backend.T is the backend "T" block, else the backend or cloud block,
// else the first terraform block (backend findings name the effective
// backend type, "local" when there is no backend block); check.N,
// output.N and var.N are the check, output and variable blocks (the
// addresses of check findings), and module.N alone is the module block
// that calls N. Each
// module.NAME step is followed into the module's directory when its
// source is a local path ("./…" or "../…"); otherwise the module block in
// its caller is the answer. When nothing better is found the answer is the
// root module's main.tf, or its first configuration file in name order,
// line 1. Files that cannot be read or parsed are skipped; a done ctx
// stops the reads and gives the fallback.
func (l *Locator) Locate(ctx context.Context, root, address string) Location {
	rootMod := l.module(ctx, root)
	best := rootMod.fallback(root)
	steps := splitAddress(address)
	dir, mod := root, rootMod
	for len(steps) >= 2 && steps[0] == "module" {
		b, ok := mod.blocks["module."+steps[1]]
		if !ok {
			return best
		}
		best = b
		src, ok := mod.sources[steps[1]]
		if !ok || !isLocalSource(src) {
			return best
		}
		dir = filepath.Join(dir, filepath.FromSlash(src))
		mod = l.module(ctx, dir)
		steps = steps[2:]
	}
	var keys []string
	switch {
	case len(steps) >= 3 && (steps[0] == "data" || steps[0] == "ephemeral"):
		keys = []string{steps[0] + "." + steps[1] + "." + steps[2]}
	case len(steps) == 2 && steps[0] == "backend":
		keys = []string{"backend." + steps[1], "backend", "resource.backend." + steps[1], "terraform"}
	case len(steps) == 2 && (steps[0] == "check" || steps[0] == "output"):
		keys = []string{steps[0] + "." + steps[1]}
	case len(steps) == 2 && steps[0] == "var":
		keys = []string{"variable." + steps[1]}
	case len(steps) >= 2:
		keys = []string{"resource." + steps[0] + "." + steps[1]}
	}
	for _, k := range keys {
		if b, ok := mod.blocks[k]; ok {
			return b
		}
	}
	return best
}

// isLocalSource reports whether a module source is a local path, by
// Terraform's rule: it starts with ./ or ../ (either separator).
func isLocalSource(s string) bool {
	for _, p := range []string{"./", "../", `.\`, `..\`} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// splitAddress splits a resource address at its dots and drops instance
// keys: `module.a["x.y"].aws_s3_bucket.b[0]` gives module, a,
// aws_s3_bucket, b. A dot, bracket or escaped quote inside a quoted key
// does not split.
func splitAddress(addr string) []string {
	var (
		out               []string
		cur               strings.Builder
		inKey, inQ, escap bool
	)
	for _, r := range addr {
		switch {
		case inKey && inQ:
			switch {
			case escap:
				escap = false
			case r == '\\':
				escap = true
			case r == '"':
				inQ = false
			}
		case inKey:
			switch r {
			case '"':
				inQ = true
			case ']':
				inKey = false
			}
		case r == '[':
			inKey = true
		case r == '.':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(out, cur.String())
}

// moduleIndex is what a module directory declares: block positions keyed
// "resource.T.N", "data.T.N", "ephemeral.T.N", "module.N", "check.N",
// "output.N", "variable.N", "backend.T",
// "backend" (the first backend or cloud block) and "terraform" (the first
// terraform block), the literal source of
// each module call, and its configuration files in name order.
type moduleIndex struct {
	files   []string
	blocks  map[string]Location
	sources map[string]string
}

var (
	locateFileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "resource", LabelNames: []string{"type", "name"}},
		{Type: "data", LabelNames: []string{"type", "name"}},
		{Type: "ephemeral", LabelNames: []string{"type", "name"}},
		{Type: "module", LabelNames: []string{"name"}},
		{Type: "check", LabelNames: []string{"name"}},
		{Type: "output", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "terraform"},
	}}
	locateCheckSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "data", LabelNames: []string{"type", "name"}},
	}}
	locateTerraformSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "backend", LabelNames: []string{"type"}},
		{Type: "cloud"},
	}}
	locateModuleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source"}}}
)

// module returns dir's index, reading it on first use.
func (l *Locator) module(ctx context.Context, dir string) *moduleIndex {
	key := filepath.Clean(dir)
	if m, ok := l.modules[key]; ok {
		return m
	}
	m := &moduleIndex{blocks: map[string]Location{}, sources: map[string]string{}}
	l.modules[key] = m
	entries, err := os.ReadDir(dir)
	if err != nil {
		return m
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		isConfig := strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json")
		if e.IsDir() || !isConfig || strings.HasPrefix(n, ".") || strings.HasSuffix(n, "~") {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	m.files = names
	// Override files change blocks declared elsewhere; they are read last
	// so that the block's first declaration wins.
	ordered := append([]string(nil), names...)
	sort.SliceStable(ordered, func(i, j int) bool { return !isOverride(ordered[i]) && isOverride(ordered[j]) })
	for _, n := range ordered {
		if ctx.Err() != nil {
			return m
		}
		src, err := ReadFile(ctx, dir, n, MaxConfigFileSize)
		if err != nil {
			continue
		}
		f, err := ParseConfig(n, src)
		if err != nil {
			continue
		}
		m.add(filepath.Join(dir, n), f.Body)
	}
	return m
}

// isOverride reports whether a configuration file is an override file.
func isOverride(name string) bool {
	base := strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".tf")
	return base == "override" || strings.HasSuffix(base, "_override")
}

// add records the blocks of one file's body.
func (m *moduleIndex) add(path string, body hcl.Body) {
	// Diagnostics are ignored: a malformed block is left out, and the
	// well-formed ones around it are still found.
	content, _, _ := body.PartialContent(locateFileSchema)
	if content == nil {
		return
	}
	put := func(key string, b *hcl.Block) {
		if _, ok := m.blocks[key]; !ok {
			m.blocks[key] = Location{File: path, Line: b.DefRange.Start.Line, Exact: true}
		}
	}
	for _, b := range content.Blocks {
		switch b.Type {
		case "resource", "data", "ephemeral":
			put(b.Type+"."+b.Labels[0]+"."+b.Labels[1], b)
		case "module":
			put("module."+b.Labels[0], b)
			if _, ok := m.sources[b.Labels[0]]; ok {
				continue
			}
			mc, _, _ := b.Body.PartialContent(locateModuleSchema)
			if mc == nil {
				continue
			}
			if a, ok := mc.Attributes["source"]; ok {
				if v, diags := a.Expr.Value(nil); !diags.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
					m.sources[b.Labels[0]] = v.AsString()
				}
			}
		case "output", "variable":
			put(b.Type+"."+b.Labels[0], b)
		case "check":
			put("check."+b.Labels[0], b)
			cc, _, _ := b.Body.PartialContent(locateCheckSchema)
			if cc == nil {
				continue
			}
			for _, d := range cc.Blocks {
				put("data."+d.Labels[0]+"."+d.Labels[1], d)
			}
		case "terraform":
			put("terraform", b)
			tc, _, _ := b.Body.PartialContent(locateTerraformSchema)
			if tc == nil {
				continue
			}
			for _, d := range tc.Blocks {
				if d.Type == "backend" {
					put("backend."+d.Labels[0], d)
				} else {
					put("backend.cloud", d)
				}
				put("backend", d)
			}
		}
	}
}

// fallback is the root module's main.tf (or its first configuration file
// in name order), line 1.
func (m *moduleIndex) fallback(dir string) Location {
	name := "main.tf"
	if len(m.files) > 0 && !slices.Contains(m.files, name) {
		name = m.files[0]
	}
	return Location{File: filepath.Join(dir, name), Line: 1}
}
