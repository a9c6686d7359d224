package config

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/email/emailcfg"
	"github.com/driftwatch/driftwatch/internal/notify/github/githubcfg"
	"github.com/driftwatch/driftwatch/internal/notify/gitlab/gitlabcfg"
	"github.com/driftwatch/driftwatch/internal/notify/jsm/jsmcfg"
	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/notify/opsgenie/opsgeniecfg"
	"github.com/driftwatch/driftwatch/internal/notify/pagerduty/pagerdutycfg"
	"github.com/driftwatch/driftwatch/internal/notify/severity"
	"github.com/driftwatch/driftwatch/internal/notify/slack/slackcfg"
	"github.com/driftwatch/driftwatch/internal/notify/teams/teamscfg"
	"github.com/driftwatch/driftwatch/internal/notify/webhook/webhookcfg"
)

// Notifier is one named alert destination. Secrets come from files.
type Notifier struct {
	Name string `yaml:"name"`
	// Type is one of NotifierTypes; the block of the same name holds
	// its settings.
	Type      string           `yaml:"type"`
	Slack     *SlackConfig     `yaml:"slack"`
	OpsGenie  *OpsGenieConfig  `yaml:"opsgenie"`
	Webhook   *WebhookConfig   `yaml:"webhook"`
	PagerDuty *PagerDutyConfig `yaml:"pagerduty"`
	Teams     *TeamsConfig     `yaml:"teams"`
	JSM       *JSMConfig       `yaml:"jsm"`
	GitHub    *GitHubConfig    `yaml:"github"`
	GitLab    *GitLabConfig    `yaml:"gitlab"`
	Email     *EmailConfig     `yaml:"email"`
	// Timeout bounds one HTTP request of a delivery (default 10s; for
	// email, one SMTP session, default 30s).
	Timeout Duration `yaml:"timeout"`
	// CAFile adds PEM certificates to trust (private CAs, TLS proxies).
	CAFile string `yaml:"ca_file"`
}

// The notifier types' settings blocks, each declared, with its keys and
// its one check, in its notifier's settings package
// (internal/notify/<type>/<type>cfg).
type (
	// SlackConfig is a notifiers[].slack block.
	SlackConfig = slackcfg.Config
	// OpsGenieConfig is a notifiers[].opsgenie block.
	OpsGenieConfig = opsgeniecfg.Config
	// WebhookConfig is a notifiers[].webhook block.
	WebhookConfig = webhookcfg.Config
	// PagerDutyConfig is a notifiers[].pagerduty block.
	PagerDutyConfig = pagerdutycfg.Config
	// TeamsConfig is a notifiers[].teams block.
	TeamsConfig = teamscfg.Config
	// JSMConfig is a notifiers[].jsm block.
	JSMConfig = jsmcfg.Config
	// GitHubConfig is a notifiers[].github block.
	GitHubConfig = githubcfg.Config
	// GitLabConfig is a notifiers[].gitlab block.
	GitLabConfig = gitlabcfg.Config
	// EmailConfig is a notifiers[].email block.
	EmailConfig = emailcfg.Config
)

// Settings is n's settings block, the one of its type (nil: none set).
func (n *Notifier) Settings() notifycfg.Block {
	// Each pointer is checked: a nil one in the interface is not nil.
	switch {
	case n.Type == "slack" && n.Slack != nil:
		return n.Slack
	case n.Type == "opsgenie" && n.OpsGenie != nil:
		return n.OpsGenie
	case n.Type == "webhook" && n.Webhook != nil:
		return n.Webhook
	case n.Type == "pagerduty" && n.PagerDuty != nil:
		return n.PagerDuty
	case n.Type == "teams" && n.Teams != nil:
		return n.Teams
	case n.Type == "jsm" && n.JSM != nil:
		return n.JSM
	case n.Type == "github" && n.GitHub != nil:
		return n.GitHub
	case n.Type == "gitlab" && n.GitLab != nil:
		return n.GitLab
	case n.Type == "email" && n.Email != nil:
		return n.Email
	}
	return nil
}

