package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// Severity rules and a route's min_severity load from YAML and reach each
// workspace's incident plan narrowed to the rules its name and labels
// meet.
func TestSeverityRulesConfig(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-url"), []byte("https://hooks.example/x\n"), 0o600))
	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
notifiers:
  - name: pager
    type: webhook
    webhook: { url_file: hook-url, secret_file: hook-url }
workspaces:
  - name: prod-net
    labels: { env: prod }
    source: { path: . }
  - name: dev-net
    labels: { env: dev }
    source: { path: . }
alerts:
  routes:
    - match: { labels: { env: prod } }
      notifiers: [pager]
      min_severity: high
  severity_rules:
    - name: sg-ingress
      severity: critical
      match:
        labels: { env: prod }
        resource_types: ["aws_security_group*"]
        attributes: ["ingress*"]
    - severity: info
      match:
        classes: [drift]
        only_attributes: ["tags.*", "tags_all.*"]
`))
	require.NoError(t, err)
	require.Equal(t, "high", cfg.Alerts.Routes[0].MinSeverity)
	plans := incident.Plans(cfg)
	require.Equal(t, []incident.Target{{Notifier: "pager", MinSeverity: notify.SeverityHigh}}, plans["prod-net"].Targets)
	require.Equal(t, []incident.SeverityRule{
		{Name: "sg-ingress", Severity: notify.SeverityCritical, Classes: []notify.Class{}, Types: []string{"aws_security_group*"}, Attributes: []string{"ingress*"}},
		{Name: "severity_rules[1]", Severity: notify.SeverityInfo, Classes: []notify.Class{notify.ClassDrift}, OnlyAttributes: []string{"tags.*", "tags_all.*"}},
	}, plans["prod-net"].Policy.Rules)
	require.Equal(t, []incident.SeverityRule{
		{Name: "severity_rules[1]", Severity: notify.SeverityInfo, Classes: []notify.Class{notify.ClassDrift}, OnlyAttributes: []string{"tags.*", "tags_all.*"}},
	}, plans["dev-net"].Policy.Rules, "the label condition keeps the prod rule off dev")
}

func TestSeverityRulesConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "driftwatch.yaml")
	for name, c := range map[string]struct{ yaml, want string }{
		"no severity": {"alerts:\n  severity_rules:\n    - match: { classes: [drift] }\n",
			"driftwatch.yaml:3: alerts.severity_rules[0].severity: required"},
		"bad severity": {"alerts:\n  severity_rules:\n    - severity: urgent\n",
			`driftwatch.yaml:3: alerts.severity_rules[0].severity: unknown severity "urgent" (use critical, high, moderate, low or info)`},
		"bad class": {"alerts:\n  severity_rules:\n    - severity: high\n      match:\n        classes: [drfit]\n",
			`driftwatch.yaml:5: alerts.severity_rules[0].match.classes[0]: unknown class "drfit" (use drift, forbidden, validation or errored)`},
		"bad action": {"alerts:\n  severity_rules:\n    - severity: high\n      match:\n        actions: [modify]\n",
			`alerts.severity_rules[0].match.actions[0]: unknown action "modify" (use create, update, delete, replace, read, import or forget)`},
		"bad glob": {"alerts:\n  severity_rules:\n    - severity: high\n      match:\n        attributes: [\"tags[\"]\n",
			`alerts.severity_rules[0].match.attributes[0]: invalid glob "tags["`},
		"duplicate name": {"alerts:\n  severity_rules:\n    - { name: a, severity: high }\n    - { name: a, severity: low }\n",
			`driftwatch.yaml:4: alerts.severity_rules[1].name: duplicate rule name "a"`},
		"errored with finding conditions": {"alerts:\n  severity_rules:\n    - severity: high\n      match: { classes: [errored], actions: [delete] }\n",
			"alerts.severity_rules[0].match: an errored incident has no findings: resource, action and attribute conditions never match it"},
		"bad min_severity": {"alerts:\n  routes:\n    - match: {}\n      notifiers: []\n      min_severity: loud\n",
			`alerts.routes[0].min_severity: unknown severity "loud"`},
		"unknown key": {"alerts:\n  severity_rules:\n    - severity: high\n      match: { attribute: [x] }\n",
			"attribute"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Load(file, []byte(c.yaml))
			require.Error(t, err)
			require.Contains(t, strings.ReplaceAll(err.Error(), dir+"/", ""), c.want)
		})
	}
}

// The validation class (failing checks) takes a severity and severity
// rules like the other classes.
func TestValidationClassConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
workspaces:
  - name: api
    source: { path: . }
alerts:
  severity: { validation: critical }
  severity_rules:
    - severity: info
      match: { classes: [validation], addresses: ["check.canary*"] }
`))
	require.NoError(t, err)
	plan := incident.Plans(cfg)["api"]
	require.Equal(t, notify.SeverityCritical, plan.Policy.Severity[notify.ClassValidation])
	require.Equal(t, []notify.Class{notify.ClassValidation}, plan.Policy.Rules[0].Classes)
}
