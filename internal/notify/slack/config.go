package slack

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/slack/slackcfg"
)

// Delivery modes (Config.Mode).
const (
	ModeBot     = slackcfg.ModeBot     // a bot token: chat.postMessage, chat.update, threads
	ModeWebhook = slackcfg.ModeWebhook // an incoming webhook: one message per transition
)

// DefaultAPIURL is Slack's Web API base URL.
const DefaultAPIURL = "https://slack.com/api/"

// DefaultTimeout bounds one HTTP request to Slack.
const DefaultTimeout = 10 * time.Second

// Config is one Slack notifier instance (slackcfg.Config: the
// notifiers[].slack block, its keys and its check). Secrets are read from
// files only, so they never sit in the config file or its error messages.
type Config = slackcfg.Config