// NotifierSpecs are the configured notifiers as notifiers.Build takes
// them.
func (c *Config) NotifierSpecs() []notifycfg.Spec {
	out := make([]notifycfg.Spec, 0, len(c.Notifiers))
	for i := range c.Notifiers {
		n := &c.Notifiers[i]
		out = append(out, notifycfg.Spec{Name: n.Name, Settings: n.Settings(), Timeout: time.Duration(n.Timeout), CAFile: n.CAFile})
	}
	return out
}

// Alerts configures incidents and their routing.
type Alerts struct {
	// DefaultNotifiers receive incidents no route matches.
	DefaultNotifiers []string `yaml:"default_notifiers"`
	AlertPolicy      `yaml:",inline"`
	Routes           []Route `yaml:"routes"`
	// SeverityRules set incidents' severities from what they found
	// (severity_rules.go).
	SeverityRules []SeverityRule `yaml:"severity_rules"`
}

// AlertPolicy can be set in alerts and overridden per workspace.
type AlertPolicy struct {
	// IncludePending makes pending (unapplied) changes part of the drift incident.
	IncludePending *bool `yaml:"include_pending"`
	// ConfirmAfter consecutive observations open an incident (default 1).
	ConfirmAfter int `yaml:"confirm_after"`
	// ErroredAfter consecutive errored runs open an errored incident (default 3).
	ErroredAfter int `yaml:"errored_after"`
	// RenotifyAfter re-sends an unchanged open incident (default: never).
	RenotifyAfter Duration `yaml:"renotify_after"`
	// Severity per class: drift, forbidden, validation, errored.
	Severity map[string]string `yaml:"severity"`
}

// Route sends matching workspaces' incidents to notifiers.
type Route struct {
	Match     RouteMatch        `yaml:"match"`
	Notifiers []string          `yaml:"notifiers"`
	Severity  map[string]string `yaml:"severity"`
	// Team is the responder team (OpsGenie).
	Team string `yaml:"team"`
	// Continue evaluates the next routes too (default: first match wins).
	Continue bool `yaml:"continue"`
	// MinSeverity is the lowest severity these notifiers hear of: an
	// incident reaches them when its severity reaches it, and resolves
	// there when it falls below (default: every severity).
	MinSeverity string `yaml:"min_severity"`
}

// RouteMatch selects workspaces by name globs and labels (all must match).
type RouteMatch struct {
	Workspaces []string          `yaml:"workspaces"`
	Labels     map[string]string `yaml:"labels"`
}

// Alert defaults.
const (
	DefaultConfirmAfter   = 1
	DefaultErroredAfter   = 3
	notifierNameMaxLength = 63
)

// NotifierTypes are the notifier types, each with a settings block of
// the same name.
var NotifierTypes = []string{"slack", "opsgenie", "webhook", "pagerduty", "teams", "jsm", "github", "gitlab", "email"}

var typeList = strings.Join(NotifierTypes[:len(NotifierTypes)-1], ", ") + " or " + NotifierTypes[len(NotifierTypes)-1]

var alertClasses = map[string]bool{"drift": true, "forbidden": true, "validation": true, "errored": true}

