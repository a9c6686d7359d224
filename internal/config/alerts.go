package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/notify/severity"
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

// SlackConfig is the Slack notifier's settings: bot mode (token_file +
// channel: one message per incident, updated in place, changes in its
// thread) or webhook mode (webhook_url_file: one message per transition).
type SlackConfig struct {
	Mode           string `yaml:"mode"`
	TokenFile      string `yaml:"token_file"`
	Channel        string `yaml:"channel"`
	WebhookURLFile string `yaml:"webhook_url_file"`
	// APIURL overrides https://slack.com/api/ (tests, proxies).
	APIURL string `yaml:"api_url"`
	// SigningSecretFile holds the Slack app's signing secret. Set, the
	// notifier's awaiting-approval remediation messages carry Approve /
	// Reject buttons, answered by the daemon at server.external_url +
	// /api/v1/slack/interactions (the app's interactivity Request URL).
	SigningSecretFile string `yaml:"signing_secret_file"`
	// Approvers are the Slack user IDs (U0123ABCD) whose clicks decide;
	// required with signing_secret_file.
	Approvers []string `yaml:"approvers"`
}

// OpsGenieConfig is an OpsGenie API integration.
type OpsGenieConfig struct {
	APIKeyFile string `yaml:"api_key_file"`
	// Region is us (default) or eu.
	Region string `yaml:"region"`
	// APIURL overrides the region's API URL (tests, proxies).
	APIURL string `yaml:"api_url"`
}

// WebhookConfig is a generic signed JSON webhook.
type WebhookConfig struct {
	URLFile    string            `yaml:"url_file"`
	SecretFile string            `yaml:"secret_file"`
	Headers    map[string]string `yaml:"headers"`
}

// PagerDutyConfig is a PagerDuty Events API v2 integration (on a service
// or a ruleset).
type PagerDutyConfig struct {
	// RoutingKeyFile holds the integration key (routing key).
	RoutingKeyFile string `yaml:"routing_key_file"`
	// URL overrides the Events API's base URL, https://events.pagerduty.com
	// (EU accounts: https://events.eu.pagerduty.com; proxies, tests).
	URL string `yaml:"url"`
	// Source is the events' payload.source (default: the workspace, which
	// then moves to payload.component).
	Source string `yaml:"source"`
	// SeverityMap maps driftwatch severities (critical, high, moderate,
	// low, info) to PagerDuty's (critical, error, warning, info), over the
	// default critical→critical, high→error, moderate→warning,
	// low→warning, info→info.
	SeverityMap map[string]string `yaml:"severity_map"`
}

// pagerDutySeverities are the Events API's payload.severity values.
var pagerDutySeverities = []string{"critical", "error", "warning", "info"}

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

var slackChannelID = regexp.MustCompile(`^[CGD][A-Z0-9]{6,}$`)

