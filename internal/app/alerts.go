package app

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/opsgenie"
	"github.com/driftwatch/driftwatch/internal/notify/slack"
	"github.com/driftwatch/driftwatch/internal/notify/webhook"
	"github.com/driftwatch/driftwatch/internal/store"
)

// buildNotifiers constructs every configured notifier (reading their
// secret files). Errors name the notifier, never a secret.
func buildNotifiers(cfg *config.Config, logger *slog.Logger) (map[string]notify.Notifier, error) {
	out := make(map[string]notify.Notifier, len(cfg.Notifiers))
	for _, n := range cfg.Notifiers {
		hc, err := httpClient(n.CAFile)
		if err != nil {
			return nil, fmt.Errorf("notifier %q: %w", n.Name, err)
		}
		timeout := time.Duration(n.Timeout)
		log := logger.With("notifier", n.Name)
		var nt notify.Notifier
		switch n.Type {
		case "slack":
			s := n.Slack
			nt, err = slack.New(slack.Config{Name: n.Name, Mode: s.Mode, TokenFile: s.TokenFile, WebhookURLFile: s.WebhookURLFile,
				Channel: s.Channel, APIURL: s.APIURL, Timeout: timeout}, hc, log)
		case "opsgenie":
			o := n.OpsGenie
			nt, err = opsgenie.New(opsgenie.Config{Name: n.Name, APIKeyFile: o.APIKeyFile, Region: o.Region, APIURL: o.APIURL, Timeout: timeout},
				hc, log)
		case "webhook":
			w := n.Webhook
			nt, err = webhook.New(webhook.Config{Name: n.Name, URLFile: w.URLFile, SecretFile: w.SecretFile, Headers: w.Headers, Timeout: timeout},
				hc, log)
		default:
			err = fmt.Errorf("unknown type %q", n.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("notifier %q: %w", n.Name, err)
		}
		out[n.Name] = nt
	}
	return out, nil
}

// httpClient trusts caFile's certificates in addition to the system's
// (private CAs, TLS-inspecting proxies, test servers).
func httpClient(caFile string) (*http.Client, error) {
	if caFile == "" {
		return &http.Client{}, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("ca_file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca_file %s: no PEM certificate in it", caFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}, nil
}

// alertPlan is what the daemon needs to turn a run into incidents and
// outbox messages for one workspace.
type alertPlan struct {
	policy  incident.Policy
	targets []incident.Target
}

func severities(m map[string]string) map[notify.Class]notify.Severity {
	if len(m) == 0 {
		return nil
	}
	out := make(map[notify.Class]notify.Severity, len(m))
	for k, v := range m {
		out[notify.Class(k)] = notify.Severity(v)
	}
	return out
}

// alertPlans computes each workspace's policy and notifier targets.
func alertPlans(cfg *config.Config) map[string]alertPlan {
	routes := make([]incident.Route, 0, len(cfg.Alerts.Routes))
	for _, r := range cfg.Alerts.Routes {
		routes = append(routes, incident.Route{
			Match:     incident.RouteMatch{Workspaces: r.Match.Workspaces, Labels: r.Match.Labels},
			Notifiers: r.Notifiers, Severity: severities(r.Severity), Team: r.Team, Continue: r.Continue,
		})
	}
	out := make(map[string]alertPlan, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		p := cfg.EffectiveAlertPolicy(w)
		url := ""
		if cfg.Server.ExternalURL != "" {
			url = cfg.Server.ExternalURL + "/workspaces/" + w.Name
		}
		out[w.Name] = alertPlan{
			policy: incident.Policy{
				IncludePending: *p.IncludePending, ConfirmAfter: p.ConfirmAfter, ErroredAfter: p.ErroredAfter,
				RenotifyAfter: time.Duration(p.RenotifyAfter), Severity: severities(p.Severity),
				Owner: w.Owner, URL: url, Labels: w.Labels,
			},
			targets: incident.Routes(routes, cfg.Alerts.DefaultNotifiers, w.Name, w.Labels),
		}
	}
	return out
}

// outcome returns the store.Outcome of a run: incident transitions and one
// outbox message per notifier target. With no notifier configured,
// incidents are still tracked (for the status page and API).
func (p alertPlan) outcome(now time.Time, runID string) store.Outcome {
	return func(before, after store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		changed, msgs := incident.Decide(now, runID, p.policy, before, after, incidents, newRunID)
		out, err := incident.Enqueue(now, msgs, p.targets)
		if err != nil {
			// Enqueue only fails on a payload that cannot be encoded: a bug.
			panic(fmt.Sprintf("driftwatch/app: enqueue: %v", err))
		}
		return changed, out
	}
}
