package config

import "net/url"

// JSMConfig is the settings block of a notifier of type jsm: a Jira
// Service Management "API" integration (OpsGenie's successor). It takes
// the same incidents to the same alerts as an opsgenie block.
type JSMConfig struct {
	// APIKeyFile holds the API key of the team's JSM API integration.
	APIKeyFile string `yaml:"api_key_file"`
	// APIURL overrides the integration API's base URL,
	// https://api.atlassian.com/jsm/ops/integration (proxies, tests):
	// https, or http to a loopback address; a path is a prefix.
	APIURL string `yaml:"api_url"`
}

func (c *JSMConfig) validate(v blockCheck) {
	c.APIKeyFile = v.file("api_key_file", c.APIKeyFile)
	if c.APIURL == "" {
		return
	}
	v.url("api_url", c.APIURL)
	u, err := url.Parse(c.APIURL)
	if err != nil {
		return // v.url reported it
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		v.add("api_url", "must be https: the API key travels in a header (http only to a loopback address)")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		v.add("api_url", "only scheme, host, port and a path prefix are allowed")
	}
}

func (c *JSMConfig) secretFiles() []string { return []string{c.APIKeyFile} }
