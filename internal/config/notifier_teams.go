package config

// TeamsConfig is the settings block of a notifier of type teams: a
// Microsoft Teams channel or chat reached through a Workflows (Power
// Automate) flow whose trigger is "When a Teams webhook request is
// received". Office 365 connector (Incoming Webhook) URLs are retired and
// refused.
type TeamsConfig struct {
	// WebhookURLFile holds the flow's trigger URL, whole: its sig query
	// parameter is the credential, so the URL is a secret (redacted from
	// every log and error).
	WebhookURLFile string `yaml:"webhook_url_file"`
}

func (c *TeamsConfig) validate(v blockCheck) {
	c.WebhookURLFile = v.file("webhook_url_file", c.WebhookURLFile)
}

func (c *TeamsConfig) secretFiles() []string { return []string{c.WebhookURLFile} }
