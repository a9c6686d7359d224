package engine

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy/envelope"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// Actions an envelope can allow (envelope.Action*): planned actions of the
// plan's resource_changes, what the apply would do, not what the drift was.
const (
	ActionUpdate  = envelope.ActionUpdate
	ActionCreate  = envelope.ActionCreate
	ActionDelete  = envelope.ActionDelete
	ActionReplace = envelope.ActionReplace
)

// Defaults of an Envelope's zero fields.
const (
	DefaultMaxResources = envelope.DefaultMaxResources
)

// DefaultAllowActions is what an empty Envelope.AllowActions means: only
// in-place updates.
func DefaultAllowActions() []string { return envelope.DefaultAllowActions() }

// Envelope is the safety envelope of one workspace: what a remediation may
// do (AllowActions, MaxResources; WithDefaults, Validate). It is
// envelope.Envelope, the type config embeds in a workspace's
// `remediation:` block, so the keys, defaults and checks exist once.
type Envelope = envelope.Envelope

// Refusal codes set by Evaluate.
const (
	CodeInvalidEnvelope  = "invalid_envelope"   // the envelope itself is misconfigured
	CodePlanErrored      = "plan_errored"       // no plan, an errored or an incomplete plan
	CodeForbidden        = "forbidden"          // a forbidden resource type is present
	CodePending          = "pending"            // unapplied configuration in the plan
	CodeNoDrift          = "no_drift"           // nothing to revert
	CodeUnexpectedChange = "unexpected_change"  // a planned change that is not a drift finding
	CodeIgnoredDrift     = "ignored_drift"      // the apply would revert drift an ignore rule silences
	CodeActionNotAllowed = "action_not_allowed" // an action outside AllowActions
	CodeIgnoredAttribute = "ignored_attribute"  // ... or an ignored attribute of a drifted resource
	CodeDriftNotReverted = "drift_not_reverted" // drift the plan would not revert (only record in state)
	CodeTooManyResources = "too_many_resources" // more than MaxResources changes
)

// Refusal codes set by Applier.Apply, besides Evaluate's on the fresh plan.
const (
	CodeNothingApproved = "nothing_approved" // an empty approved change set
	CodePaused          = "paused"           // the global kill switch is on
	CodeStateInSandbox  = "state_in_sandbox" // the state would be written into the throw-away copy
	CodeStateLocked     = "state_locked"     // another operation holds the state lock
	CodePlanChanged     = "plan_changed"     // the fresh plan differs from the approved one (or went stale)
	CodeNotARevert      = "not_a_revert"     // the apply would set a value other than the last applied one
	// A Job's pod could not confirm with the daemon that it may apply
	// (Applier.Proceed: the daemon unreachable or answering otherwise).
	CodeDaemonUnreachable = "daemon_unreachable"
	// The daemon's answer (Applier.Proceed) when the workspace's
	// remediation.mode is off in its current configuration, or the
	// workspace is no longer configured: nothing is applied.
	CodeRemediationOff = "remediation_off"
)

// Refusal is one reason a remediation may not proceed.
type Refusal struct {
	Code string `json:"code"`
	// Address is the resource concerned, if any.
	Address string `json:"address,omitempty"`
	// Reason is one secret-free line for humans.
	Reason string `json:"reason"`
}

func (r Refusal) String() string { return r.Code + ": " + r.Reason }

