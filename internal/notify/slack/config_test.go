package slack

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func TestConfigValidate(t *testing.T) {
	bot := Config{Name: "slack-oncall", Mode: ModeBot, TokenFile: "/run/secrets/token", Channel: "C0DRIFTW01"}
	hook := Config{Name: "slack-hook", Mode: ModeWebhook, WebhookURLFile: "/run/secrets/hook"}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"bot", bot, ""},
		{"bot with api_url and timeout", with(bot, func(c *Config) { c.APIURL = "http://127.0.0.1:1234/api"; c.Timeout = time.Second }), ""},
		{"webhook", hook, ""},
		{"no name", with(bot, func(c *Config) { c.Name = "" }), "name: required"},
		{"no mode is bot", with(bot, func(c *Config) { c.Mode = "" }), ""},
		{"bad mode", with(bot, func(c *Config) { c.Mode = "rtm" }), `mode: unknown mode "rtm" (use bot or webhook)`},
		{"bot without token", with(bot, func(c *Config) { c.TokenFile = "" }), "token_file: required"},
		{"bot with both", with(bot, func(c *Config) { c.WebhookURLFile = "/x" }), "webhook_url_file: only in webhook mode"},
		{"bot without channel", with(bot, func(c *Config) { c.Channel = "" }), "channel: required in bot mode"},
		{"bot with channel name", with(bot, func(c *Config) { c.Channel = "#ops" }), `channel: "#ops" must be a channel ID such as C0123456789, not a name: IDs survive renames, and driftwatch finds its incident messages again by ID`},
		{"bot with bad api_url", with(bot, func(c *Config) { c.APIURL = "ftp://x" }), "api_url: not an http(s) URL"},
		{"bot with credentials in api_url", with(bot, func(c *Config) { c.APIURL = "https://u:p@x/api/" }), "api_url: credentials in the URL are not allowed"},
		{"webhook without url", with(hook, func(c *Config) { c.WebhookURLFile = "" }), "webhook_url_file: required"},
		{"webhook with token", with(hook, func(c *Config) { c.TokenFile = "/x" }), "token_file: only in bot mode"},
		{"webhook with channel", with(hook, func(c *Config) { c.Channel = "C0DRIFTW01" }), "channel: only in bot mode: the webhook fixes the channel"},
		{"webhook with api_url", with(hook, func(c *Config) { c.APIURL = "https://slack.com/api/" }), "api_url: only in bot mode"},
		{"negative timeout", with(hook, func(c *Config) { c.Timeout = -time.Second }), "timeout: -1s: must not be negative"},
		{"several", Config{Mode: ModeBot}, "name: required\ntoken_file: required\nchannel: required in bot mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestNewSecretFiles(t *testing.T) {
	files := notifytest.NewFiles(t)
	write := files.Write
	const token = "xoxb-1234-5678-secretsecret"
	const hookURL = "https://hooks.slack.com/services/T000/B000/hooksecretpath"
	bot := Config{Name: "s", Mode: ModeBot, Channel: "C0DRIFTW01"}
	hook := Config{Name: "s", Mode: ModeWebhook}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // error; "" for none
	}{
		{"token with newline", with(bot, "token", write("token", token+"\n")), ""},
		{"missing token file", with(bot, "token", files.Path("nope")), `slack notifier "s": token_file: open ` + files.Path("nope") + `: no such file or directory`},
		{"empty token file", with(bot, "token", write("empty", " \n")), `slack notifier "s": token_file "` + files.Path("empty") + `": empty`},
		{"token with inner space", with(bot, "token", write("spaced", "xoxb-1 "+token)), `slack notifier "s": token_file "` + files.Path("spaced") + `": the token contains whitespace`},
		{"webhook", with(hook, "hook", write("hook", hookURL)), ""},
		{"webhook not a URL", with(hook, "hook", write("badhook", "hooks.slack.com/services/"+token)), `slack notifier "s": webhook_url_file "` + files.Path("badhook") + `": not an http(s) URL with a path`},
		{"webhook without path", with(hook, "hook", write("nopath", "https://hooks.slack.com")), `slack notifier "s": webhook_url_file "` + files.Path("nopath") + `": not an http(s) URL with a path`},
		{"invalid config", Config{Name: "s"}, "slack notifier \"s\": token_file: required\nchannel: required in bot mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := New(tc.cfg, nil, nil)
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, "s", n.Name())
				return
			}
			require.EqualError(t, err, tc.want)
			require.NotContains(t, err.Error(), "secretsecret")
			require.NotContains(t, err.Error(), "hooksecretpath")
		})
	}
}

func with(c Config, kind, path string) Config {
	if kind == "token" {
		c.TokenFile = path
	} else {
		c.WebhookURLFile = path
	}
	return c
}
