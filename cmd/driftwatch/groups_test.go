package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/storetest"
)

// fakeGroups is the daemon's group incidents, in memory.
type fakeGroups = storetest.Groups

// groupsServer is the real server over gs; its reads need the token
// ("tok", in the returned file).
func groupsServer(t *testing.T, gs fakeGroups) (url, tokenFile string) {
	return daemonServer(t, server.Options{Control: logsControl{}, Groups: gs,
		Config: config.Server{Auth: config.Auth{AnonymousRole: config.RoleNone}}})
}

// `driftwatch groups` lists the daemon's group incidents, one line each,
// and `groups show ID` one with its members; --format json is the API's
// answer; refusals are the daemon's reason on stderr and exit 1.
func TestGroupsCmd(t *testing.T) {
	opened := time.Date(2026, 3, 14, 1, 0, 0, 0, time.UTC)
	sg := func(ws, addr string) store.GroupMember {
		return store.GroupMember{Workspace: ws, Finding: drift.Finding{Kind: drift.KindDrift, Address: addr, Type: "aws_security_group",
			Action: "update", Attributes: []string{"ingress", "tags_all"}}}
	}
	srv, tok := groupsServer(t, fakeGroups{
		{ID: "g-0123456789abcdef", Cause: "shape", CauseKey: "aws_security_group ingress,tags_all list → list",
			Title: "aws_security_group: ingress, tags_all changed on 2 resources in 2 workspaces", State: store.IncidentOpen, Severity: "high",
			Members: []store.GroupMember{sg("net", "aws_security_group.web"), sg("payments", "aws_security_group.db")}, Workspaces: 2,
			FirstSeen: opened.Add(-time.Hour), LastSeen: opened, OpenedAt: opened, NotifiedAt: opened},
		{ID: "g-fedcba9876543210", Cause: "commit", CauseKey: "4f1c2e9a0b7d", Title: "commit 4f1c2e9a0b7d: pending changes on 2 resources in 2 workspaces",
			State: store.IncidentResolved, Workspaces: 2, OpenedAt: opened.Add(-48 * time.Hour), ResolvedAt: opened.Add(-24 * time.Hour)},
	})
	bad := filepath.Join(t.TempDir(), "bad")
	require.NoError(t, os.WriteFile(bad, []byte("nope-CANARY"), 0o600))
	for _, c := range []struct {
		args      []string
		code      int
		out, errb string
	}{
		{[]string{"groups", "--server", srv, "--token-file", tok}, 0, "" +
			"GROUP               STATE  SINCE                 TITLE\n" +
			"g-0123456789abcdef  open   2026-03-14T01:00:00Z  aws_security_group: ingress, tags_all changed on 2 resources in 2 workspaces\n", ""},
		{[]string{"groups", "--all", "--server", srv, "--token-file", tok}, 0, "" +
			"GROUP               STATE     SINCE                 TITLE\n" +
			"g-0123456789abcdef  open      2026-03-14T01:00:00Z  aws_security_group: ingress, tags_all changed on 2 resources in 2 workspaces\n" +
			"g-fedcba9876543210  resolved  2026-03-12T01:00:00Z  commit 4f1c2e9a0b7d: pending changes on 2 resources in 2 workspaces\n", ""},
		{[]string{"groups", "show", "g-0123456789abcdef", "--server", srv, "--token-file", tok}, 0, "" +
			"group g-0123456789abcdef (open): aws_security_group: ingress, tags_all changed on 2 resources in 2 workspaces\n" +
			"cause:         shape: aws_security_group ingress,tags_all list → list\n" +
			"severity:      high\n" +
			"members:       2 in 2 workspaces\n" +
			"first seen:    2026-03-14T00:00:00Z\n" +
			"last seen:     2026-03-14T01:00:00Z\n" +
			"opened:        2026-03-14T01:00:00Z\n" +
			"last message:  2026-03-14T01:00:00Z\n" +
			"\n" +
			"WORKSPACE  KIND   ACTION  ADDRESS                 ATTRIBUTES\n" +
			"net        drift  update  aws_security_group.web  ingress, tags_all\n" +
			"payments   drift  update  aws_security_group.db   ingress, tags_all\n", ""},
		{[]string{"groups", "show", "--server", srv, "--token-file", tok, "g-fedcba9876543210"}, 0, "" +
			"group g-fedcba9876543210 (resolved): commit 4f1c2e9a0b7d: pending changes on 2 resources in 2 workspaces\n" +
			"cause:     commit: 4f1c2e9a0b7d\n" +
			"members:   0 in 2 workspaces\n" +
			"opened:    2026-03-12T01:00:00Z\n" +
			"resolved:  2026-03-13T01:00:00Z\n", ""},
		{[]string{"groups", "show", "g-nope", "--server", srv, "--token-file", tok}, 1, "",
			"driftwatch: groups show g-nope: 404 Not Found: unknown group\n"},
		{[]string{"groups", "--server", srv}, 1, "",
			"driftwatch: groups: 401 Unauthorized: reading needs a credential: an API token, as a bearer token or as the password of HTTP Basic auth (any user name), " +
				"or a sign-in through the proxy: the daemon at " + srv + " serves groups to readers: pass --token-file\n"},
		{[]string{"groups", "--server", srv, "--token-file", bad}, 1, "",
			"driftwatch: groups: 401 Unauthorized: invalid credential: it is none of the configured API tokens: the daemon at " + srv + " rejected the token in " + bad + "\n"},
		{[]string{"groups", "--format", "yaml"}, 1, "", "driftwatch: unknown format \"yaml\" (use text or json)\n"},
		{[]string{"groups", "show"}, 1, "", "driftwatch: groups show needs a group ID\n" + groupsUsage + "\n"},
		{[]string{"groups", "show", "g-1", "--all"}, 1, "", "driftwatch: --all lists groups: groups show takes none\n"},
		{[]string{"groups", "g-1"}, 1, "", "driftwatch: unexpected argument \"g-1\"\n" + groupsUsage + "\n"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, c.code, run(c.args, &out, &errb), "%v: %s", c.args, errb.String())
		require.Equal(t, c.out, out.String(), c.args)
		require.Equal(t, c.errb, errb.String(), c.args)
	}

	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"groups", "show", "g-0123456789abcdef", "--format", "json", "--server", srv, "--token-file", tok}, &out, &errb), errb.String())
	require.JSONEq(t, `{
	  "id": "g-0123456789abcdef", "cause": "shape", "cause_key": "aws_security_group ingress,tags_all list → list",
	  "title": "aws_security_group: ingress, tags_all changed on 2 resources in 2 workspaces", "state": "open", "severity": "high", "workspaces": 2,
	  "members": [
	    {"workspace": "net", "address": "aws_security_group.web", "type": "aws_security_group", "kind": "drift", "action": "update", "attributes": ["ingress", "tags_all"]},
	    {"workspace": "payments", "address": "aws_security_group.db", "type": "aws_security_group", "kind": "drift", "action": "update", "attributes": ["ingress", "tags_all"]}
	  ],
	  "first_seen": "2026-03-14T00:00:00Z", "last_seen": "2026-03-14T01:00:00Z", "opened_at": "2026-03-14T01:00:00Z", "notified_at": "2026-03-14T01:00:00Z"
	}`, out.String())
	out.Reset()
	require.Equal(t, 0, run([]string{"groups", "--all", "--format", "json", "--server", srv, "--token-file", tok}, &out, &errb), errb.String())
	require.Contains(t, out.String(), `"groups": [`)
	require.Contains(t, out.String(), `"resolved_at": "2026-03-13T01:00:00Z"`)

	// None open: it says so.
	empty, tok2 := groupsServer(t, nil)
	out.Reset()
	require.Equal(t, 0, run([]string{"groups", "--server", empty, "--token-file", tok2}, &out, &errb), errb.String())
	require.Equal(t, "No open groups.\n", out.String())
}
