// Package slackcfg is the slack notifier's settings: Config, the
// notifiers[].slack block config embeds (keys and all), and its one
// Check, which config runs at load and slack.New through Validate. It
// imports only notifycfg (a leaf), so config may import it.
package slackcfg

import (
	"fmt"
	"regexp"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
)

// Delivery modes (Config.Mode).
const (
	ModeBot     = "bot"     // a bot token: chat.postMessage, chat.update, threads
	ModeWebhook = "webhook" // an incoming webhook: one message per transition
)

// channelID matches Slack conversation IDs (C…, G…, D…). A channel name
// ("#ops") would work for chat.postMessage but not for
// conversations.history, which finding a message again needs.
var channelID = regexp.MustCompile(`^[CGD][A-Z0-9]{6,}$`)

// userID matches Slack user IDs (U…, W… on Enterprise Grid).
var userID = regexp.MustCompile(`^[UW][A-Z0-9]{6,}$`)

// Config is the settings block of a notifier of type slack: bot mode
// (token_file + channel: one message per incident, updated in place,
// changes in its thread) or webhook mode (webhook_url_file: one message
// per transition).
type Config struct {
	// Name is the notifier's name (notifiers[].name; set by the builder).
	Name string `yaml:"-"`
	// Mode is bot (default) or webhook.
	Mode string `yaml:"mode"`
	// TokenFile holds the bot token (xoxb-…); bot mode only.
	TokenFile string `yaml:"token_file"`
	// Channel is the channel ID (C0123456789) to post to; bot mode only
	// (an incoming webhook's channel is fixed when it is created).
	Channel string `yaml:"channel"`
	// WebhookURLFile holds the incoming webhook URL, whose path is itself
	// a secret; webhook mode only.
	WebhookURLFile string `yaml:"webhook_url_file"`
	// APIURL overrides https://slack.com/api/ (tests, proxies); bot mode
	// only. A missing trailing "/" is added.
	APIURL string `yaml:"api_url"`
	// SigningSecretFile holds the Slack app's signing secret. Set, the
	// notifier's awaiting-approval remediation messages carry Approve /
	// Reject buttons, answered by the daemon at server.external_url +
	// /api/v1/slack/interactions (the app's interactivity Request URL).
	SigningSecretFile string `yaml:"signing_secret_file"`
	// Approvers are the Slack user IDs (U0123ABCD) whose clicks decide;
	// required with signing_secret_file.
	Approvers []string `yaml:"approvers"`
	// Timeout bounds each HTTP request (notifiers[].timeout; 0: the
	// notifier's default).
	Timeout time.Duration `yaml:"-"`
	// Interactive adds Approve / Reject buttons to awaiting-approval
	// remediation messages (set by the builder when SigningSecretFile is:
	// the daemon then answers them).
	Interactive bool `yaml:"-"`
}

// Check implements notifycfg.Block; an empty mode becomes bot.
func (c *Config) Check(v notifycfg.Check) {
	switch c.Mode {
	case "", ModeBot:
		c.Mode = ModeBot
		c.TokenFile = v.File("token_file", c.TokenFile)
		switch {
		case c.Channel == "":
			v.Add("channel", "required in bot mode")
		case !channelID.MatchString(c.Channel):
			v.Add("channel", "%q must be a channel ID such as C0123456789, not a name: IDs survive renames, and driftwatch finds its incident messages again by ID", c.Channel)
		}
		if c.WebhookURLFile != "" {
			v.Add("webhook_url_file", "only in webhook mode")
		}
		if u := v.URL("api_url", c.APIURL); u != nil && u.RawQuery != "" {
			v.Add("api_url", "a query is not allowed")
		}
	case ModeWebhook:
		c.WebhookURLFile = v.File("webhook_url_file", c.WebhookURLFile)
		if c.TokenFile != "" {
			v.Add("token_file", "only in bot mode")
		}
		if c.Channel != "" {
			v.Add("channel", "only in bot mode: the webhook fixes the channel")
		}
		if c.APIURL != "" {
			v.Add("api_url", "only in bot mode")
		}
	default:
		v.Add("mode", "unknown mode %q (use bot or webhook)", c.Mode)
	}
	if c.SigningSecretFile != "" {
		c.SigningSecretFile = v.File("signing_secret_file", c.SigningSecretFile)
		if len(c.Approvers) == 0 {
			v.Add("approvers", "required with signing_secret_file: the Slack user IDs whose clicks approve")
		}
	} else if len(c.Approvers) > 0 {
		v.Add("approvers", "only with signing_secret_file: the daemon cannot verify Slack's requests without it")
	}
	v.Each("approvers", c.Approvers, func(u string, dup bool) string {
		switch {
		case !userID.MatchString(u):
			return fmt.Sprintf("%q must be a Slack user ID such as U0123ABCD (the member ID in the user's profile, not a name)", u)
		case dup:
			return fmt.Sprintf("duplicate %q", u)
		}
		return ""
	})
}

// SecretFiles implements notifycfg.Block.
func (c *Config) SecretFiles() []string {
	return []string{c.TokenFile, c.WebhookURLFile, c.SigningSecretFile}
}

// Validate checks c as slack.New takes it, without touching the file
// system.
func (c Config) Validate() error { return notifycfg.Validate(c.Name, c.Timeout, c.Check) }

// For is c as the notifier sp takes it: with sp's name and timeout, and
// interactive when the daemon answers its buttons (SigningSecretFile).
func (c Config) For(sp notifycfg.Spec) Config {
	c.Name, c.Timeout, c.Interactive = sp.Name, sp.Timeout, c.SigningSecretFile != ""
	return c
}