// validateAlerts checks notifiers, alert policy and routes.
func (c *Config) validateAlerts(pos *positions) []error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, pos.errorf(key, format, args...)) }
	dir := filepath.Dir(c.File)

	names := map[string]bool{}
	for i := range c.Notifiers {
		n := &c.Notifiers[i]
		key := fmt.Sprintf("notifiers[%d]", i)
		switch {
		case n.Name == "":
			add(key+".name", "required")
		case !dnsLabel.MatchString(n.Name):
			add(key+".name", "%q is not a DNS label (lowercase letters, digits and '-')", n.Name)
		case names[n.Name]:
			add(key+".name", "duplicate notifier name %q", n.Name)
		}
		names[n.Name] = true
		set := 0
		for _, b := range []bool{n.Slack != nil, n.OpsGenie != nil, n.Webhook != nil, n.PagerDuty != nil,
			n.Teams != nil, n.JSM != nil, n.GitHub != nil, n.GitLab != nil, n.Email != nil} {
			if b {
				set++
			}
		}
		if n.CAFile != "" {
			n.CAFile = absFrom(dir, n.CAFile)
			if _, err := os.Stat(n.CAFile); err != nil {
				add(key+".ca_file", "%v", err)
			}
		}
		if set > 1 {
			add(key, "set only the block of its type (%s)", n.Type)
		}
		file := func(sub, p string) string {
			if p == "" {
				add(key+"."+sub, "required")
				return p
			}
			p = absFrom(dir, p)
			if _, err := os.Stat(p); err != nil {
				add(key+"."+sub, "%v", err)
			}
			return p
		}
		switch {
		case n.Type == "":
			add(key+".type", "required (%s)", typeList)
		case !slices.Contains(NotifierTypes, n.Type):
			add(key+".type", "unknown type %q (use %s)", n.Type, typeList)
		default:
			b := n.Settings()
			if b == nil {
				add(key+"."+n.Type, "required for type %s", n.Type)
				continue
			}
			b.Check(notifycfg.Check{
				File: func(sub, p string) string { return file(n.Type+"."+sub, p) },
				Add:  func(sub, format string, args ...any) { add(key+"."+n.Type+"."+sub, format, args...) },
			})
		}
	}

	known := func(k string, list []string) {
		for j, n := range list {
			if !names[n] {
				add(fmt.Sprintf("%s[%d]", k, j), "unknown notifier %q", n)
			}
		}
	}
	a := &c.Alerts
	known("alerts.default_notifiers", a.DefaultNotifiers)
	errs = append(errs, a.AlertPolicy.validate(pos, "alerts")...)
	for i, r := range a.Routes {
		key := fmt.Sprintf("alerts.routes[%d]", i)
		if len(r.Notifiers) == 0 {
			add(key+".notifiers", "required")
		}
		known(key+".notifiers", r.Notifiers)
		for j, g := range r.Match.Workspaces {
			if _, err := path.Match(g, ""); err != nil {
				add(fmt.Sprintf("%s.match.workspaces[%d]", key, j), "invalid glob %q: %v", g, err)
			}
		}
		errs = append(errs, checkSeverities(pos, key+".severity", r.Severity)...)
		if r.MinSeverity != "" {
			if _, err := severity.Parse(r.MinSeverity); err != nil {
				add(key+".min_severity", "%v", err)
			}
		}
	}
	return append(errs, a.validateSeverityRules(pos)...)
}

func (p *AlertPolicy) validate(pos *positions, key string) []error {
	var errs []error
	if p.ConfirmAfter < 0 {
		errs = append(errs, pos.errorf(key+".confirm_after", "must not be negative"))
	}
	if p.ErroredAfter < 0 {
		errs = append(errs, pos.errorf(key+".errored_after", "must not be negative"))
	}
	return append(errs, checkSeverities(pos, key+".severity", p.Severity)...)
}

func checkSeverities(pos *positions, key string, m map[string]string) []error {
	var errs []error
	for class, sev := range m {
		if !alertClasses[class] {
			errs = append(errs, pos.errorf(key+"."+class, "unknown class %q (use drift, forbidden, validation or errored)", class))
		}
		if _, err := severity.Parse(sev); err != nil {
			errs = append(errs, pos.errorf(key+"."+class, "%v", err))
		}
	}
	return errs
}

// EffectiveAlertPolicy merges alerts (daemon-wide) with the workspace's
// overrides and applies defaults.
func (c *Config) EffectiveAlertPolicy(w Workspace) AlertPolicy {
	p := c.Alerts.AlertPolicy
	if o := w.Alerts; o != nil {
		if o.IncludePending != nil {
			p.IncludePending = o.IncludePending
		}
		if o.ConfirmAfter > 0 {
			p.ConfirmAfter = o.ConfirmAfter
		}
		if o.ErroredAfter > 0 {
			p.ErroredAfter = o.ErroredAfter
		}
		if o.RenotifyAfter > 0 {
			p.RenotifyAfter = o.RenotifyAfter
		}
		if len(o.Severity) > 0 {
			sev := map[string]string{}
			for k, v := range p.Severity {
				sev[k] = v
			}
			for k, v := range o.Severity {
				sev[k] = v
			}
			p.Severity = sev
		}
	}
	if p.ConfirmAfter == 0 {
		p.ConfirmAfter = DefaultConfirmAfter
	}
	if p.ErroredAfter == 0 {
		p.ErroredAfter = DefaultErroredAfter
	}
	if p.IncludePending == nil {
		f := false
		p.IncludePending = &f
	}
	return p
}
