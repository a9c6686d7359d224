package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// upgradeCLIConfig writes a CLI config that offers driftwatch/dwtest's
// next release (0.2.0, from the mirror-next beside the tools' mirror: see
// hack/provision.sh) besides the usual mirror, and returns its path and
// the next mirror's directory (which the jailed runs must read).
func upgradeCLIConfig(t *testing.T, e *tfEnv) (path, next string) {
	t.Helper()
	tools := filepath.Dir(e.cliConfig)
	next = filepath.Join(tools, "mirror-next")
	_, err := os.Stat(filepath.Join(next, "registry.terraform.io", "driftwatch", "dwtest", "0.2.0"))
	require.NoError(t, err, "dwtest 0.2.0 is not provisioned: run `make tools`")
	path = filepath.Join(e.root, "terraformrc-upgrade")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["*/*/*"]
  }
  filesystem_mirror {
    path    = %q
    include = ["*/*/*"]
  }
}
disable_checkpoint = true
`, filepath.Join(tools, "mirror"), next)), 0o644))
	return path, next
}

// groupedWorkspace is a workspace pinned to dwtest version whose one file
// ends in a newline (dwtest 0.2.0 reads it trimmed: drift), plus, with
// extra, a second file.
func groupedWorkspace(version string, extra bool) string {
	s := fmt.Sprintf(`terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest", version = "%s" }
  }
}
resource "dwtest_file" "motd" {
  filename = "@ROOT@/out/@NAME@.txt"
  content  = "welcome\n"
}
`, version)
	if extra {
		s += `resource "dwtest_file" "extra" {
  filename = "@ROOT@/out/@NAME@-extra.txt"
  content  = "x"
}
`
	}
	return s
}

// TestGroupingProviderUpgrade: twelve workspaces share a provider whose
// next version normalises an attribute differently. Upgrading it in all
// twelve (a commit that moves the version constraint and the lock file)
// gives one grouped incident and one page per route, not twelve; a
// workspace with unrelated drift of its own keeps its own incident for
// that part; fixing six resolves six members and keeps the group open;
// fixing the rest resolves it.
func TestGroupingProviderUpgrade(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	var next string
	e.cliConfig, next = upgradeCLIConfig(t, e)
	e.extraSandbox = append(e.extraSandbox, next)
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "out"), 0o755))

	const n = 12
	names := make([]string, n)
	dirs := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("net%02d", i)
		names[i] = name
		dirs[name] = e.workspace(t, name, map[string]string{"main.tf": strings.ReplaceAll(groupedWorkspace("0.1.0", name == "net03"), "@NAME@", name)})
		e.apply(t, dirs[name])
	}
	// setVersion rewrites a workspace's constraint and its lock file, as
	// a commit of `terraform init -upgrade` would.
	setVersion := func(name, version string) {
		t.Helper()
		e.workspace(t, name, map[string]string{"main.tf": strings.ReplaceAll(groupedWorkspace(version, name == "net03"), "@NAME@", name)})
		e.tf(t, dirs[name], "init", "-upgrade", "-input=false", "-no-color")
	}

	as := newAlertServers(t, e)
	var ws strings.Builder
	for _, name := range names {
		fmt.Fprintf(&ws, "  - { name: %s, source: { path: ./%s }, schedule: \"@every 3s\" }\n", name, name)
	}
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", external_url: "https://driftwatch.example.com" }
store: { path: %s }
allow_sub_minute_schedules: true
max_concurrent_runs: 4
grouping: { enabled: true, wait: 40s }
%s
alerts:
  default_notifiers: [slack-oncall, pager, hook]
workspaces:
%s`, listen, filepath.Join(e.root, "data", "dw.db"), as.notifiers, ws.String()))
	d := startDaemonEnv(t, cfg, listen, as.env)
	clean := func(names ...string) func() bool {
		return func() bool {
			st := d.workspaces()
			for _, n := range names {
				if st[n].Status != "clean" {
					return false
				}
			}
			return true
		}
	}
	d.eventually("every workspace clean", 120*time.Second, clean(names...))

	// The upgrade, everywhere; net03 also loses a file of its own.
	for _, name := range names {
		setVersion(name, "0.2.0")
	}
	require.NoError(t, os.Remove(filepath.Join(e.root, "out", "net03-extra.txt")))

	groupOpens := func() []notifytest.WebhookDelivery {
		var out []notifytest.WebhookDelivery
		for _, dl := range as.hook.Deliveries() {
			if dl.Payload.Incident.Group != nil && dl.Payload.Event == "open" {
				out = append(out, dl)
			}
		}
		return out
	}
	lastGroup := func() notifytest.WebhookDelivery {
		var last notifytest.WebhookDelivery
		for _, dl := range as.hook.Deliveries() {
			if dl.Payload.Incident.Group != nil {
				last = dl
			}
		}
		return last
	}
	d.eventually("the group holds all twelve", 180*time.Second, func() bool {
		return len(groupOpens()) == 1 && len(lastGroup().Payload.Incident.Findings) == n
	})
	g := lastGroup().Payload.Incident
	require.Equal(t, "driftwatch/dwtest 0.1.0 → 0.2.0: content changed on 12 resources in 12 workspaces", g.Group.Title)
	require.Equal(t, "provider", g.Group.Cause)
	require.Equal(t, names, g.Group.Workspaces)
	require.Equal(t, "net00: dwtest_file.motd", g.Findings[0].Address)
	require.Contains(t, g.URL, "https://driftwatch.example.com/groups/g-")

	// The API, the pages and the CLI show the group.
	var api struct {
		Groups []struct {
			ID, Title, State, Cause string
			Workspaces              int
			Members                 []struct{ Workspace, Address string }
		}
	}
	d.getJSON("/api/v1/groups", &api)
	require.Len(t, api.Groups, 1)
	ag := api.Groups[0]
	require.Equal(t, g.Group.ID, ag.ID)
	require.Equal(t, g.Group.Title, ag.Title)
	require.Equal(t, "open", ag.State)
	require.Equal(t, n, ag.Workspaces)
	require.Len(t, ag.Members, n)
	require.Contains(t, d.page("/groups/"+ag.ID), "0.1.0 → 0.2.0")
	require.Contains(t, d.page("/workspaces/net05"), "/groups/"+ag.ID)
	require.Contains(t, d.page("/"), "/groups/"+ag.ID)
	listed := driftwatch(t, nil, "groups", "--server", d.base)
	require.Equal(t, 0, listed.code, listed.stderr)
	require.Contains(t, listed.stdout, ag.ID)
	require.Contains(t, listed.stdout, "content changed on 12 resources in 12 workspaces")

	// net03's own drift (a deleted file) could join no group: its own
	// incident, for that part only.
	d.eventually("net03's own incident", 60*time.Second, func() bool {
		for _, dl := range as.hook.Deliveries() {
			if dl.Payload.Incident.Group == nil && dl.Payload.Event == "open" {
				return true
			}
		}
		return false
	})
	var own []notifytest.WebhookDelivery
	for _, dl := range as.hook.Deliveries() {
		if dl.Payload.Incident.Group == nil {
			own = append(own, dl)
		}
	}
	require.Len(t, own, 1, "one workspace incident in all: net03's")
	require.Equal(t, "net03", own[0].Payload.Incident.Workspace)
	require.Len(t, own[0].Payload.Incident.Findings, 1)
	require.Equal(t, "dwtest_file.extra", own[0].Payload.Incident.Findings[0].Address)

	// One page per route: one OpsGenie alert and one Slack parent for the
	// group, one each for net03.
	require.Len(t, as.og.Alerts(), 2)
	require.Len(t, as.slack.Messages("C0DRIFT01"), 2)
	groupAlias := ""
	for _, a := range as.og.Alerts() {
		if strings.HasPrefix(a.Alias, "dw-group-") {
			groupAlias = a.Alias
		}
	}
	require.NotEmpty(t, groupAlias, "the group's OpsGenie alert: %+v", as.og.Alerts())

	// Six fixed (back to 0.1.0): six members resolve, the group stays.
	for _, name := range names[:6] {
		setVersion(name, "0.1.0")
	}
	d.eventually("six members left", 120*time.Second, func() bool {
		return len(lastGroup().Payload.Incident.Findings) == 6
	})
	a, ok := as.og.Alert(groupAlias)
	require.True(t, ok)
	require.Equal(t, "open", a.Status)
	require.Len(t, groupOpens(), 1, "never a second page for the group")

	// The rest fixed: the group resolves, its OpsGenie alert closes.
	for _, name := range names[6:] {
		setVersion(name, "0.1.0")
	}
	d.eventually("the group resolved", 120*time.Second, func() bool {
		a, _ := as.og.Alert(groupAlias)
		return a.Status == "closed" && lastGroup().Payload.Event == "resolve"
	})
	require.Len(t, as.og.Alerts(), 2)
	require.Len(t, as.slack.Messages("C0DRIFT01"), 2)
	d.getJSON("/api/v1/groups", &api)
	require.Empty(t, api.Groups, "no open group")
	d.getJSON("/api/v1/groups?all=true", &api)
	require.Len(t, api.Groups, 1)
	require.Equal(t, "resolved", api.Groups[0].State)
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}
