package teams

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one HTTP attempt when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures one Microsoft Teams notifier: a Workflows (Power
// Automate) flow whose trigger is "When a Teams webhook request is
// received" and which posts the card it receives to a channel or chat.
type Config struct {
	// Name is the instance name used in routes, logs and the outbox.
	Name string `yaml:"name"`
	// WebhookURLFile holds the flow's trigger URL, with its sig query
	// parameter: whoever has the URL can post to the channel, so it is a
	// secret and never appears in errors or logs.
	WebhookURLFile string `yaml:"webhook_url_file"`
	// Timeout bounds one HTTP attempt (0: DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// Validate checks cfg without touching the file system.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if strings.TrimSpace(c.WebhookURLFile) == "" {
		errs = append(errs, errors.New("webhook_url_file is required"))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must not be negative", c.Timeout))
	}
	return errors.Join(errs...)
}

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// checkWebhookURL checks the trigger URL read from file. Its errors say
// what is wrong and name the file, never the URL or a part of it.
func checkWebhookURL(raw, file string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.Fragment != "" {
		return nil, fmt.Errorf("webhook_url_file %q: want the absolute https URL of a Workflows trigger (\"When a Teams webhook request is received\"), on one line", file)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
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

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
