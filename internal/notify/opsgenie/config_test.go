package opsgenie

import (
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/notify/opsgenie/opsgeniecfg"
	"github.com/opsgenie/opsgenie-go-sdk-v2/client"
	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{Name: "og", APIKeyFile: "/run/secrets/og"}
	notifytest.RequireValidate(t, valid, Config.Validate, []notifytest.ValidateCase[Config]{
		{Name: "eu", Edit: func(c *Config) { c.Region = "eu" }},
		{Name: "api url", Edit: func(c *Config) { c.APIURL = "api.opsgenie-proxy.corp:8443" }},
		{Name: "loopback", Edit: func(c *Config) { c.APIURL = "127.0.0.1:8080" }},
		{Name: "responders", Edit: func(c *Config) {
			c.Responders = []Responder{{Type: "team", Name: "sre"}, {Type: "user", Name: "a@b.c"}}
		}},
		{Name: "empty", Edit: func(c *Config) { *c = Config{} }, Want: "name: required\napi_key_file: required"},
		{Name: "region", Edit: func(c *Config) { c.Region = "apac" }, Want: `region: unknown region "apac" (use us or eu)`},
		{Name: "region and url", Edit: func(c *Config) { c.Region, c.APIURL = "eu", "api.example.com" }, Want: "region: set region or api_url, not both"},
		{Name: "plain http host", Edit: func(c *Config) { c.APIURL = "opsgenie-proxy.corp" }, Want: `api_url: "opsgenie-proxy.corp": host must contain "api" or be a loopback address: the OpsGenie SDK sends the API key over plain http to any other host`},
		{Name: "negative timeout", Edit: func(c *Config) { c.Timeout = -time.Second }, Want: "timeout: -1s: must not be negative"},
		{Name: "responder", Edit: func(c *Config) { c.Responders = []Responder{{Type: "group"}} }, Want: "responders[0].type: \"group\": use team, user, escalation or schedule\nresponders[0].name: required"},
	})
}

func TestAPIHost(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "api.eu.opsgenie.com", want: "api.eu.opsgenie.com"},
		{in: "https://api.eu.opsgenie.com/", want: "api.eu.opsgenie.com"},
		{in: "api.example.com:8443", want: "api.example.com:8443"},
		{in: "127.0.0.1:9000", want: "127.0.0.1:9000"},
		{in: "[::1]:9000", want: "[::1]:9000"},
		{in: "localhost:9000", want: "localhost:9000"},
		{in: "http://api.opsgenie.com", err: `"http://api.opsgenie.com": scheme must be https`},
		{in: "https://127.0.0.1:9000", err: `"https://127.0.0.1:9000": the SDK speaks plain http to hosts without "api"; write a loopback address as host:port`},
		{in: "https://api.atlassian.com/jsm/ops/integration", err: `"https://api.atlassian.com/jsm/ops/integration": only a host and port are allowed (the SDK cannot use a path)`},
		{in: "api.atlassian.com/jsm", err: `"api.atlassian.com/jsm": want host[:port]`},
		{in: "10.0.0.8:80", err: `"10.0.0.8:80": host must contain "api" or be a loopback address: the OpsGenie SDK sends the API key over plain http to any other host`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := opsgeniecfg.APIHost(tc.in)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestConfigAPIURL(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want client.ApiUrl
	}{
		{Config{}, client.API_URL},
		{Config{Region: "us"}, client.API_URL},
		{Config{Region: "eu"}, client.API_URL_EU},
		{Config{APIURL: "api.example.com"}, "api.example.com"},
	} {
		got := apiURL(tc.cfg)
		require.Equal(t, tc.want, got)
	}
}
