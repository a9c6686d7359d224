package config

import (
	"fmt"
	"path"
	"slices"

	"github.com/driftwatch/driftwatch/internal/notify/severity"
)

// SeverityRule sets the severity of the findings it matches (and with
// them their incident's). An incident's severity is the highest of its
// findings' severities; a finding's severity is that of the highest rule
// matching it, or its class's severity (alerts.severity) when none does.
// An errored incident has no findings: rules without finding conditions
// (resource_types, addresses, actions, attributes, only_attributes) match
// it as a whole.
type SeverityRule struct {
	// Name is shown on the status page and in the API as the rule that
	// set an incident's severity (default: severity_rules[i]).
	Name     string            `yaml:"name"`
	Severity string            `yaml:"severity"`
	Match    SeverityRuleMatch `yaml:"match"`
}

// SeverityRuleMatch is what a SeverityRule matches: every condition set
// must hold; within a list, any entry may match. Globs are path.Match
// patterns ("*" also matches dots and brackets: "aws_security_group*").
type SeverityRuleMatch struct {
	// Classes are incident classes (drift, forbidden, validation, errored).
	Classes []string `yaml:"classes"`
	// Workspaces are workspace name globs.
	Workspaces []string `yaml:"workspaces"`
	// Labels must all be on the workspace with these values.
	Labels map[string]string `yaml:"labels"`
	// ResourceTypes are resource type globs (aws_security_group*).
	ResourceTypes []string `yaml:"resource_types"`
	// Addresses are resource address globs (module.net.*).
	Addresses []string `yaml:"addresses"`
	// Actions are the finding's action: create, update, delete, replace,
	// read, import, forget.
	Actions []string `yaml:"actions"`
	// Attributes match when any changed attribute path matches a glob
	// (ingress*, tags.*).
	Attributes []string `yaml:"attributes"`
	// OnlyAttributes match when every changed attribute path matches one
	// of the globs and there is at least one (tag-only changes: tags*,
	// tags_all*).
	OnlyAttributes []string `yaml:"only_attributes"`
}

// findingConditions reports whether m looks at findings (and so never
// matches an incident without findings).
func (m SeverityRuleMatch) findingConditions() bool {
	return len(m.ResourceTypes)+len(m.Addresses)+len(m.Actions)+len(m.Attributes)+len(m.OnlyAttributes) > 0
}

// ruleActions are the finding actions a severity rule can match.
var ruleActions = []string{"create", "update", "delete", "replace", "read", "import", "forget"}

// RuleName is r's name, or its position when it has none.
func (r SeverityRule) RuleName(i int) string {
	if r.Name != "" {
		return r.Name
	}
	return fmt.Sprintf("severity_rules[%d]", i)
}

func (a *Alerts) validateSeverityRules(pos *positions) []error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, pos.errorf(key, format, args...)) }
	names := map[string]bool{}
	for i, r := range a.SeverityRules {
		key := fmt.Sprintf("alerts.severity_rules[%d]", i)
		if r.Name != "" {
			if names[r.Name] {
				add(key+".name", "duplicate rule name %q", r.Name)
			}
			names[r.Name] = true
		}
		if r.Severity == "" {
			add(key+".severity", "required")
		} else if _, err := severity.Parse(r.Severity); err != nil {
			add(key+".severity", "%v", err)
		}
		m := r.Match
		for j, c := range m.Classes {
			if !alertClasses[c] {
				add(fmt.Sprintf("%s.match.classes[%d]", key, j), "unknown class %q (use drift, forbidden, validation or errored)", c)
			}
		}
		for j, a := range m.Actions {
			if !slices.Contains(ruleActions, a) {
				add(fmt.Sprintf("%s.match.actions[%d]", key, j), "unknown action %q (use create, update, delete, replace, read, import or forget)", a)
			}
		}
		for sub, globs := range map[string][]string{"workspaces": m.Workspaces, "resource_types": m.ResourceTypes, "addresses": m.Addresses,
			"attributes": m.Attributes, "only_attributes": m.OnlyAttributes} {
			for j, g := range globs {
				if _, err := path.Match(g, ""); err != nil || g == "" {
					add(fmt.Sprintf("%s.match.%s[%d]", key, sub, j), "invalid glob %q", g)
				}
			}
		}
		if len(m.Classes) > 0 && !slices.ContainsFunc(m.Classes, func(c string) bool { return c != "errored" }) && m.findingConditions() {
			add(key+".match", "an errored incident has no findings: resource, action and attribute conditions never match it")
		}
	}
	return errs
}
