package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

func TestStatusPage(t *testing.T) {
	h := newHarness(t)
	ts := serve(t, h.options())
	code, hdr, body := get(t, ts.URL+"/")
	body = withoutStyle(body)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
	csp := hdr.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.Contains(t, csp, "style-src 'sha256-")
	require.NotContains(t, csp, "script-src")
	require.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"))

	require.Contains(t, body, "<title>driftwatch: 3 of 6 need attention</title>")
	require.Contains(t, body, `<meta http-equiv="refresh" content="30">`)
	require.NotContains(t, body, "<script")
	require.NotContains(t, body, "retired", "workspaces no longer configured are not shown")
	for _, s := range []string{"errored", "forbidden", "drift", "pending", "clean", "unknown"} {
		require.Contains(t, body, `<a class="chip" href="/?status=`+s+`" title="Show `+s+` workspaces"><span class="dot s-`+s+`"></span><b>1</b> `+s+`</a>`)
	}
	// Severity order, then name.
	last := -1
	for _, name := range []string{"billing-db", "prod-k8s", "prod-network", "sandbox", "staging-web", "new-service"} {
		i := strings.Index(body, `id="ws-`+name+`"`)
		require.Greater(t, i, last, name)
		last = i
	}
	require.Contains(t, body, `<time datetime="2026-03-14T00:00:00Z" title="2026-03-14 00:00:00 UTC">3h ago</time>`)
	require.Contains(t, body, `<time datetime="2026-03-14T01:30:00Z" title="2026-03-14 01:30:00 UTC">1h 30m ago</time>`)
	require.Contains(t, body, `<span class="muted">never</span>`)
	require.Contains(t, body, `<a href="/workspaces/prod-network">prod-network</a>`)
	require.Contains(t, body, `<span class="label">tier=network</span>`)
	require.Contains(t, body, `<td class="err">init: backend: AccessDenied`)
}

func TestStatusPageOverdue(t *testing.T) {
	h := newHarness(t)
	h.setWorkspaces([]WorkspaceInfo{{Name: "stuck", NextRun: testNow.Add(-40 * time.Minute)}, {Name: "waiting", NextRun: testNow.Add(-2 * time.Minute)}})
	ts := serve(t, h.options())
	_, _, body := get(t, ts.URL+"/")
	require.Contains(t, body, `<time class="late" datetime="2026-03-14T02:20:00Z" title="2026-03-14 02:20:00 UTC">overdue 40m ago</time>`)
	require.Contains(t, body, `<time datetime="2026-03-14T02:58:00Z" title="2026-03-14 02:58:00 UTC">2m ago</time>`)
}

