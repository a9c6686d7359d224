package planparse

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Plan is the value-free summary of a plan JSON document
// (`terraform show -json PLANFILE`). It holds addresses, types, actions and
// attribute paths; it never holds an attribute value.
type Plan struct {
	FormatVersion    string
	TerraformVersion string
	// Errored is the top-level "errored" flag: the plan is incomplete
	// because planning failed.
	Errored bool
	// Applyable and Complete are nil when the producer omits them
	// (OpenTofu omits both; Terraform before 1.8 omits Complete).
	Applyable *bool
	Complete  *bool

	// Drift holds resource_drift entries (managed and data), in document
	// order.
	Drift []Change
	// Changes holds resource_changes entries whose actions are not
	// ["no-op"], plus no-op entries that import (Importing set), in
	// document order.
	Changes []Change
	// NoOp holds the addresses of the remaining ["no-op"] entries.
	NoOp []string
	// OutputChanges holds the names of outputs with a non-no-op change.
	OutputChanges []string
	// RelevantAttributes maps a resource instance address to the attribute
	// paths relevant_attributes lists for it. An address is present (maybe
	// with no paths) whenever relevant_attributes names it.
	RelevantAttributes map[string][]string
	// Resources lists every managed and data resource found in the
	// configuration (all modules, including count = 0 and empty for_each;
	// module-relative addresses joined with "module.NAME." prefixes, without
	// instance keys), in prior_state and in planned_values (instance
	// addresses), sorted by address.
	Resources []TypedResource
	// Managed lists the managed resource instances of the prior state
	// (current objects, not deposed ones) with their identity or id,
	// sorted by address: what a scan compares listed resources with.
	Managed []drift.Managed
	// Checks holds the configuration's checks (top-level "checks": check
	// blocks, resource and output conditions, variable validations) whose
	// status is not pass, in document order.
	Checks []Check
}

// Check statuses as the plan JSON spells them.
const (
	CheckPass    = "pass"
	CheckFail    = "fail"
	CheckError   = "error"
	CheckUnknown = "unknown"
)

// Check is one failing, erroring or unknown check object, or one instance
// of it when the plan lists instances (a resource with count has one per
// instance).
type Check struct {
	// Address is the check's address as Terraform displays it:
	// check.NAME, a resource (instance) address, output.NAME, var.NAME,
	// with module prefixes.
	Address string
	// Kind is the kind of checkable object as the plan names it: check,
	// resource, output_value or var.
	Kind string
	// Status is fail, error or unknown (never pass).
	Status string
	// Messages are the problems' messages, as the configuration's author
	// wrote them (they may interpolate values the author chose to show).
	Messages []string
}

// Change is one resource_changes or resource_drift entry.
type Change struct {
	Address string
	Mode    string // "managed" or "data" (tfjson.ResourceMode values)
	Type    string
	// Deposed is the deposed object key, empty for the current object.
	Deposed string
	Actions []string // tfjson.Action values, e.g. ["delete", "create"]
	// Attributes are the changed attribute paths, sorted: before/after
	// differences and, for resource_changes, values unknown until apply.
	// Computed only when both before and after are objects, so a create
	// or a delete has none.
	Attributes []string
	// Unknown are the paths among Attributes (or above them) whose planned
	// value is unknown until apply: what the provider will compute. Only
	// resource_changes have them.
	Unknown []string
	// Importing is set when the change imports an existing object.
	Importing bool
	// ActionReason is Terraform's display-only reason keyword, if any.
	ActionReason string
	// IDs (resource_drift entries only) are the drifted object's
	// identifying attributes (attribution.IDsJSON: id, arn, name, …),
	// never one the plan marks sensitive: the one set of values a Plan
	// keeps, for the attribution command's query.
	IDs map[string]string
	// Provider (resource_drift entries only) is the provider's source
	// address, e.g. registry.terraform.io/hashicorp/aws.
	Provider string
	// Shape (resource_drift entries only) is the change without its
	// values: each changed top-level attribute's JSON kind before and
	// after ("content: string → string"), what grouping compares.
	Shape string
}

// Action names the change in one word: create, update, delete, replace
// (for [delete, create] and [create, delete]), read, forget, import (a
// no-op that imports) or none (a plain no-op). Any other combination is
// its actions joined with "-".
func (c Change) Action() string {
	as := make(tfjson.Actions, len(c.Actions))
	for i, a := range c.Actions {
		as[i] = tfjson.Action(a)
	}
	switch {
	case as.NoOp() && c.Importing:
		return "import"
	case as.NoOp():
		return "none"
	case as.Create(), as.Update(), as.Delete(), as.Read(), as.Forget():
		return c.Actions[0]
	case as.Replace():
		return "replace"
	}
	return strings.Join(c.Actions, "-")
}