// Evaluate applies the envelope to one run: its classified findings (from
// policy.Classify with the workspace's rules) and its parsed plan. It
// returns the change set an apply of the plan would perform, and every
// reason to refuse it; a remediation may proceed only when there is none.
// It is pure.
//
// Refusals, in this order:
//   - plan_errored: no plan, or the plan is errored or incomplete;
//   - forbidden: any forbidden finding, whatever its action;
//   - pending: any pending finding (remediation reverts drift, it never
//     deploys unreviewed code);
//   - no_drift: no counted (non-noise, non-ignored) drift finding;
//   - per change: unexpected_change (a planned change whose address is not
//     a drift finding, e.g. a deposed object or an import), ignored_drift
//     (the drift there is silenced by an ignore rule, yet the apply would
//     revert it), action_not_allowed (not in AllowActions), or
//     ignored_attribute (the change touches a path an ignore rule
//     silenced: reverting it would undo what the rule tolerates);
//   - drift_not_reverted: a drift finding the plan has no change for
//     (e.g. lifecycle ignore_changes): applying would write the drifted
//     value into state, so the incident would close without a revert;
//   - too_many_resources: more than MaxResources changes.
//
// Output changes are not governed: they change no infrastructure.
func Evaluate(env Envelope, findings []drift.Finding, plan *planparse.Plan) (ChangeSet, []Refusal) {
	if err := env.Validate(); err != nil {
		return ChangeSet{}, []Refusal{{Code: CodeInvalidEnvelope, Reason: "remediation envelope: " + err.Error()}}
	}
	env = env.WithDefaults()
	if plan == nil {
		return ChangeSet{}, []Refusal{{Code: CodePlanErrored, Reason: "no plan to evaluate"}}
	}
	cs := ChangeSetOf(plan)
	var refusals []Refusal
	refuse := func(code, addr, format string, args ...any) {
		refusals = append(refusals, Refusal{Code: code, Address: addr, Reason: fmt.Sprintf(format, args...)})
	}
	if plan.Errored {
		refuse(CodePlanErrored, "", "terraform reported an errored plan")
	}
	if plan.Complete != nil && !*plan.Complete {
		refuse(CodePlanErrored, "", "the plan is incomplete (deferred changes): applying it would not converge")
	}

	drifted := map[string]drift.Finding{}      // counted drift
	ignoredDrift := map[string]drift.Finding{} // drift an ignore rule silenced
	pending := map[string]bool{}
	for _, f := range findings {
		switch f.Kind {
		case drift.KindForbidden:
			refuse(CodeForbidden, f.Address, "%s is a forbidden resource type (%s), found in %s: a remediation never runs on a workspace that has one",
				f.Address, f.Type, seenIn(f.SeenIn))
		case drift.KindPending:
			pending[f.Address] = true
			refuse(CodePending, f.Address, "%s has a planned %s with no drift behind it (unapplied configuration): a remediation reverts drift, it never deploys unreviewed code",
				f.Address, f.Action)
		case drift.KindDrift:
			if f.Ignored {
				ignoredDrift[f.Address] = f
			} else {
				drifted[f.Address] = f
			}
		}
	}
	if len(drifted) == 0 {
		refuse(CodeNoDrift, "", "no drift to revert")
	}

	planDrift := map[string]planparse.Change{}
	for _, d := range plan.Drift {
		if d.Mode == modeManaged {
			planDrift[d.Address] = d
		}
	}
	allowed := func(action string) bool { return slices.Contains(env.AllowActions, action) }
	for _, e := range cs.Entries {
		if pending[e.Address] {
			continue // already refused
		}
		f, ok := drifted[e.Address]
		if !ok {
			if _, ok := ignoredDrift[e.Address]; ok {
				refuse(CodeIgnoredDrift, e.Address, "%s: its drift is silenced by an ignore rule, yet the apply would %s it",
					e.Address, e.Action)
			} else {
				refuse(CodeUnexpectedChange, e.Address, "%s would be changed by the apply (%s) but is not a drift finding",
					e.Address, e.Action)
			}
			continue
		}
		if !allowed(e.Action) {
			if e.Action == ActionCreate {
				refuse(CodeActionNotAllowed, e.Address, "%s was deleted outside Terraform: re-creating it needs %q in remediation.allow_actions %s",
					e.Address, ActionCreate, fmtList(env.AllowActions))
			} else {
				refuse(CodeActionNotAllowed, e.Address, "%s would be %s: not in remediation.allow_actions %s",
					e.Address, pastTense(e.Action), fmtList(env.AllowActions))
			}
			continue
		}
		if ignored := ignoredPaths(planDrift[e.Address].Attributes, f.Attributes); len(ignored) > 0 {
			if touched := overlapping(e.Attributes, ignored); len(touched) > 0 {
				refuse(CodeIgnoredAttribute, e.Address, "%s: the apply would also revert ignored attribute(s) %s",
					e.Address, strings.Join(touched, ", "))
			}
		}
	}
	for _, addr := range sortedKeys(drifted) {
		if _, ok := cs.Lookup(addr); !ok {
			refuse(CodeDriftNotReverted, addr, "%s drifted but the plan does not change it (e.g. lifecycle ignore_changes): applying would only record the drift in state",
				addr)
		}
	}
	if n := cs.Len(); n > env.MaxResources {
		refuse(CodeTooManyResources, "", "the apply would change %d resources; remediation.max_resources is %d", n, env.MaxResources)
	}
	return cs, refusals
}

const modeManaged = "managed"

// ignoredPaths returns the drift paths an ignore rule removed from the
// finding: the plan's drift paths that the finding no longer lists.
func ignoredPaths(planPaths, kept []string) []string {
	var out []string
	for _, p := range planPaths {
		if !slices.Contains(kept, p) {
			out = append(out, p)
		}
	}
	return out
}

// overlapping returns the paths of changed that equal, contain or lie
// within one of ignored ("tags" touches "tags.team" and the reverse).
func overlapping(changed, ignored []string) []string {
	var out []string
	for _, c := range changed {
		if slices.ContainsFunc(ignored, func(i string) bool { return pathWithin(c, i) || pathWithin(i, c) }) {
			out = append(out, c)
		}
	}
	return out
}

// pathWithin reports whether p is q or a path below it.
func pathWithin(p, q string) bool {
	if !strings.HasPrefix(p, q) {
		return false
	}
	return len(p) == len(q) || p[len(q)] == '.' || p[len(q)] == '['
}

func seenIn(s []string) string {
	if len(s) == 0 {
		return "the plan"
	}
	return strings.Join(s, ", ")
}

func fmtList(s []string) string { return "[" + strings.Join(s, ", ") + "]" }

func pastTense(action string) string {
	switch action {
	case ActionUpdate:
		return "updated"
	case ActionCreate:
		return "created"
	case ActionDelete:
		return "deleted"
	case ActionReplace:
		return "replaced"
	}
	return "changed (" + action + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// summarize turns refusals into one line: the first reason and a count.
func summarize(rs []Refusal) string {
	switch len(rs) {
	case 0:
		return ""
	case 1:
		return rs[0].Reason
	}
	return rs[0].Reason + " (and " + strconv.Itoa(len(rs)-1) + " more)"
}