func TestPagesEscape(t *testing.T) {
	const evil = `<script>alert("x")</script>`
	h := newHarness(t)
	st := h.store
	st.setState(store.WorkspaceState{
		Workspace: "evil", Status: drift.StatusErrored, Error: "plan: " + evil,
		Findings: []drift.Finding{{Kind: drift.KindDrift, Address: `aws_instance.x["` + evil + `"]`, Type: "aws_instance",
			Action: "update", Attributes: []string{"tags." + evil}}},
	})
	st.addRun(store.Run{ID: "evil-1", Workspace: "evil", Trigger: evil, Status: drift.StatusErrored, StartedAt: testNow, Error: evil})
	// A name that is no DNS label reaches the server only through a bug
	// elsewhere (config validates names); it is escaped all the same.
	st.setState(store.WorkspaceState{Workspace: evil, Status: drift.StatusDrift})
	h.setWorkspaces([]WorkspaceInfo{
		{Name: "evil", Owner: evil, Schedule: evil, Labels: map[string]string{evil: evil}},
		{Name: evil, Owner: evil},
	})
	ts := serve(t, h.options())

	for _, path := range []string{"/", "/workspaces/evil", "/workspaces/%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E", "/workspaces/" + "%3Cscript%3E"} {
		t.Run(path, func(t *testing.T) {
			_, hdr, body := get(t, ts.URL+path)
			require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
			require.NotContains(t, body, "<script")
			require.NotContains(t, strings.ToLower(body), "<script")
		})
	}
	_, _, body := get(t, ts.URL+"/workspaces/evil")
	require.Contains(t, body, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`)
	_, _, body = get(t, ts.URL+"/")
	require.Contains(t, body, `<td class="owner">&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</td>`)
	require.Contains(t, body, `href="/workspaces/%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E"`)
}

func TestWorkspacePage(t *testing.T) {
	h := newHarness(t)
	ts := serve(t, h.options())
	code, hdr, body := get(t, ts.URL+"/workspaces/prod-network")
	body = withoutStyle(body)
	require.Equal(t, http.StatusOK, code)
	require.NotEmpty(t, hdr.Get("Content-Security-Policy"))
	for _, want := range []string{
		"<title>driftwatch: prod-network (drift)</title>",
		`<h1>prod-network <span class="badge s-drift">drift</span></h1>`,
		"2 drift · 1 pending · 0 forbidden · 1 noise",
		`<td class="addr mono">aws_security_group.web</td>`,
		`<code>ingress</code><code>egress[0].cidr_blocks</code>`,
		`<span class="badge s-drift">drift</span> <span class="muted small">ignored</span>`,
		`<td class="num">2m 00s</td>`,
		`<td class="num">—</td>`, // the running run
		`<td class="err">plan: timeout after 30m0s</td>`,
		`curl -X POST -H "Authorization: Bearer $DRIFTWATCH_TOKEN" ` + ts.URL + `/api/v1/workspaces/prod-network/runs`,
	} {
		require.Contains(t, body, want)
	}
	// Runs newest first.
	require.Less(t, strings.Index(body, "s-running"), strings.Index(body, "2m 00s"))

	t.Run("errored keeps the last findings", func(t *testing.T) {
		_, _, body := get(t, ts.URL+"/workspaces/billing-db")
		require.Contains(t, body, `<div class="errorbox"><strong>Last run failed:</strong> init: backend: AccessDenied`)
		require.Contains(t, body, "these findings are from the last successful run")
		require.Contains(t, body, "aws_db_instance.main")
		require.Contains(t, body, "No runs recorded.")
	})
	t.Run("never ran", func(t *testing.T) {
		_, _, body := get(t, ts.URL+"/workspaces/new-service")
		require.Contains(t, body, "No run has finished yet.")
		require.Contains(t, body, `<span class="badge s-unknown">unknown</span>`)
	})
	t.Run("incidents with their severity and the rule that set it", func(t *testing.T) {
		require.Contains(t, body, `<td><span class="sev sev-critical">critical</span></td>
  <td>rule <code>sg-ingress</code></td>`)
		require.Contains(t, body, `<td><span class="sev sev-low">low</span></td>
  <td><span class="muted">class default</span></td>`)
		require.Less(t, strings.Index(body, "sev-critical"), strings.Index(body, "sev-low"), "open before confirming")
		require.NotContains(t, body, "sev-high", "a resolved incident is not listed")
	})
	t.Run("state-backend finding", func(t *testing.T) {
		// Its kind badge is coloured like every other (white text on no
		// background read as an empty badge) and its detail is shown.
		_, _, body := get(t, ts.URL+"/workspaces/sandbox")
		require.Contains(t, body, `<tr class="s-row-backend">`)
		require.Contains(t, body, `<span class="badge s-backend">backend</span>`)
		require.Contains(t, body, `<span class="detail">mode 0644: chmod 600 terraform.tfstate</span>`)
		code, _, api := get(t, ts.URL+"/api/v1/workspaces/sandbox")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, api, `"detail": "mode 0644: chmod 600 terraform.tfstate"`)
	})
	t.Run("clean", func(t *testing.T) {
		_, _, body := get(t, ts.URL+"/workspaces/staging-web")
		require.Contains(t, body, "No findings: the infrastructure matches the code.")
	})
	t.Run("unknown", func(t *testing.T) {
		code, hdr, body := get(t, ts.URL+"/workspaces/nope")
		require.Equal(t, http.StatusNotFound, code)
		require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
		require.Contains(t, body, "<h1>Unknown workspace</h1>")
		require.Contains(t, body, "No workspace called &#34;nope&#34; is configured.")
	})
}

func TestServeAndShutdown(t *testing.T) {
	h := newHarness(t)
	s, err := New(h.options())
	require.NoError(t, err)
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	code, _, body := get(t, "http://"+ln.Addr().String()+"/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(ShutdownTimeout + 5*time.Second):
		t.Fatal("Serve did not return after its context was cancelled")
	}
	_, err = net.DialTimeout("tcp", ln.Addr().String(), time.Second)
	require.Error(t, err, "the listener is closed")
}

func TestRun(t *testing.T) {
	h := newHarness(t)
	s, err := New(h.options())
	require.NoError(t, err)

	t.Run("returns nil when the context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx, "127.0.0.1:0") }()
		require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), "http server listening") }, 5*time.Second, 10*time.Millisecond)
		cancel()
		require.NoError(t, <-done)
	})
	t.Run("listen error", func(t *testing.T) {
		var lc net.ListenConfig
		ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		err = s.Run(t.Context(), ln.Addr().String())
		require.ErrorContains(t, err, `listen on "`+ln.Addr().String()+`": `)
		var opErr *net.OpError
		require.ErrorAs(t, err, &opErr)
	})
}

// A finding's window, who changed it and the commit behind a pending
// change: a line each under the finding, and fields of the API's finding.
func TestFindingProvenance(t *testing.T) {
	h := newHarness(t)
	h.store.setState(store.WorkspaceState{
		Workspace: "attributed", Status: drift.StatusDrift,
		Findings: []drift.Finding{
			{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update",
				Window: &drift.Window{From: testNow.Add(-2 * time.Hour), To: testNow.Add(-time.Hour)},
				Attribution: &drift.Attribution{Actor: "alice@example.com", Time: testNow.Add(-90 * time.Minute), Source: "cloudtrail",
					EventID: "ev-1", URL: "https://audit.example.com/ev-1"}},
			{Kind: drift.KindDrift, Address: "aws_s3_bucket.other", Type: "aws_s3_bucket", Action: "update",
				Window: &drift.Window{To: testNow.Add(-time.Hour)}, AttributionError: "attribution failed: who-changed: timed out"},
			{Kind: drift.KindPending, Address: "aws_iam_role.ci", Type: "aws_iam_role", Action: "create",
				Commit: &drift.Commit{Hash: "0123456789abcdef0123456789abcdef01234567", Author: "Bob", Time: testNow.Add(-3 * time.Hour), Subject: "add the <ci> role"}},
		},
	})
	h.setWorkspaces([]WorkspaceInfo{{Name: "attributed"}})
	ts := serve(t, h.options())
	_, _, body := get(t, ts.URL+"/workspaces/attributed")
	for _, want := range []string{
		`<span class="detail muted small window">changed between <time datetime="2026-03-14T01:00:00Z"`,
		`<span class="detail attribution">changed by <strong>alice@example.com</strong> <time datetime="2026-03-14T01:30:00Z"`,
		`(cloudtrail) <a href="https://audit.example.com/ev-1" rel="noreferrer noopener">ev-1</a></span>`,
		`<span class="detail muted small window">changed before <time datetime="2026-03-14T02:00:00Z"`,
		`<span class="detail muted small attribution-error">attribution failed: who-changed: timed out</span>`,
		`<span class="detail commit">last changed in <code title="0123456789abcdef0123456789abcdef01234567">0123456789ab</code> by Bob <time datetime="2026-03-14T00:00:00Z"`,
		`add the &lt;ci&gt; role</span>`,
	} {
		require.Contains(t, body, want)
	}

	code, _, raw := get(t, ts.URL+"/api/v1/workspaces/attributed")
	require.Equal(t, http.StatusOK, code)
	var ws struct {
		Findings []map[string]any `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &ws))
	require.Len(t, ws.Findings, 3)
	require.Equal(t, map[string]any{"from": "2026-03-14T01:00:00Z", "to": "2026-03-14T02:00:00Z"}, ws.Findings[0]["window"])
	require.Equal(t, map[string]any{"actor": "alice@example.com", "time": "2026-03-14T01:30:00Z", "source": "cloudtrail",
		"event_id": "ev-1", "url": "https://audit.example.com/ev-1"}, ws.Findings[0]["attribution"])
	require.Equal(t, map[string]any{"to": "2026-03-14T02:00:00Z"}, ws.Findings[1]["window"])
	require.Equal(t, "attribution failed: who-changed: timed out", ws.Findings[1]["attribution_error"])
	require.Equal(t, map[string]any{"hash": "0123456789abcdef0123456789abcdef01234567", "author": "Bob",
		"time": "2026-03-14T00:00:00Z", "subject": "add the <ci> role"}, ws.Findings[2]["commit"])
	require.NotContains(t, ws.Findings[2], "window")
}

// A scan's page: its counts, each doubly managed resource's holders, the
// adopt command of each unmanaged one (not of an ignored one), and the
// kinds' badges coloured.
func TestScanPage(t *testing.T) {
	h := newHarness(t)
	scanFixture(h)
	ts := serve(t, h.options())
	code, _, body := get(t, ts.URL+"/workspaces/files")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		"1 unmanaged · 1 managed twice",
		`<tr class="s-row-managed_twice">`,
		`<span class="muted small">managed by a: dwtest_file.s and b: dwtest_file.s</span>`,
		`adopt it: <code>driftwatch adopt files 'dwtest_file[filename=&#34;/srv/hand&#34;]'</code>`,
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "driftwatch adopt files 'dwtest_file[filename=&#34;/srv/tmp", "an ignored one")
	require.Contains(t, body, ".s-unmanaged, .s-managed_twice { background:", "the inline stylesheet colours the kinds' badges")
}
