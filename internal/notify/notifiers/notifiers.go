package notifiers

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/opsgenie"
	"github.com/driftwatch/driftwatch/internal/notify/pagerduty"
	"github.com/driftwatch/driftwatch/internal/notify/slack"
	"github.com/driftwatch/driftwatch/internal/notify/webhook"
)

// Build constructs every configured notifier (reading their
// secret files). Errors name the notifier, never a secret.
func Build(cfg *config.Config, logger *slog.Logger) (map[string]notify.Notifier, error) {
	out := make(map[string]notify.Notifier, len(cfg.Notifiers))
	for _, n := range cfg.Notifiers {
		hc, err := httpClient(n.CAFile)
		if err != nil {
			return nil, fmt.Errorf("notifier %q: %w", n.Name, err)
		}
		timeout := time.Duration(n.Timeout)
		log := logger // each notifier names itself in its log lines
		var nt notify.Notifier
		switch n.Type {
		case "slack":
			s := n.Slack
			nt, err = slack.New(slack.Config{Name: n.Name, Mode: s.Mode, TokenFile: s.TokenFile, WebhookURLFile: s.WebhookURLFile,
				Channel: s.Channel, APIURL: s.APIURL, Timeout: timeout, Interactive: s.SigningSecretFile != ""}, hc, log)
		case "opsgenie":
			o := n.OpsGenie
			nt, err = opsgenie.New(opsgenie.Config{Name: n.Name, APIKeyFile: o.APIKeyFile, Region: o.Region, APIURL: o.APIURL, Timeout: timeout},
				hc, log)
		case "webhook":
			w := n.Webhook
			nt, err = webhook.New(webhook.Config{Name: n.Name, URLFile: w.URLFile, SecretFile: w.SecretFile, Headers: w.Headers, Timeout: timeout},
				hc, log)
		case "pagerduty":
			p := n.PagerDuty
			if p == nil {
				err = errors.New("type pagerduty without a pagerduty block")
				break
			}
			nt, err = pagerduty.New(pagerduty.Config{Name: n.Name, RoutingKeyFile: p.RoutingKeyFile, URL: p.URL, Source: p.Source,
				SeverityMap: p.SeverityMap, Timeout: timeout}, hc, log)
		case "teams":
			nt, err = buildTeams(n, timeout, hc, log)
		case "jsm":
			nt, err = buildJSM(n, timeout, hc, log)
		case "github":
			nt, err = buildGitHub(n, timeout, hc, log)
		case "gitlab":
			nt, err = buildGitLab(n, timeout, hc, log)
		case "email":
			nt, err = buildEmail(n, timeout, log)
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
