package notifiers

import (
	"fmt"
	"log/slog"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/email"
	"github.com/driftwatch/driftwatch/internal/notify/email/emailcfg"
	"github.com/driftwatch/driftwatch/internal/notify/github"
	"github.com/driftwatch/driftwatch/internal/notify/github/githubcfg"
	"github.com/driftwatch/driftwatch/internal/notify/gitlab"
	"github.com/driftwatch/driftwatch/internal/notify/gitlab/gitlabcfg"
	"github.com/driftwatch/driftwatch/internal/notify/jsm"
	"github.com/driftwatch/driftwatch/internal/notify/jsm/jsmcfg"
	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/notify/opsgenie"
	"github.com/driftwatch/driftwatch/internal/notify/opsgenie/opsgeniecfg"
	"github.com/driftwatch/driftwatch/internal/notify/pagerduty"
	"github.com/driftwatch/driftwatch/internal/notify/pagerduty/pagerdutycfg"
	"github.com/driftwatch/driftwatch/internal/notify/slack"
	"github.com/driftwatch/driftwatch/internal/notify/slack/slackcfg"
	"github.com/driftwatch/driftwatch/internal/notify/teams"
	"github.com/driftwatch/driftwatch/internal/notify/teams/teamscfg"
	"github.com/driftwatch/driftwatch/internal/notify/webhook"
	"github.com/driftwatch/driftwatch/internal/notify/webhook/webhookcfg"
)

// Reload is a reloaded config's notifiers for the outbox
// (inventory.Notifiers): SetNotifiers builds them and hands them to Set
// (outbox.Dispatcher.SetNotifiers); an error keeps the previous ones.
type Reload struct {
	Set    func(map[string]notify.Notifier)
	Logger *slog.Logger
}

// SetNotifiers builds specs' notifiers (Build) and hands them to Set.
func (r Reload) SetNotifiers(specs []notifycfg.Spec) error {
	ns, err := Build(specs, r.Logger)
	if err == nil {
		r.Set(ns)
	}
	return err
}

// Build constructs every configured notifier (reading their secret
// files) from its settings block, given the spec's name and timeout.
// Errors name the notifier, never a secret.
func Build(specs []notifycfg.Spec, logger *slog.Logger) (map[string]notify.Notifier, error) {
	out := make(map[string]notify.Notifier, len(specs))
	for _, sp := range specs {
		nt, err := build(sp, logger) // each notifier names itself in its log lines
		if err != nil {
			return nil, fmt.Errorf("notifier %q: %w", sp.Name, err)
		}
		out[sp.Name] = nt
	}
	return out, nil
}

// build constructs one notifier from its settings block; a New's error
// is returned as is, not as a nil *Notifier in a non-nil interface.
func build(sp notifycfg.Spec, log *slog.Logger) (notify.Notifier, error) {
	if c, ok := sp.Settings.(*emailcfg.Config); ok { // SMTP: ca_file is its own
		return nonNil(email.New(c.For(sp), log))
	}
	hc, err := notify.CAClient(sp.CAFile)
	if err != nil {
		return nil, err
	}
	switch c := sp.Settings.(type) {
	case *slackcfg.Config:
		return nonNil(slack.New(c.For(sp), hc, log))
	case *opsgeniecfg.Config:
		return nonNil(opsgenie.New(c.For(sp), hc, log))
	case *webhookcfg.Config:
		return nonNil(webhook.New(c.For(sp), hc, log))
	case *pagerdutycfg.Config:
		return nonNil(pagerduty.New(c.For(sp), hc, log))
	case *teamscfg.Config:
		return nonNil(teams.New(c.For(sp), hc, log))
	case *jsmcfg.Config:
		return nonNil(jsm.New(c.For(sp), hc, log))
	case *githubcfg.Config:
		return nonNil(github.New(c.For(sp), hc, log))
	case *gitlabcfg.Config:
		return nonNil(gitlab.New(c.For(sp), hc, log))
	}
	return nil, fmt.Errorf("no settings block of a known type (%T)", sp.Settings)
}

func nonNil[N notify.Notifier](n N, err error) (notify.Notifier, error) {
	if err != nil {
		return nil, err
	}
	return n, nil
}
