package gitlab

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{Name: "gl", TokenFile: "/run/secrets/gitlab", Project: "platform/infra/drift-alerts"}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{name: "valid", edit: func(*Config) {}},
		{name: "numeric project", edit: func(c *Config) { c.Project = "4242" }},
		{name: "self-managed", edit: func(c *Config) { c.APIURL = "https://gitlab.corp.example/gitlab" }},
		{name: "loopback http", edit: func(c *Config) { c.APIURL = "http://127.0.0.1:8929" }},
		{name: "labels", edit: func(c *Config) { c.Labels = []string{"infra", "priority::2", "team alpha"} }},
		{name: "no labels", edit: func(c *Config) { c.Labels = []string{} }},
		{name: "empty", edit: func(c *Config) { *c = Config{} }, want: "name: required\ntoken_file: required\nproject: required: the project's full path (group/project) or numeric ID"},
		{name: "project without namespace", edit: func(c *Config) { c.Project = "drift-alerts" },
			want: `project: "drift-alerts": want the project's full path with its namespace (group/project) or its numeric ID`},
		{name: "project URL", edit: func(c *Config) { c.Project = "https://gitlab.com/platform/infra" },
			want: `project: "https://gitlab.com/platform/infra": want the project's path (group/project) or numeric ID, not a URL`},
		{name: "project path", edit: func(c *Config) { c.Project = "/platform/infra/" },
			want: `project: "/platform/infra/": not a project path (segments of letters, digits, '_', '-' and '.', separated by '/')`},
		{name: "project .git", edit: func(c *Config) { c.Project = "platform/infra.git" },
			want: `project: "platform/infra.git": not a project path (segments of letters, digits, '_', '-' and '.', separated by '/')`},
		{name: "plain http", edit: func(c *Config) { c.APIURL = "http://gitlab.corp.example" },
			want: `api_url: must be https: the token travels in a header (http only to a loopback address)`},
		{name: "not absolute", edit: func(c *Config) { c.APIURL = "gitlab.corp.example" },
			want: `api_url: not an http(s) URL`},
		{name: "credentials", edit: func(c *Config) { c.APIURL = "https://user:CANARY@gitlab.corp.example" },
			want: "api_url: credentials in the URL are not allowed"},
		{name: "query", edit: func(c *Config) { c.APIURL = "https://gitlab.corp.example/?private_token=CANARY" },
			want: "api_url: only scheme, host, port and a path prefix are allowed"},
		{name: "bad labels", edit: func(c *Config) {
			c.Labels = []string{"", " x", "a,b", "driftwatch::drift", "ok", "ok", strings.Repeat("l", 256)}
		}, want: "labels[0]: empty\n" + `labels[1]: " x": leading or trailing spaces` + "\n" +
			`labels[2]: "a,b": a label cannot contain a comma` + "\n" +
			`labels[3]: "driftwatch::drift": the driftwatch:: scope is the class label's (driftwatch::drift, ::forbidden, ::errored), added to every issue` + "\n" +
			`labels[5]: "ok": duplicate` + "\nlabels[6]: longer than 255 characters"},
		{name: "negative timeout", edit: func(c *Config) { c.Timeout = -time.Second }, want: "timeout: -1s: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
			require.NotContains(t, err.Error(), "CANARY")
		})
	}
}
