package teams

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/notify/teams/teamscfg"
)

// DefaultTimeout bounds one HTTP attempt when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures one Microsoft Teams notifier: a Workflows (Power
// Automate) flow whose trigger is "When a Teams webhook request is
// received" and which posts the card it receives to a channel or chat
// (teamscfg.Config: the notifiers[].teams block, its keys and its check).
type Config = teamscfg.Config

// checkWebhookURL checks the trigger URL read from file. Its errors say
// what is wrong and name the file, never the URL or a part of it.
func checkWebhookURL(raw, file string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.Fragment != "" {
		return nil, fmt.Errorf("webhook_url_file %q: want the absolute https URL of a Workflows trigger (\"When a Teams webhook request is received\"), on one line", file)
	}
	if u.Scheme == "http" && !notifycfg.Loopback(u.Hostname()) {
		return nil, fmt.Errorf("webhook_url_file %q: the URL must be https: its sig parameter is the credential (plain http only to a loopback address)", file)
	}
	if isRetiredConnector(u.Hostname()) {
		return nil, fmt.Errorf("webhook_url_file %q: this is an Office 365 connector (Incoming Webhook) URL, and those connectors are retired: create a Workflows flow with the trigger \"When a Teams webhook request is received\" and use its URL", file)
	}
	if u.Query().Get("sig") == "" {
		return nil, fmt.Errorf("webhook_url_file %q: the URL has no sig parameter: copy the whole trigger URL, query included", file)
	}
	return u, nil
}

// isRetiredConnector reports whether host serves Office 365 connectors'
// Incoming Webhooks (outlook.office.com/webhook, *.webhook.office.com).
func isRetiredConnector(host string) bool {
	host = strings.ToLower(host)
	return host == "outlook.office.com" || host == "outlook.office365.com" || strings.HasSuffix(host, ".webhook.office.com")
}