// slackUserID matches Slack user IDs (U…, W… on Enterprise Grid).
var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{6,}$`)

// NotifierTypes are the notifier types, each with a settings block of
// the same name.
var NotifierTypes = []string{"slack", "opsgenie", "webhook", "pagerduty", "teams", "jsm", "github", "gitlab", "email"}

var typeList = strings.Join(NotifierTypes[:len(NotifierTypes)-1], ", ") + " or " + NotifierTypes[len(NotifierTypes)-1]

// notifierBlock is the settings block of one of the newer notifier
// types, each in its own file (notifier_<type>.go).
type notifierBlock interface {
	// validate checks the block and makes its file paths absolute.
	validate(c blockCheck)
	// secretFiles are the block's files holding secrets.
	secretFiles() []string
}

// blockCheck is what a notifierBlock's validate reports through: keys are
// relative to the block (e.g. "webhook_url_file").
type blockCheck struct {
	// file resolves a required file path against the config's
	// directory and checks that it exists.
	file func(sub, p string) string
	add  func(sub, format string, args ...any)
}

// url checks an optional http(s) URL without credentials in it.
func (c blockCheck) url(sub, u string) {
	checkURL(u, sub, c.add)
}

// block is n's notifierBlock for the newer types (nil: none set).
func (n *Notifier) block() notifierBlock {
	switch n.Type {
	case "teams":
		if n.Teams != nil {
			return n.Teams
		}
	case "jsm":
		if n.JSM != nil {
			return n.JSM
		}
	case "github":
		if n.GitHub != nil {
			return n.GitHub
		}
	case "gitlab":
		if n.GitLab != nil {
			return n.GitLab
		}
	case "email":
		if n.Email != nil {
			return n.Email
		}
	}
	return nil
}

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
		switch n.Type {
		case "slack":
			s := n.Slack
			if s == nil {
				add(key+".slack", "required for type slack")
				continue
			}
			switch s.Mode {
			case "", "bot":
				s.Mode = "bot"
				s.TokenFile = file("slack.token_file", s.TokenFile)
				switch {
				case s.Channel == "":
					add(key+".slack.channel", "required in bot mode")
				case !slackChannelID.MatchString(s.Channel):
					add(key+".slack.channel", "%q must be a channel ID such as C0123456789, not a name: IDs survive renames, and driftwatch finds its incident messages again by ID", s.Channel)
				}
				if s.WebhookURLFile != "" {
					add(key+".slack.webhook_url_file", "only in webhook mode")
				}
			case "webhook":
				s.WebhookURLFile = file("slack.webhook_url_file", s.WebhookURLFile)
				if s.TokenFile != "" {
					add(key+".slack.token_file", "only in bot mode")
				}
			default:
				add(key+".slack.mode", "unknown mode %q (use bot or webhook)", s.Mode)
			}
			checkURL(s.APIURL, key+".slack.api_url", add)
			if s.SigningSecretFile != "" {
				s.SigningSecretFile = file("slack.signing_secret_file", s.SigningSecretFile)
				if len(s.Approvers) == 0 {
					add(key+".slack.approvers", "required with signing_secret_file: the Slack user IDs whose clicks approve")
				}
			} else if len(s.Approvers) > 0 {
				add(key+".slack.approvers", "only with signing_secret_file: the daemon cannot verify Slack's requests without it")
			}
			seen := map[string]bool{}
			for j, u := range s.Approvers {
				switch {
				case !slackUserID.MatchString(u):
					add(fmt.Sprintf("%s.slack.approvers[%d]", key, j), "%q must be a Slack user ID such as U0123ABCD (the member ID in the user's profile, not a name)", u)
				case seen[u]:
					add(fmt.Sprintf("%s.slack.approvers[%d]", key, j), "duplicate %q", u)
				}
				seen[u] = true
			}
		case "opsgenie":
			o := n.OpsGenie
			if o == nil {
				add(key+".opsgenie", "required for type opsgenie")
				continue
			}
			o.APIKeyFile = file("opsgenie.api_key_file", o.APIKeyFile)
			switch o.Region {
			case "":
			case "us", "eu":
				if o.APIURL != "" {
					add(key+".opsgenie.region", "set region or api_url, not both")
				}
			default:
				add(key+".opsgenie.region", "unknown region %q (use us or eu)", o.Region)
			}
			checkURL(o.APIURL, key+".opsgenie.api_url", add)
		case "webhook":
			w := n.Webhook
			if w == nil {
				add(key+".webhook", "required for type webhook")
				continue
			}
			w.URLFile = file("webhook.url_file", w.URLFile)
			w.SecretFile = file("webhook.secret_file", w.SecretFile)
		case "pagerduty":
			p := n.PagerDuty
			if p == nil {
				add(key+".pagerduty", "required for type pagerduty")
				continue
			}
			p.RoutingKeyFile = file("pagerduty.routing_key_file", p.RoutingKeyFile)
			checkURL(p.URL, key+".pagerduty.url", add)
			if u, err := url.Parse(p.URL); err == nil && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
				add(key+".pagerduty.url", "must be https: the routing key travels in the body (http only to a loopback address)")
			}
			for _, sev := range slices.Sorted(maps.Keys(p.SeverityMap)) {
				k := key + ".pagerduty.severity_map." + sev
				if _, err := severity.Parse(sev); err != nil {
					add(k, "%v", err)
				}
				if v := p.SeverityMap[sev]; !slices.Contains(pagerDutySeverities, v) {
					add(k, "unknown PagerDuty severity %q (use critical, error, warning or info)", v)
				}
			}
		case "teams", "jsm", "github", "gitlab", "email":
			b := n.block()
			if b == nil {
				add(key+"."+n.Type, "required for type %s", n.Type)
				continue
			}
			b.validate(blockCheck{
				file: func(sub, p string) string { return file(n.Type+"."+sub, p) },
				add:  func(sub, format string, args ...any) { add(key+"."+n.Type+"."+sub, format, args...) },
			})
		case "":
			add(key+".type", "required (%s)", typeList)
		default:
			add(key+".type", "unknown type %q (use %s)", n.Type, typeList)
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

func checkURL(u, key string, add func(key, format string, args ...any)) {
	if u == "" {
		return
	}
	if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		add(key, "not an http(s) URL")
	} else if pu.User != nil {
		add(key, "credentials in the URL are not allowed")
	}
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
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