// IsNoOp reports whether the change does nothing on apply.
func (c Change) IsNoOp() bool {
	return len(c.Actions) == 1 && c.Actions[0] == string(tfjson.ActionNoop) && !c.Importing
}

// TypedResource is a resource address with its type and where it was seen.
type TypedResource struct {
	Address string
	Mode    string
	Type    string
	// SeenIn lists drift.SeenInConfig, drift.SeenInState and
	// drift.SeenInPlanned, in that order, for the sources that have it.
	SeenIn []string
}

// Parse reads a plan JSON document from r, streaming: it holds one
// resource_changes entry at a time, never the whole document. It rejects
// malformed or truncated JSON, documents that are not plans, and
// format_version values outside tfjson.PlanFormatVersionConstraints.
func Parse(r io.Reader) (*Plan, error) {
	p := &parser{
		s:         newScanner(r),
		plan:      &Plan{RelevantAttributes: map[string][]string{}},
		resources: map[string]*TypedResource{},
		strs:      map[string]string{},
	}
	if err := p.parse(); err != nil {
		return nil, fmt.Errorf("parse plan: %w", err)
	}
	return p.plan, nil
}

// isPlanKey reports whether k is a top-level key only a plan (not a state)
// document has.
func isPlanKey(k string) bool {
	switch k {
	case "planned_values", "resource_changes", "resource_drift", "configuration",
		"prior_state", "output_changes", "relevant_attributes":
		return true
	}
	return false
}

type parser struct {
	s         *scanner
	plan      *Plan
	resources map[string]*TypedResource
	strs      map[string]string // interned types, modes and actions
}

// errNotPlan marks documents that are valid JSON but not a plan.
var errNotPlan = errors.New("not a terraform plan")

func (p *parser) parse() error {
	s := p.s
	c, ok := s.peek()
	if !ok {
		if s.rerr != nil {
			return s.eofError()
		}
		return fmt.Errorf("%w: empty input", errNotPlan)
	}
	if c != '{' {
		if err := s.skipValue(); err != nil {
			return err
		}
		return fmt.Errorf("%w: top-level value is %s, not an object", errNotPlan, describe(c))
	}
	var sawPlanKey, sawValues, sawVersion bool
	err := s.iterObject(func(key []byte) error {
		k := string(key)
		if isPlanKey(k) {
			sawPlanKey = true
		}
		var err error
		switch k {
		case "format_version":
			sawVersion = true
			if p.plan.FormatVersion, err = s.readStringOrNull(); err == nil {
				err = checkFormatVersion(p.plan.FormatVersion)
			}
		case "terraform_version":
			p.plan.TerraformVersion, err = s.readStringOrNull()
		case "errored":
			var b *bool
			b, err = s.readBool()
			p.plan.Errored = b != nil && *b
		case "applyable":
			p.plan.Applyable, err = s.readBool()
		case "complete":
			p.plan.Complete, err = s.readBool()
		case "resource_drift":
			err = s.iterArray(func(int) error {
				return p.readChange(true)
			})
		case "resource_changes":
			err = s.iterArray(func(int) error {
				return p.readChange(false)
			})
		case "output_changes":
			err = p.readOutputChanges()
		case "relevant_attributes":
			err = s.iterArray(func(int) error {
				return p.readRelevantAttribute()
			})
		case "configuration":
			err = s.iterObject(func(key []byte) error {
				if string(key) == "root_module" {
					return p.readConfigModule("")
				}
				return s.skipValue()
			})
		case "prior_state":
			err = s.iterObject(func(key []byte) error {
				if string(key) == "values" {
					return s.iterObject(func(key []byte) error {
						if string(key) == "root_module" {
							return p.readStateModule(drift.SeenInState)
						}
						return s.skipValue()
					})
				}
				return s.skipValue()
			})
		case "planned_values":
			err = s.iterObject(func(key []byte) error {
				if string(key) == "root_module" {
					return p.readStateModule(drift.SeenInPlanned)
				}
				return s.skipValue()
			})
		case "checks":
			err = s.iterArray(func(int) error {
				return p.readCheck()
			})
		case "values":
			sawValues = true
			err = s.skipValue()
		default:
			err = s.skipValue()
		}
		return err
	})
	if err != nil {
		return err
	}
	if _, ok := s.peek(); ok {
		return s.errorf("unexpected data after the plan object")
	}
	if s.rerr != nil {
		return s.eofError()
	}
	switch {
	case !sawPlanKey && sawValues:
		return fmt.Errorf("%w: document looks like a state (has values, no planned_values or resource_changes)", errNotPlan)
	case !sawVersion:
		return fmt.Errorf("%w: format_version is missing", errNotPlan)
	case !sawPlanKey:
		return fmt.Errorf("%w: no planned_values, resource_changes or configuration", errNotPlan)
	}
	p.finish()
	return nil
}

