package slack

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"
)

// Delivery modes.
const (
	ModeBot     = "bot"     // a bot token: chat.postMessage, chat.update, threads
	ModeWebhook = "webhook" // an incoming webhook: one message per transition
)

// DefaultAPIURL is Slack's Web API base URL.
const DefaultAPIURL = "https://slack.com/api/"

// DefaultTimeout bounds one HTTP request to Slack.
const DefaultTimeout = 10 * time.Second

// channelIDPattern matches Slack conversation IDs (C…, G…, D…). A channel
// name ("#ops") would work for chat.postMessage but not for
// conversations.history, which the duplicate check needs.
var channelIDPattern = regexp.MustCompile(`^[CGD][A-Z0-9]{6,}$`)

// Config is one Slack notifier instance. Secrets are read from files only,
// so they never sit in the config file or its error messages.
type Config struct {
	// Name is the instance name, e.g. "slack-oncall".
	Name string `yaml:"name"`
	// Mode is "bot" or "webhook".
	Mode string `yaml:"mode"`
	// TokenFile holds the bot token (xoxb-…); bot mode only.
	TokenFile string `yaml:"token_file"`
	// WebhookURLFile holds the incoming webhook URL, whose path is itself a
	// secret; webhook mode only.
	WebhookURLFile string `yaml:"webhook_url_file"`
	// Channel is the channel ID (C0123456789) to post to; bot mode only
	// (an incoming webhook's channel is fixed when it is created).
	Channel string `yaml:"channel"`
	// APIURL overrides the Web API base URL (tests); default
	// https://slack.com/api/. A missing trailing "/" is added.
	APIURL string `yaml:"api_url"`
	// Timeout bounds each HTTP request; default 10s.
	Timeout time.Duration `yaml:"timeout"`
	// Interactive adds Approve / Reject buttons to awaiting-approval
	// remediation messages. Set it only when the daemon answers them: the
	// Slack app's interactivity Request URL points at the daemon, which
	// has this notifier's signing secret and approvers.
	Interactive bool `yaml:"-"`
}

// Validate checks the configuration without reading the secret files.
// Errors name the YAML key.
func (c Config) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	switch c.Mode {
	case ModeBot:
		if c.TokenFile == "" {
			errs = append(errs, errors.New("token_file is required in bot mode"))
		}
		if c.WebhookURLFile != "" {
			errs = append(errs, errors.New("webhook_url_file must not be set in bot mode (use mode: webhook)"))
		}
		switch {
		case c.Channel == "":
			errs = append(errs, errors.New("channel is required in bot mode"))
		case !channelIDPattern.MatchString(c.Channel):
			errs = append(errs, fmt.Errorf("channel %q must be a channel ID such as C0123456789, not a name: the duplicate check reads the channel's history by ID", c.Channel))
		}
		if c.APIURL != "" {
			u, err := url.Parse(c.APIURL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				errs = append(errs, errors.New("api_url must be an http(s) URL"))
			} else if u.User != nil || u.RawQuery != "" {
				errs = append(errs, errors.New("api_url must not contain credentials or a query"))
			}
		}
	case ModeWebhook:
		if c.WebhookURLFile == "" {
			errs = append(errs, errors.New("webhook_url_file is required in webhook mode"))
		}
		if c.TokenFile != "" {
			errs = append(errs, errors.New("token_file must not be set in webhook mode (use mode: bot)"))
		}
		if c.Channel != "" {
			errs = append(errs, errors.New("channel must not be set in webhook mode: the webhook fixes the channel"))
		}
		if c.APIURL != "" {
			errs = append(errs, errors.New("api_url must not be set in webhook mode"))
		}
	case "":
		errs = append(errs, errors.New(`mode is required ("bot" or "webhook")`))
	default:
		errs = append(errs, fmt.Errorf(`mode %q must be "bot" or "webhook"`, c.Mode))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s must not be negative", c.Timeout))
	}
	return errors.Join(errs...)
}
