package gitlab

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{Name: "gl", TokenFile: "/run/secrets/gitlab", Project: "platform/infra/drift-alerts"}
	notifytest.RequireValidate(t, valid, Config.Validate, []notifytest.ValidateCase[Config]{
		{Name: "numeric project", Edit: func(c *Config) { c.Project = "4242" }},
		{Name: "self-managed", Edit: func(c *Config) { c.APIURL = "https://gitlab.corp.example/gitlab" }},
		{Name: "loopback http", Edit: func(c *Config) { c.APIURL = "http://127.0.0.1:8929" }},
		{Name: "labels", Edit: func(c *Config) { c.Labels = []string{"infra", "priority::2", "team alpha"} }},
		{Name: "no labels", Edit: func(c *Config) { c.Labels = []string{} }},
		{Name: "empty", Edit: func(c *Config) { *c = Config{} }, Want: "name: required\ntoken_file: required\nproject: required: the project's full path (group/project) or numeric ID"},
		{Name: "project without namespace", Edit: func(c *Config) { c.Project = "drift-alerts" },
			Want: `project: "drift-alerts": want the project's full path with its namespace (group/project) or its numeric ID`},
		{Name: "project URL", Edit: func(c *Config) { c.Project = "https://gitlab.com/platform/infra" },
			Want: `project: "https://gitlab.com/platform/infra": want the project's path (group/project) or numeric ID, not a URL`},
		{Name: "project path", Edit: func(c *Config) { c.Project = "/platform/infra/" },
			Want: `project: "/platform/infra/": not a project path (segments of letters, digits, '_', '-' and '.', separated by '/')`},
		{Name: "project .git", Edit: func(c *Config) { c.Project = "platform/infra.git" },
			Want: `project: "platform/infra.git": not a project path (segments of letters, digits, '_', '-' and '.', separated by '/')`},
		{Name: "plain http", Edit: func(c *Config) { c.APIURL = "http://gitlab.corp.example" },
			Want: `api_url: must be https: the token travels in a header (http only to a loopback address)`},
		{Name: "not absolute", Edit: func(c *Config) { c.APIURL = "gitlab.corp.example" },
			Want: `api_url: not an http(s) URL`},
		{Name: "credentials", Edit: func(c *Config) { c.APIURL = "https://user:CANARY@gitlab.corp.example" },
			Want: "api_url: credentials in the URL are not allowed"},
		{Name: "query", Edit: func(c *Config) { c.APIURL = "https://gitlab.corp.example/?private_token=CANARY" },
			Want: "api_url: only scheme, host, port and a path prefix are allowed"},
		{Name: "bad labels", Edit: func(c *Config) {
			c.Labels = []string{"", " x", "a,b", "driftwatch::drift", "ok", "ok", strings.Repeat("l", 256)}
		}, Want: "labels[0]: empty\n" + `labels[1]: " x": leading or trailing spaces` + "\n" +
			`labels[2]: "a,b": a label cannot contain a comma` + "\n" +
			`labels[3]: "driftwatch::drift": the driftwatch:: scope is the class label's (driftwatch::drift, ::forbidden, ::errored), added to every issue` + "\n" +
			`labels[5]: "ok": duplicate` + "\nlabels[6]: longer than 255 characters"},
		{Name: "negative timeout", Edit: func(c *Config) { c.Timeout = -time.Second }, Want: "timeout: -1s: must not be negative"},
	})
}