var errVersion = errors.New("unsupported plan format version")

func checkFormatVersion(v string) error {
	if v == "" {
		return fmt.Errorf("%w: format_version is empty", errNotPlan)
	}
	constraint, err := version.NewConstraint(tfjson.PlanFormatVersionConstraints)
	if err != nil {
		return fmt.Errorf("format version constraint: %w", err)
	}
	ver, err := version.NewVersion(v)
	if err != nil {
		return fmt.Errorf("%w %q: %w", errVersion, v, err)
	}
	if !constraint.Check(ver) {
		return fmt.Errorf("%w %q: supported versions are %q", errVersion, v, tfjson.PlanFormatVersionConstraints)
	}
	return nil
}

// intern returns a shared copy of b, for the few distinct types, modes and
// actions a plan repeats thousands of times.
func (p *parser) intern(b []byte) string {
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	p.strs[s] = s
	return s
}

func (p *parser) readInterned() (string, error) {
	s := p.s
	if c, ok := s.peek(); ok && c == 'n' {
		return s.readStringOrNull()
	}
	b, err := s.readString()
	if err != nil {
		return "", err
	}
	return p.intern(b), nil
}

// readChange reads one resource_changes or resource_drift entry. The entry
// is captured (kept contiguous in the buffer) so that its before, after and
// marker values can be diffed in place once it has been read.
func (p *parser) readChange(isDrift bool) error {
	s := p.s
	s.beginCapture()
	defer s.endCapture()
	var (
		c                                  Change
		sawActions                         bool
		before, after, unknown, bsen, asen span
	)
	err := s.iterObject(func(key []byte) error {
		var err error
		switch string(key) {
		case "address":
			c.Address, err = s.readStringOrNull()
		case "mode":
			c.Mode, err = p.readInterned()
		case "type":
			c.Type, err = p.readInterned()
		case "deposed":
			c.Deposed, err = s.readStringOrNull()
		case "action_reason":
			c.ActionReason, err = p.readInterned()
		case "provider_name":
			if isDrift {
				c.Provider, err = p.readInterned()
			} else {
				err = s.skipValue()
			}
		case "change":
			err = s.iterObject(func(key []byte) error {
				var err error
				switch string(key) {
				case "actions":
					sawActions = true
					err = s.iterArray(func(int) error {
						a, err := p.readInterned()
						c.Actions = append(c.Actions, a)
						return err
					})
				case "before":
					before, err = s.captureValue()
				case "after":
					after, err = s.captureValue()
				case "after_unknown":
					unknown, err = s.captureValue()
				case "before_sensitive":
					bsen, err = s.captureValue()
				case "after_sensitive":
					asen, err = s.captureValue()
				case "importing":
					if ch, ok := s.peek(); ok && ch != 'n' {
						c.Importing = true
					}
					err = s.skipValue()
				default:
					err = s.skipValue()
				}
				return err
			})
		default:
			err = s.skipValue()
		}
		return err
	})
	if err != nil {
		return err
	}
	if c.Address == "" {
		return errors.New("missing address")
	}
	if !sawActions || len(c.Actions) == 0 {
		return fmt.Errorf("%s: missing change.actions", c.Address)
	}
	if !isDrift && c.IsNoOp() {
		p.plan.NoOp = append(p.plan.NoOp, c.Address)
		return nil
	}
	data := s.captured()
	get := func(sp span) []byte {
		if sp.end == 0 {
			return nil
		}
		return data[sp.start:sp.end]
	}
	c.SetPaths(get(before), get(after), get(unknown), get(bsen), get(asen), isDrift)
	if isDrift {
		c.SetIDs(get(before), get(after), get(bsen), get(asen))
		p.plan.Drift = append(p.plan.Drift, c)
	} else {
		p.plan.Changes = append(p.plan.Changes, c)
	}
	return nil
}

