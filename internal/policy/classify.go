package policy

import (
	"slices"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// IgnoreRule silences drift on resources whose address matches Address. With
// no Attributes the whole resource is silenced; otherwise only the matching
// attribute paths are, and the finding is silenced once none remain.
type IgnoreRule struct {
	Address    Glob
	Attributes []Glob
}

// Rules are a workspace's classification rules.
type Rules struct {
	// Forbidden matches managed resource types that must not be managed by
	// Terraform. The default list is the config's business, not ours.
	Forbidden []Glob
	// Ignore silences drift findings (and only drift findings).
	Ignore []IgnoreRule
}

const (
	modeManaged = string(tfjson.ManagedResourceMode)
	modeData    = string(tfjson.DataResourceMode)
)

// Classify turns a parsed plan into findings, sorted with
// drift.SortFindings:
//
//   - drift: a managed resource_drift entry with a changed path the plan
//     sets back or that relevant_attributes names (a delete always counts;
//     see driftCounts). Action is the drift action, Attributes those
//     paths: what the code manages, not what the server changed by itself.
//   - noise: irrelevant or empty drift (ignore_changes, provider null/{}
//     round trips, server-side churn such as a resource_version alone),
//     data-source reads, and output changes (address output.NAME, type
//     output, action update). A noise drift finding lists every changed
//     path.
//   - pending: a non-no-op managed resource_changes entry without a drift
//     finding for its address; Action is planparse.Change.Action.
//   - forbidden: every managed resource whose type matches r.Forbidden, from
//     configuration, prior state or planned values, once per address, with
//     SeenIn; Action is its resource_changes action, else "none". A
//     configuration address (no instance keys) is folded into the instance
//     addresses it expands to, when state or plan has any.
//   - check: a check of the configuration (planparse.Plan.Checks: a check
//     block's assertion, a resource's or output's condition, a variable's
//     validation) that did not pass. Address is the check's (instance)
//     address, Type its kind (check, resource, output or var), Action its
//     status (fail or unknown) and Detail its messages joined with "; ",
//     one line, capped with drift.CapDetail. The runner redacts the
//     messages; a check that could not be evaluated (status error, or a
//     failed data source in its block) fails the run there instead, so a
//     status error only reaches here from a runner that does not, and is
//     then a check finding with action error rather than nothing.
//
// Ignore rules then mark matching drift findings Ignored or drop ignored
// attribute paths. Attributes is never nil, so JSON shows [] not null.
func Classify(p *planparse.Plan, r Rules) []drift.Finding {
	if p == nil {
		return nil
	}
	var out []drift.Finding
	changes := map[string]planparse.Change{}
	for _, c := range p.Changes {
		if c.Deposed == "" {
			changes[c.Address] = c
		}
	}

	drifted := map[string]bool{}
	for _, d := range p.Drift {
		f := drift.Finding{
			Kind:       drift.KindNoise,
			Address:    d.Address,
			Type:       d.Type,
			Action:     d.Action(),
			Attributes: paths(d.Attributes),
		}
		if d.Mode == modeManaged {
			if kept, ok := driftCounts(p, d, changes); ok {
				f.Kind = drift.KindDrift
				f.Attributes = paths(kept)
				f.Provider = d.Provider
				drifted[d.Address] = true
				applyIgnore(&f, r.Ignore)
				f.Shape = shapeOf(d.Shape, f.Attributes)
			}
		}
		out = append(out, f)
	}

	for _, c := range p.Changes {
		f := drift.Finding{
			Address:    changeAddress(c),
			Type:       c.Type,
			Action:     c.Action(),
			Attributes: paths(c.Attributes),
		}
		switch {
		case c.Mode == modeData:
			f.Kind = drift.KindNoise
		case c.Mode != modeManaged:
			continue
		case drifted[c.Address] && c.Deposed == "":
			continue
		default:
			f.Kind = drift.KindPending
		}
		out = append(out, f)
	}

	for _, name := range p.OutputChanges {
		out = append(out, drift.Finding{
			Kind:       drift.KindNoise,
			Address:    "output." + name,
			Type:       "output",
			Action:     string(tfjson.ActionUpdate),
			Attributes: []string{},
		})
	}

	out = append(out, forbidden(p, r.Forbidden, changes)...)
	out = append(out, checks(p.Checks)...)
	drift.SortFindings(out)
	return out
}

// checkTypes maps the plan's kinds of checkable objects to a finding's
// Type.
var checkTypes = map[string]string{"check": "check", "resource": "resource", "output_value": "output", "var": "var"}

// checks returns one finding per check that did not pass.
func checks(cs []planparse.Check) []drift.Finding {
	var out []drift.Finding
	for _, c := range cs {
		if c.Status == planparse.CheckPass || c.Status == "" {
			continue
		}
		typ, ok := checkTypes[c.Kind]
		if !ok {
			typ = c.Kind
		}
		out = append(out, drift.Finding{
			Kind:       drift.KindCheck,
			Address:    c.Address,
			Type:       typ,
			Action:     c.Status,
			Attributes: []string{},
			Detail:     drift.CapDetail(strings.Join(c.Messages, "; ")),
		})
	}
	return out
}

// driftCounts decides whether a managed drift entry is real drift, and
// returns the drifted attribute paths that matter: what the code manages
// and the plan would set back, or what other objects depend on. A path
// the server changes by itself (a Kubernetes object's resource_version, a
// last-modified time) is left out: the plan either keeps the new value
// (it is computed and not configured) or leaves it unknown until apply. A
// drift whose paths are all such is noise. This is decided from the plan
// alone, with no list of attribute names per provider:
//
//   - a deleted object always counts (it has no paths);
//   - with a planned update or replace of the address, a path counts when
//     the plan changes it to a known value (set back, or set anew);
//   - with a planned delete or forget (the code no longer manages the
//     object), every path counts, as the last word on what drifted;
//   - a path counts when relevant_attributes names it (or the address
//     without paths): other changes depend on it.
func driftCounts(p *planparse.Plan, d planparse.Change, changes map[string]planparse.Change) ([]string, bool) {
	if d.Action() == string(tfjson.ActionDelete) {
		return d.Attributes, true
	}
	if len(d.Attributes) == 0 {
		// The normalised diff is empty: only null/{} style churn.
		return nil, false
	}
	c, planned := changes[d.Address]
	if planned && (c.Action() == string(tfjson.ActionDelete) || c.Action() == string(tfjson.ActionForget)) {
		return d.Attributes, true
	}
	relevant, isRelevant := p.RelevantAttributes[d.Address]
	if isRelevant && len(relevant) == 0 {
		return d.Attributes, true
	}
	var setBack []string
	if planned {
		setBack = slices.DeleteFunc(slices.Clone(c.Attributes), func(q string) bool {
			return slices.ContainsFunc(c.Unknown, func(u string) bool { return pathWithin(q, u) })
		})
	}
	var kept []string
	for _, path := range d.Attributes {
		overlaps := func(q string) bool { return pathWithin(path, q) || pathWithin(q, path) }
		if slices.ContainsFunc(setBack, overlaps) || slices.ContainsFunc(relevant, overlaps) {
			kept = append(kept, path)
		}
	}
	return kept, len(kept) > 0
}

// pathWithin reports whether attribute path p is q or lies below it, where
// list and set indices match any index: a set's elements may be numbered
// differently in the drift and in the planned change.
func pathWithin(p, q string) bool {
	ps, qs := pathSteps(p), pathSteps(q)
	if len(ps) < len(qs) {
		return false
	}
	for i, s := range qs {
		if s != ps[i] && (!isIndex(s) || !isIndex(ps[i])) {
			return false
		}
	}
	return true
}

// pathSteps splits an attribute path as planparse writes it (a.b[0]["k.x"])
// into its steps: names, [N] indices and ["..."] quoted keys.
func pathSteps(p string) []string {
	var steps []string
	for i := 0; i < len(p); {
		switch p[i] {
		case '.':
			i++
		case '[':
			j := i + 1
			if j < len(p) && p[j] == '"' {
				for j++; j < len(p) && p[j] != '"'; j++ {
					if p[j] == '\\' {
						j++
					}
				}
				j++
			}
			for j < len(p) && p[j] != ']' {
				j++
			}
			steps = append(steps, p[i:min(j+1, len(p))])
			i = j + 1
		default:
			j := i
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			steps = append(steps, p[i:j])
			i = j
		}
	}
	return steps
}

// isIndex reports whether a path step is a numeric [N] index.
func isIndex(step string) bool {
	return len(step) > 2 && step[0] == '[' && step[1] != '"'
}

// changeAddress names a change; a deposed object gets its key appended, as
// Terraform's renderer does, so it does not collide with the current one.
func changeAddress(c planparse.Change) string {
	if c.Deposed == "" {
		return c.Address
	}
	return c.Address + " (deposed object " + c.Deposed + ")"
}

func paths(ps []string) []string {
	if ps == nil {
		return []string{}
	}
	return slices.Clone(ps)
}

// applyIgnore marks f Ignored or drops its ignored attribute paths.
func applyIgnore(f *drift.Finding, rules []IgnoreRule) {
	remaining := f.Attributes
	for _, rule := range rules {
		if !rule.Address.Match(f.Address) {
			continue
		}
		if len(rule.Attributes) == 0 {
			f.Ignored = true
			return
		}
		// An attribute rule cannot silence a finding without attributes
		// (a deleted resource): that would hide the whole resource.
		remaining = slices.DeleteFunc(slices.Clone(remaining), func(path string) bool {
			return slices.ContainsFunc(rule.Attributes, func(g Glob) bool { return g.Match(path) })
		})
	}
	switch {
	case len(f.Attributes) == 0:
	case len(remaining) == 0:
		// Keep every path listed so the report says what was ignored.
		f.Ignored = true
	default:
		f.Attributes = remaining
	}
}

// forbidden returns one finding per address of a managed resource whose
// type matches a forbidden glob.
func forbidden(p *planparse.Plan, globs []Glob, changes map[string]planparse.Change) []drift.Finding {
	if len(globs) == 0 {
		return nil
	}
	isForbidden := func(typ string) bool {
		return slices.ContainsFunc(globs, func(g Glob) bool { return g.Match(typ) })
	}
	type entry struct {
		typ  string
		seen []string
	}
	var configOnly []planparse.TypedResource
	instances := map[string]*entry{}
	var order []string
	for _, res := range p.Resources {
		if res.Mode != modeManaged || !isForbidden(res.Type) {
			continue
		}
		if slices.Equal(res.SeenIn, []string{drift.SeenInConfig}) {
			configOnly = append(configOnly, res)
			continue
		}
		instances[res.Address] = &entry{typ: res.Type, seen: slices.Clone(res.SeenIn)}
		order = append(order, res.Address)
	}
	// Fold a configuration address into the instances it expands to.
	byConfig := map[string][]string{}
	for _, a := range order {
		byConfig[stripInstanceKeys(a)] = append(byConfig[stripInstanceKeys(a)], a)
	}
	for _, res := range configOnly {
		insts := byConfig[res.Address]
		if len(insts) == 0 {
			instances[res.Address] = &entry{typ: res.Type, seen: []string{drift.SeenInConfig}}
			order = append(order, res.Address)
			continue
		}
		for _, a := range insts {
			e := instances[a]
			if !slices.Contains(e.seen, drift.SeenInConfig) {
				e.seen = append([]string{drift.SeenInConfig}, e.seen...)
			}
		}
	}
	out := make([]drift.Finding, 0, len(order))
	for _, a := range order {
		e := instances[a]
		action := "none"
		if c, ok := changes[a]; ok {
			action = c.Action()
		}
		out = append(out, drift.Finding{
			Kind:       drift.KindForbidden,
			Address:    a,
			Type:       e.typ,
			Action:     action,
			Attributes: []string{},
			SeenIn:     e.seen,
		})
	}
	return out
}

// stripInstanceKeys turns an instance address such as
// module.a["x"].kubernetes_config_map.cm[0] into its configuration address
// module.a.kubernetes_config_map.cm. Keys may be quoted strings containing
// brackets and dots.
func stripInstanceKeys(addr string) string {
	if !strings.Contains(addr, "[") {
		return addr
	}
	var b strings.Builder
	for i := 0; i < len(addr); i++ {
		c := addr[i]
		if c != '[' {
			b.WriteByte(c)
			continue
		}
		// Skip to the matching ']', honouring a quoted key.
		for i++; i < len(addr) && addr[i] != ']'; i++ {
			if addr[i] != '"' {
				continue
			}
			for i++; i < len(addr) && addr[i] != '"'; i++ {
				if addr[i] == '\\' {
					i++
				}
			}
		}
	}
	return b.String()
}

// shapeOf keeps the parts of a drift entry's shape ("a: x → y; b: …")
// whose attribute is still among attrs, once ignore rules and
// ignore_changes have dropped some.
func shapeOf(shape string, attrs []string) string {
	var kept []string
	for _, part := range strings.Split(shape, "; ") {
		name, _, ok := strings.Cut(part, ": ")
		if ok && slices.ContainsFunc(attrs, func(a string) bool {
			return a == name || strings.HasPrefix(a, name+".") || strings.HasPrefix(a, name+"[")
		}) {
			kept = append(kept, part)
		}
	}
	return strings.Join(kept, "; ")
}
