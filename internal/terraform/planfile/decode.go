package planfile

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// ErrNeedsShow is returned (wrapped) by Decode for a plan it can read but
// does not summarise, because show -json says more about it: a check that
// did not pass (its messages are only there), deferred changes, action
// invocations (Terraform 1.14's actions, planned or deferred), or an
// ephemeral resource in the configuration (OpenTofu lists those among
// its configuration's resources, Terraform does not).
var ErrNeedsShow = errors.New("needs show -json")

// Decode returns what planparse.Parse returns for the `show -json` of
// planFile, read from the plan file alone: drift, changes with their
// changed and unknown attribute paths, output changes, relevant
// attributes and resources (configuration, prior state, planned values).
// It renders each change's msgpack values as show -json renders them and
// hands them to planparse's own path computation, so the paths are the
// ones Parse finds; sensitivity comes from the sensitive paths Terraform
// records with each value. The values live only while a change is
// rendered.
//
// What it leaves unset: FormatVersion, Applyable and Complete (show -json
// decides those), Checks (a plan with a check that did not pass is
// refused with ErrNeedsShow). Terraform records provider-declared
// sensitivity in the plan file since some version only: callers must use
// it only with a tool version known to (see tfsession). Any unknown
// action, value encoding, plan format version or malformed member is an
// error; callers then run show -json. No error quotes the plan's content.
func Decode(planFile string) (*planparse.Plan, error) {
	p, err := decode(planFile, defaultLimits)
	if err != nil {
		return nil, fmt.Errorf("decode plan file: %w", err)
	}
	return p, nil
}

func decode(planFile string, lim limits) (*planparse.Plan, error) {
	zr, members, err := openPlan(planFile)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	b, err := readMember(members[memberPlan], lim.state)
	if err != nil {
		return nil, err
	}
	raw, err := parsePlan(b)
	if err != nil {
		return nil, err
	}
	switch {
	case raw.version != tfplanVersion:
		return nil, fmt.Errorf("tfplan format version %d (want %d)", raw.version, tfplanVersion)
	case raw.checksNotPassing > 0:
		return nil, fmt.Errorf("%w: %d checks did not pass", ErrNeedsShow, raw.checksNotPassing)
	case raw.deferred > 0:
		return nil, fmt.Errorf("%w: deferred changes", ErrNeedsShow)
	case raw.actions > 0:
		return nil, fmt.Errorf("%w: action invocations", ErrNeedsShow)
	}

	plan := &planparse.Plan{
		TerraformVersion:   raw.tfVersion,
		Errored:            raw.errored,
		RelevantAttributes: map[string][]string{},
	}
	c := newCollector()
	if err := readConfig(zr.File, members[memberManifest], lim.config, c); err != nil {
		return nil, fmt.Errorf("configuration snapshot: %w", err)
	}
	if err := readState(members[memberState], lim.state, c, false); err != nil {
		return nil, fmt.Errorf("%s: %w", memberState, err)
	}

	changes, err := sortChanges(raw.changes)
	if err != nil {
		return nil, err
	}
	for _, rc := range changes {
		if rc.addr.mode == modeData && rc.action == actionDelete {
			continue // state clean-up of a data resource: show -json hides it
		}
		ch, err := change(rc, false)
		if err != nil {
			return nil, err
		}
		if rc.deposed == "" && rc.action != actionDelete {
			c.add(rc.raw.addr, rc.addr.mode, rc.addr.typ, drift.SeenInPlanned)
		}
		if ch.IsNoOp() {
			plan.NoOp = append(plan.NoOp, ch.Address)
			continue
		}
		plan.Changes = append(plan.Changes, ch)
	}

	drifted, err := sortChanges(raw.drift)
	if err != nil {
		return nil, err
	}
	for _, rc := range drifted {
		// Outside refresh-only mode a move without other change is a
		// planned change, not drift.
		if rc.action == actionNoop && raw.uiMode != uiModeRefreshOnly ||
			rc.addr.mode == modeData && rc.action == actionDelete {
			continue
		}
		ch, err := change(rc, true)
		if err != nil {
			return nil, err
		}
		plan.Drift = append(plan.Drift, ch)
	}

	for _, o := range raw.outputs {
		if o.action != actionNoop {
			plan.OutputChanges = append(plan.OutputChanges, o.name)
		}
	}
	slices.Sort(plan.OutputChanges)

	for _, r := range raw.relevant {
		paths := plan.RelevantAttributes[r.resource]
		if paths == nil {
			paths = []string{}
		}
		if p := pathString(r.path); p != "" {
			paths = append(paths, p)
		}
		plan.RelevantAttributes[r.resource] = paths
	}
	for addr, paths := range plan.RelevantAttributes {
		slices.Sort(paths)
		plan.RelevantAttributes[addr] = slices.Compact(paths)
	}
	plan.Resources = c.sorted()
	plan.Managed = c.managedSorted()
	return plan, nil
}

