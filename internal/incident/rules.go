package incident

import (
	"path"
	"slices"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// SeverityRule sets the severity of the findings it matches (config's
// alerts.severity_rules, already narrowed to one workspace by Plans: the
// workspace conditions are gone).
type SeverityRule struct {
	// Name is what the status page shows as the rule that set an
	// incident's severity.
	Name     string
	Severity notify.Severity
	// Classes limits the rule to these classes (empty: every class).
	Classes []notify.Class
	// Types, Addresses, Attributes and OnlyAttributes are path.Match
	// globs; Actions are exact. Empty means any.
	Types, Addresses, Actions, Attributes, OnlyAttributes []string
}

// findingConditions reports whether r looks at findings.
func (r SeverityRule) findingConditions() bool {
	return len(r.Types)+len(r.Addresses)+len(r.Actions)+len(r.Attributes)+len(r.OnlyAttributes) > 0
}

// matches reports whether r matches finding f of class c.
func (r SeverityRule) matches(c notify.Class, f drift.Finding) bool {
	if len(r.Classes) > 0 && !slices.Contains(r.Classes, c) {
		return false
	}
	if len(r.Actions) > 0 && !slices.Contains(r.Actions, f.Action) {
		return false
	}
	if len(r.Types) > 0 && !anyGlob(r.Types, f.Type) || len(r.Addresses) > 0 && !anyGlob(r.Addresses, f.Address) {
		return false
	}
	if len(r.Attributes) > 0 && !slices.ContainsFunc(f.Attributes, func(a string) bool { return anyGlob(r.Attributes, a) }) {
		return false
	}
	if len(r.OnlyAttributes) > 0 && (len(f.Attributes) == 0 ||
		slices.ContainsFunc(f.Attributes, func(a string) bool { return !anyGlob(r.OnlyAttributes, a) })) {
		return false
	}
	return true
}

func anyGlob(globs []string, s string) bool {
	return slices.ContainsFunc(globs, func(g string) bool {
		ok, err := path.Match(g, s)
		return err == nil && ok
	})
}

// DefaultRule is the rule name of a severity no rule set: the class's
// (alerts.severity, or the built-in default).
const DefaultRule = ""

// base is the severity of an incident of class c with findings fs before
// any escalation, and the rule that set it (DefaultRule: the class's).
// Each finding takes the severity of the highest rule matching it, or the
// class's; the incident takes the highest of its findings'. Without
// findings (errored, or a pending incident) only rules without finding
// conditions apply. Among equal severities the first rule wins.
func (p Policy) base(c notify.Class, fs []drift.Finding) (notify.Severity, string) {
	if len(fs) == 0 {
		return p.highest(c, func(r SeverityRule) bool {
			return !r.findingConditions() && (len(r.Classes) == 0 || slices.Contains(r.Classes, c))
		})
	}
	var best notify.Severity
	rule := DefaultRule
	for _, f := range fs {
		sev, r := p.highest(c, func(r SeverityRule) bool { return r.matches(c, f) })
		if sev.Rank() > best.Rank() || sev.Rank() == best.Rank() && rule == DefaultRule {
			best, rule = sev, r
		}
	}
	return best, rule
}

// highest is the severity of the highest rule match accepts (the first
// of equals), or the class's severity when it accepts none.
func (p Policy) highest(c notify.Class, match func(SeverityRule) bool) (notify.Severity, string) {
	sev, rule := p.severity(c), DefaultRule
	for _, r := range p.Rules {
		if match(r) && (rule == DefaultRule || r.Severity.Rank() > sev.Rank()) {
			sev, rule = r.Severity, r.Name
		}
	}
	return sev, rule
}
