package planfile

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/source"
)

// manifestRecord is one entry of tfconfig/modules.json. Key is the module
// path with its call names joined by "." ("" for the root module, "a.b"
// for module "b" called by module "a").
type manifestRecord struct {
	Key string `json:"Key"`
}

var (
	fileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "resource", LabelNames: []string{"type", "name"}},
		{Type: "data", LabelNames: []string{"type", "name"}},
		{Type: "module", LabelNames: []string{"name"}},
		{Type: "check", LabelNames: []string{"name"}},
		{Type: "ephemeral", LabelNames: []string{"type", "name"}},
	}}
	// A check block may hold one scoped data block, which Terraform and
	// OpenTofu list among the module's data resources.
	checkSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "data", LabelNames: []string{"type", "name"}},
	}}
)

// readConfig reads the configuration snapshot: starting at the root module
// it follows module blocks to their snapshot modules, as Terraform loads a
// configuration from a plan file, and adds every resource and data block
// with its module-relative address prefixed by "module.NAME." per call.
func readConfig(files []*zip.File, manifest *zip.File, limit int64, c *collector) error {
	src, err := readMember(manifest, limit)
	if err != nil {
		return err
	}
	var records []manifestRecord
	if err := json.Unmarshal(src, &records); err != nil {
		return fmt.Errorf("%s: malformed JSON", manifest.Name)
	}
	modules := make(map[string][]*zip.File, len(records))
	for _, r := range records {
		if _, ok := modules[r.Key]; !ok {
			modules[r.Key] = nil
		}
	}
	for _, f := range files {
		rel, ok := strings.CutPrefix(f.Name, memberModulePfx)
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rel, '/')
		if i < 0 {
			continue // not in a module directory; Terraform ignores it too
		}
		key := rel[:i]
		if _, ok := modules[key]; !ok {
			return fmt.Errorf("%s: module not recorded in %s", f.Name, memberManifest)
		}
		modules[key] = append(modules[key], f)
	}
	if _, ok := modules[""]; !ok {
		return fmt.Errorf("%s: no root module", memberManifest)
	}

	type pending struct{ key, prefix string }
	queue := []pending{{"", ""}}
	seen := map[string]bool{"": true}
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		calls, err := readModule(modules[m.key], limit, m.prefix, c)
		if err != nil {
			return err
		}
		for _, name := range calls {
			key := name
			if m.key != "" {
				key = m.key + "." + name
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			if _, ok := modules[key]; !ok {
				return fmt.Errorf("module %q is called but not in the snapshot", key)
			}
			queue = append(queue, pending{key, m.prefix + "module." + name + "."})
		}
	}
	return nil
}

// readModule adds the resources of one module's primary files and returns
// the names of the modules it calls, sorted.
func readModule(files []*zip.File, limit int64, prefix string, c *collector) ([]string, error) {
	var calls []string
	for _, f := range primaryFiles(files) {
		src, err := readMember(f, limit)
		if err != nil {
			return nil, err
		}
		fc, err := readFile(f.Name, src)
		if err != nil {
			return nil, err
		}
		for _, r := range fc.resources {
			c.add(prefix+resourceAddr(r.mode, r.typ, r.name), r.mode, r.typ, drift.SeenInConfig)
		}
		calls = append(calls, fc.calls...)
	}
	slices.Sort(calls)
	return slices.Compact(calls), nil
}

// configExts are the configuration file extensions, longest first.
// Terraform reads .tf and .tf.json; OpenTofu also reads .tofu and
// .tofu.json, and a .tofu file shadows the .tf file of the same name.
var configExts = []string{".tofu.json", ".tf.json", ".tofu", ".tf"}

func splitExt(name string) (base, ext string) {
	for _, e := range configExts {
		if b, ok := strings.CutSuffix(name, e); ok {
			return b, e
		}
	}
	return name, ""
}

// primaryFiles returns the module's files that can declare resources: the
// configuration files that are neither override files (which may only
// change blocks declared elsewhere), editor leftovers, nor .tf files shadowed
// by a .tofu file of the same name.
func primaryFiles(files []*zip.File) []*zip.File {
	names := make(map[string]bool, len(files))
	for _, f := range files {
		names[f.Name] = true
	}
	var out []*zip.File
	for _, f := range files {
		dir, name := f.Name[:strings.LastIndexByte(f.Name, '/')+1], f.Name[strings.LastIndexByte(f.Name, '/')+1:]
		base, ext := splitExt(name)
		switch {
		case ext == "":
			continue
		case strings.HasPrefix(name, ".") || strings.HasPrefix(name, "#") || strings.HasSuffix(name, "~"):
			continue
		case base == "override" || strings.HasSuffix(base, "_override"):
			continue
		case ext == ".tf" && names[dir+base+".tofu"], ext == ".tf.json" && names[dir+base+".tofu.json"]:
			continue
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *zip.File) int { return strings.Compare(a.Name, b.Name) })
	return out
}

type configResource struct{ mode, typ, name string }

type fileContent struct {
	resources []configResource
	calls     []string
}

// readFile reads the block headers of one configuration file: native
// syntax, or JSON for .json files. No expression is evaluated.
func readFile(name string, src []byte) (fileContent, error) {
	f, err := source.ParseConfig(name, src)
	if err != nil {
		return fileContent{}, err
	}
	content, _, diags := f.Body.PartialContent(fileSchema)
	if err := source.DiagError(name, diags); err != nil {
		return fileContent{}, err
	}
	var fc fileContent
	addResource := func(b *hcl.Block) error {
		mode := modeManaged
		if b.Type == "data" {
			mode = modeData
		}
		if !hclsyntax.ValidIdentifier(b.Labels[0]) || !hclsyntax.ValidIdentifier(b.Labels[1]) {
			return blockError(name, b, "invalid resource type or name")
		}
		fc.resources = append(fc.resources, configResource{mode, b.Labels[0], b.Labels[1]})
		return nil
	}
	for _, b := range content.Blocks {
		switch b.Type {
		case "resource", "data":
			if err := addResource(b); err != nil {
				return fileContent{}, err
			}
		case "ephemeral":
			// OpenTofu's show -json lists ephemeral resources among the
			// configuration's resources, Terraform's does not: which tool
			// wrote the file is not recorded in it.
			return fileContent{}, fmt.Errorf("%w: %w", ErrNeedsShow, blockError(name, b, "an ephemeral resource"))
		case "module":
			if !hclsyntax.ValidIdentifier(b.Labels[0]) {
				return fileContent{}, blockError(name, b, "invalid module name")
			}
			fc.calls = append(fc.calls, b.Labels[0])
		case "check":
			inner, _, diags := b.Body.PartialContent(checkSchema)
			if err := source.DiagError(name, diags); err != nil {
				return fileContent{}, err
			}
			for _, d := range inner.Blocks {
				if err := addResource(d); err != nil {
					return fileContent{}, err
				}
			}
		}
	}
	return fc, nil
}

func blockError(name string, b *hcl.Block, msg string) error {
	return fmt.Errorf("%s:%d,%d: %s", name, b.DefRange.Start.Line, b.DefRange.Start.Column, msg)
}
