package discover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/driftwatch/driftwatch/internal/source"
)

// Root is one discovered root module.
type Root struct {
	// Path is the directory relative to the tree, slash-separated ("." for
	// the tree itself).
	Path string
	// Name is the workspace name derived from Path (Name).
	Name string
	// Outside lists the local module directories the root calls, directly
	// or through its modules, that lie outside its own directory
	// (relative to the tree, or as written when they leave the tree),
	// sorted: a run that copies the root directory alone lacks them.
	Outside []string
}

// Options select and name the roots.
type Options struct {
	// Include keeps only roots whose path matches one of these globs
	// (empty: every root). Exclude drops roots matching any. Globs match
	// the slash-separated relative path: path.Match per segment, and "**"
	// for any number of segments.
	Include, Exclude []string
	// NamePrefix is prepended to every name, with a '-'.
	NamePrefix string
}

// MaxNameLength is the longest name (a DNS label).
const MaxNameLength = 63

// Match reports whether the slash-separated rel matches pattern (see
// Options). An invalid pattern matches nothing.
func Match(pattern, rel string) bool {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(rel, "/"))
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], segs[0]); err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// Name is the workspace name of the root at rel under prefix: the path
// lowercased, every run of characters other than a-z and 0-9 turned into
// one '-', trimmed of '-' ("envs/prod/network" → "envs-prod-network";
// the tree itself is "root"). A name longer than MaxNameLength is cut and
// ends with a hash of rel, so it stays unique and stable.
func Name(prefix, rel string) string {
	s := slug(rel)
	if rel == "." || rel == "" {
		s = "root"
	}
	if p := slug(prefix); p != "" {
		s = p + "-" + s
	}
	if s == "" {
		s = "x"
	}
	if len(s) <= MaxNameLength {
		return s
	}
	sum := sha256.Sum256([]byte(prefix + "\x00" + rel))
	h := hex.EncodeToString(sum[:])[:8]
	return strings.TrimRight(s[:MaxNameLength-len(h)-1], "-") + "-" + h
}

func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}

// dirInfo is what the static read found in one directory.
type dirInfo struct {
	root    bool     // a terraform or provider block
	modules []string // local module sources, relative to the tree
	// escapes are local module sources leaving the tree, as written.
	escapes []string
}

var fileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "terraform"},
	{Type: "provider", LabelNames: []string{"name"}},
	{Type: "module", LabelNames: []string{"name"}},
}}

// Find returns the roots under dir, sorted by path. A file that cannot be
// read or parsed is an error naming it (a root silently missed would be
// retired); so is a name shared by two roots.
func Find(ctx context.Context, dir string, o Options) ([]Root, error) {
	dirs := map[string]*dirInfo{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return filepath.SkipDir // .git, .terraform, …
			}
			return nil
		}
		if !d.Type().IsRegular() || (!strings.HasSuffix(name, ".tf") && !strings.HasSuffix(name, ".tf.json")) {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		info := dirs[rel]
		if info == nil {
			info = &dirInfo{}
			dirs[rel] = info
		}
		return readFile(ctx, dir, rel, name, info)
	})
	if err != nil {
		return nil, fmt.Errorf("discover in %s: %w", dir, err)
	}
	called := map[string]bool{}
	for rel, info := range dirs {
		for _, m := range info.modules {
			if m != rel {
				called[m] = true
			}
		}
	}
	var roots []Root
	byName := map[string]string{}
	rels := make([]string, 0, len(dirs))
	for rel := range dirs {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		if !dirs[rel].root || called[rel] || !o.keep(rel) {
			continue
		}
		r := Root{Path: rel, Name: Name(o.NamePrefix, rel), Outside: outside(dirs, rel)}
		if prev, dup := byName[r.Name]; dup {
			return nil, fmt.Errorf("discover in %s: roots %q and %q both get the name %q", dir, prev, rel, r.Name)
		}
		byName[r.Name] = rel
		roots = append(roots, r)
	}
	return roots, nil
}

// outside follows the local module calls from the root at rel (through
// the called directories' own calls) and returns those leaving rel.
func outside(dirs map[string]*dirInfo, rel string) []string {
	seen := map[string]bool{rel: true}
	var out []string
	queue := []string{rel}
	for len(queue) > 0 {
		info := dirs[queue[0]]
		queue = queue[1:]
		if info == nil {
			continue
		}
		out = append(out, info.escapes...)
		for _, m := range info.modules {
			if seen[m] {
				continue
			}
			seen[m] = true
			if rel != "." && m != rel && !strings.HasPrefix(m, rel+"/") {
				out = append(out, m)
			}
			queue = append(queue, m)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func (o Options) keep(rel string) bool {
	if len(o.Include) > 0 {
		in := false
		for _, p := range o.Include {
			if Match(p, rel) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	for _, p := range o.Exclude {
		if Match(p, rel) {
			return false
		}
	}
	return true
}

// readFile adds what the file rel/name declares to info.
func readFile(ctx context.Context, tree, rel, name string, info *dirInfo) error {
	fileRel := path.Join(rel, name)
	src, err := source.ReadFile(ctx, tree, filepath.FromSlash(fileRel), source.MaxConfigFileSize)
	if err != nil {
		return err
	}
	f, err := source.ParseConfig(fileRel, src)
	if err != nil {
		return err
	}
	content, _, _ := f.Body.PartialContent(fileSchema)
	for _, b := range content.Blocks {
		switch b.Type {
		case "terraform", "provider":
			info.root = true
		case "module":
			attrs, _ := b.Body.JustAttributes()
			a, ok := attrs["source"]
			if !ok {
				continue
			}
			v, diags := a.Expr.Value(nil)
			if diags.HasErrors() || v.Type() != cty.String || v.IsNull() {
				continue
			}
			s := v.AsString()
			if !isLocal(s) {
				continue
			}
			target := path.Clean(path.Join(rel, strings.ReplaceAll(s, `\`, "/")))
			if target == ".." || strings.HasPrefix(target, "../") {
				info.escapes = append(info.escapes, s) // outside the tree
				continue
			}
			info.modules = append(info.modules, target)
		}
	}
	return nil
}

// isLocal is Terraform's rule for a local module source: it starts with
// ./ or ../ (either separator).
func isLocal(s string) bool {
	for _, p := range []string{"./", "../", `.\`, `..\`} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