// parsedChange is a raw change with its address parsed.
type parsedChange struct {
	raw     rawChange
	addr    instAddr
	action  uint64
	deposed string
}

// sortChanges parses the changes' addresses and orders them as show -json
// does: by address, then deposed key.
func sortChanges(raw []rawChange) ([]parsedChange, error) {
	out := make([]parsedChange, 0, len(raw))
	for i, rc := range raw {
		a, err := parseInstAddr(rc.addr)
		if err != nil {
			return nil, fmt.Errorf("change %d: %w", i, err)
		}
		out = append(out, parsedChange{raw: rc, addr: a, action: rc.action, deposed: rc.deposed})
	}
	slices.SortStableFunc(out, func(a, b parsedChange) int {
		if c := a.addr.compare(b.addr); c != 0 {
			return c
		}
		return strings.Compare(a.deposed, b.deposed)
	})
	return out, nil
}

// actionNames are show -json's actions for each tfplan action.
var actionNames = map[uint64][]string{
	actionNoop:             {"no-op"},
	actionCreate:           {"create"},
	actionRead:             {"read"},
	actionUpdate:           {"update"},
	actionDelete:           {"delete"},
	actionDeleteThenCreate: {"delete", "create"},
	actionCreateThenDelete: {"create", "delete"},
	actionForget:           {"forget"},
	actionCreateThenForget: {"create", "forget"},
	actionForgetThenCreate: {"forget", "create"},
}

// reasonNames are show -json's action_reason keywords for each tfplan
// ResourceInstanceActionReason (0, none, is left out).
var reasonNames = map[uint64]string{
	1:  "replace_because_tainted",
	2:  "replace_by_request",
	3:  "replace_because_cannot_update",
	4:  "delete_because_no_resource_config",
	5:  "delete_because_wrong_repetition",
	6:  "delete_because_count_index",
	7:  "delete_because_each_key",
	8:  "delete_because_no_module",
	9:  "replace_by_triggers",
	10: "read_because_config_unknown",
	11: "read_because_dependency_pending",
	12: "delete_because_no_move_target",
	13: "read_because_check_nested",
	// OpenTofu 1.12: the enabled meta-argument and lifecycle destroy = false.
	14: "delete_because_enabled_false",
	15: "forgot_because_lifecycle_destroy_in_state",
	16: "forgot_because_lifecycle_destroy_in_config",
}

// change builds the planparse.Change of one resource change or drift.
func change(pc parsedChange, isDrift bool) (planparse.Change, error) {
	rc := pc.raw
	actions, ok := actionNames[rc.action]
	if !ok {
		return planparse.Change{}, fmt.Errorf("%s: unknown action %d", rc.addr, rc.action)
	}
	ch := planparse.Change{
		Address:   rc.addr,
		Mode:      pc.addr.mode,
		Type:      pc.addr.typ,
		Deposed:   rc.deposed,
		Actions:   slices.Clone(actions),
		Importing: rc.importing,
	}
	if rc.reason != 0 {
		if ch.ActionReason, ok = reasonNames[rc.reason]; !ok {
			return planparse.Change{}, fmt.Errorf("%s: unknown action reason %d", rc.addr, rc.reason)
		}
	}
	if isDrift {
		ch.Provider = providerSource(rc.provider)
	}
	if ch.IsNoOp() {
		return ch, nil
	}
	// The values, as the plan file lays them out per action.
	var before, after []byte
	switch rc.action {
	case actionCreate:
		after = value(rc.values, 0)
	case actionDelete, actionForget:
		before = value(rc.values, 0)
	case actionNoop:
		before, after = value(rc.values, 0), value(rc.values, 0)
	default:
		before, after = value(rc.values, 0), value(rc.values, 1)
	}
	if before == nil || after == nil {
		// A create, delete or forget has no attribute paths; an object
		// deleted outside Terraform still has its ids.
		if isDrift && before != nil {
			if err := setGoneIDs(&ch, before, rc.beforeSens); err != nil {
				return planparse.Change{}, fmt.Errorf("%s: %w", rc.addr, err)
			}
		}
		return ch, nil
	}
	bv, err := decodeMsgpack(before)
	if err != nil {
		return planparse.Change{}, fmt.Errorf("%s: before: %w", rc.addr, err)
	}
	av, err := decodeMsgpack(after)
	if err != nil {
		return planparse.Change{}, fmt.Errorf("%s: after: %w", rc.addr, err)
	}
	bs, err := sensitiveMarker(rc.beforeSens)
	if err != nil {
		return planparse.Change{}, fmt.Errorf("%s: %w", rc.addr, err)
	}
	as, err := sensitiveMarker(rc.afterSens)
	if err != nil {
		return planparse.Change{}, fmt.Errorf("%s: %w", rc.addr, err)
	}
	unknown := []byte("{}")
	if !av.known() {
		unknown = av.appendUnknown(nil)
	}
	bj, aj := bv.appendJSON(nil), av.appendJSON(nil)
	ch.SetPaths(bj, aj, unknown, bs, as, isDrift)
	if isDrift {
		ch.SetIDs(bj, aj, bs, as)
	}
	return ch, nil
}