// readResource reads a resource object of configuration, prior_state or
// planned_values, keeping only its address, mode and type.
func (p *parser) readResource(prefix, seen string) error {
	s := p.s
	var addr, mode, typ, id string
	var identity map[string]string
	idSensitive, deposed := false, false
	state := seen == drift.SeenInState
	err := s.iterObject(func(key []byte) error {
		var err error
		switch k := string(key); {
		case k == "address":
			addr, err = s.readStringOrNull()
		case k == "mode":
			mode, err = p.readInterned()
		case k == "type":
			typ, err = p.readInterned()
		case state && k == "values":
			id, err = p.readTopString("id")
		case state && k == "sensitive_values":
			idSensitive, err = p.readTopTrue("id")
		case state && k == "deposed_key":
			deposed = true
			err = s.skipValue()
		case state && k == "identity":
			s.beginCapture()
			var sp span
			if sp, err = s.captureValue(); err == nil {
				identity = drift.IdentityOf(s.captured()[sp.start:sp.end])
			}
			s.endCapture()
		default:
			err = s.skipValue()
		}
		return err
	})
	if err != nil {
		return err
	}
	if addr == "" {
		return errors.New("resource without address")
	}
	p.addResource(prefix+addr, mode, typ, seen)
	if state && mode == "managed" && !deposed {
		if idSensitive {
			id = ""
		}
		p.plan.Managed = append(p.plan.Managed, drift.Managed{Address: addr, Type: typ, ID: id, Identity: identity})
	}
	return nil
}

// readTopString reads an object and returns its member name when that is
// a string, skipping every other member without keeping it.
func (p *parser) readTopString(name string) (string, error) {
	s := p.s
	var out string
	err := s.iterObject(func(key []byte) error {
		if string(key) == name {
			if c, ok := s.peek(); ok && c == '"' {
				b, err := s.readString()
				out = string(b)
				return err
			}
		}
		return s.skipValue()
	})
	return out, err
}

// readTopTrue reads an object (or a bare boolean) and reports whether its
// member name is true, or the whole value is.
func (p *parser) readTopTrue(name string) (bool, error) {
	s := p.s
	if c, ok := s.peek(); ok && (c == 't' || c == 'f') {
		v, err := s.readBool()
		return v != nil && *v, err
	}
	found := false
	err := s.iterObject(func(key []byte) error {
		if string(key) == name {
			if c, ok := s.peek(); ok && c == 't' {
				found = true
			}
		}
		return s.skipValue()
	})
	return found, err
}

func (p *parser) addResource(addr, mode, typ, seen string) {
	r := p.resources[addr]
	if r == nil {
		r = &TypedResource{Address: addr, Mode: mode, Type: typ}
		p.resources[addr] = r
	}
	if !slices.Contains(r.SeenIn, seen) {
		r.SeenIn = append(r.SeenIn, seen)
	}
}

// readConfigModule reads a configuration module: resources and, through
// module_calls, child modules (whose addresses get "module.NAME." prefixes).
func (p *parser) readConfigModule(prefix string) error {
	s := p.s
	return s.iterObject(func(key []byte) error {
		switch string(key) {
		case "resources":
			return s.iterArray(func(int) error { return p.readResource(prefix, drift.SeenInConfig) })
		case "module_calls":
			return s.iterObject(func(key []byte) error {
				child := prefix + "module." + string(key) + "."
				return s.iterObject(func(key []byte) error {
					if string(key) == "module" {
						return p.readConfigModule(child)
					}
					return s.skipValue()
				})
			})
		}
		return s.skipValue()
	})
}

// readStateModule reads a prior_state or planned_values module, whose
// resource addresses are already absolute.
func (p *parser) readStateModule(seen string) error {
	s := p.s
	return s.iterObject(func(key []byte) error {
		switch string(key) {
		case "resources":
			return s.iterArray(func(int) error { return p.readResource("", seen) })
		case "child_modules":
			return s.iterArray(func(int) error { return p.readStateModule(seen) })
		}
		return s.skipValue()
	})
}

// seenRank orders SeenIn entries: config, state, plan.
func seenRank(s string) int {
	switch s {
	case drift.SeenInConfig:
		return 0
	case drift.SeenInState:
		return 1
	}
	return 2
}

func (p *parser) finish() {
	rs := make([]TypedResource, 0, len(p.resources))
	for _, r := range p.resources {
		slices.SortFunc(r.SeenIn, func(a, b string) int { return seenRank(a) - seenRank(b) })
		rs = append(rs, *r)
	}
	slices.SortFunc(rs, func(a, b TypedResource) int { return strings.Compare(a.Address, b.Address) })
	p.plan.Resources = rs
	slices.SortFunc(p.plan.Managed, func(a, b drift.Managed) int { return strings.Compare(a.Address, b.Address) })
	for addr, paths := range p.plan.RelevantAttributes {
		slices.Sort(paths)
		p.plan.RelevantAttributes[addr] = slices.Compact(paths)
	}
}