// providerSource is the source address in a provider configuration's
// address (module.m.provider["registry.terraform.io/hashicorp/aws"].alias
// gives registry.terraform.io/hashicorp/aws), as show -json's
// provider_name; "" when addr is not one.
func providerSource(addr string) string {
	_, rest, ok := strings.Cut(addr, `provider["`)
	if !ok {
		return ""
	}
	src, _, ok := strings.Cut(rest, `"]`)
	if !ok {
		return ""
	}
	return src
}

// setGoneIDs sets the ids of a drifted object that no longer exists from
// its before value (msgpack) and sensitivity (the plan file's paths).
func setGoneIDs(ch *planparse.Change, before []byte, sens []rawPath) error {
	bv, err := decodeMsgpack(before)
	if err != nil {
		return fmt.Errorf("before: %w", err)
	}
	bs, err := sensitiveMarker(sens)
	if err != nil {
		return err
	}
	ch.SetIDs(bv.appendJSON(nil), nil, bs, nil)
	return nil
}

func value(vs [][]byte, i int) []byte {
	if i < len(vs) {
		return vs[i]
	}
	return nil
}

// pathString spells a relevant attribute's path as planparse does; a step
// it cannot spell (a set element, addressed by its value) is left out, as
// planparse leaves it out of show -json's.
func pathString(p rawPath) string {
	var b []byte
	for _, s := range p {
		if !s.isKey {
			b = planparse.AppendPathKey(b, s.attr)
			continue
		}
		k, i, isIndex, ok := elementKey(s.key)
		switch {
		case !ok:
		case isIndex:
			b = planparse.AppendPathIndex(b, i)
		default:
			b = planparse.AppendPathKey(b, k)
		}
	}
	return string(b)
}

// maxMarkerIndex bounds a sensitive path's list index, so that a hostile
// file cannot make a marker array of any length.
const maxMarkerIndex = 1 << 16

// marker is a sensitivity marker tree: true where a value is sensitive.
type marker struct {
	leaf  bool
	keys  map[string]*marker
	index map[int]*marker
}

// sensitiveMarker renders sensitive paths as show -json's before_sensitive
// or after_sensitive: an object (or array) tree with true at each path. A
// path into a set element (addressed by its value) is refused: show -json
// marks that element's position, which the path does not give.
func sensitiveMarker(paths []rawPath) ([]byte, error) {
	if len(paths) == 0 {
		return []byte("{}"), nil
	}
	root := &marker{}
	for _, p := range paths {
		m := root
		for _, s := range p {
			if m.leaf {
				break
			}
			k, i, isIndex := s.attr, 0, false
			if s.isKey {
				var ok bool
				if k, i, isIndex, ok = elementKey(s.key); !ok {
					return nil, errors.New("a sensitive value inside a set")
				}
			}
			if isIndex {
				if i > maxMarkerIndex {
					return nil, errors.New("a sensitive path with a list index out of range")
				}
				if m.index == nil {
					m.index = map[int]*marker{}
				}
				if m.index[i] == nil {
					m.index[i] = &marker{}
				}
				m = m.index[i]
				continue
			}
			if m.keys == nil {
				m.keys = map[string]*marker{}
			}
			if m.keys[k] == nil {
				m.keys[k] = &marker{}
			}
			m = m.keys[k]
		}
		if m == root {
			return []byte("true"), nil
		}
		m.leaf, m.keys, m.index = true, nil, nil
	}
	return root.appendJSON(nil), nil
}

func (m *marker) appendJSON(b []byte) []byte {
	switch {
	case m.leaf:
		return append(b, "true"...)
	case m.index != nil && m.keys == nil:
		n := 0
		for i := range m.index {
			n = max(n, i+1)
		}
		b = append(b, '[')
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			if e := m.index[i]; e != nil {
				b = e.appendJSON(b)
			} else {
				b = append(b, "false"...)
			}
		}
		return append(b, ']')
	}
	b = append(b, '{')
	keys := make([]string, 0, len(m.keys))
	for k := range m.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, k), ':')
		b = m.keys[k].appendJSON(b)
	}
	return append(b, '}')
}
