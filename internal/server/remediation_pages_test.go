package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// fakeRemediations is an in-memory RemediationControl for the pages: they
// only read (List, Get, Status).
type fakeRemediations struct {
	mu              sync.Mutex
	rs              []store.Remediation
	enabled, paused bool
	err             error // fails every read
}

var _ RemediationControl = (*fakeRemediations)(nil)

func (f *fakeRemediations) add(rs ...store.Remediation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rs = append(f.rs, rs...)
}

// List returns newest first, as the store does.
func (f *fakeRemediations) List(_ context.Context, workspace string) ([]store.Remediation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	var out []store.Remediation
	for _, r := range f.rs {
		if workspace == "" || r.Workspace == workspace {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.Remediation) int { return cmp.Compare(b.CreatedAt.UnixNano(), a.CreatedAt.UnixNano()) })
	return out, nil
}

func (f *fakeRemediations) Get(_ context.Context, id string) (store.Remediation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return store.Remediation{}, f.err
	}
	for _, r := range f.rs {
		if r.ID == id {
			return r, nil
		}
	}
	return store.Remediation{}, store.ErrNotFound
}

func (f *fakeRemediations) Approve(context.Context, string, string) (store.Remediation, error) {
	return store.Remediation{}, errors.New("pages never approve")
}

func (f *fakeRemediations) Reject(context.Context, string) (store.Remediation, error) {
	return store.Remediation{}, errors.New("pages never reject")
}

func (f *fakeRemediations) Status(context.Context) (enabled, paused bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.enabled, f.paused, f.err
}

func (f *fakeRemediations) SetPaused(context.Context, bool) error {
	return errors.New("pages never pause")
}

const (
	testHash = "9f2c4e1d0b7a65f3e8d2c1b0a9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6"
	// secretValue sits in fields no page may render: change sets carry
	// no values, and a future field holding one must not show.
	secretValue = "hunter2-value"
)

// remediationFixture adds one remediation per state to prod-network (and
// a lapsed pending one to sandbox, an approved one to staging-web, one of
// a workspace no longer configured) and returns the fake.
func remediationFixture(h *harness) *fakeRemediations {
	ago := func(d time.Duration) time.Time { return testNow.Add(-d) }
	changeSet := `{"entries":[
		{"address":"aws_route53_record.api","action":"update","attributes":["ttl"],"after":"` + secretValue + `"},
		{"address":"aws_security_group.web","action":"update","attributes":["egress[0].cidr_blocks","ingress"]}]}`
	f := &fakeRemediations{enabled: true}
	f.add(
		store.Remediation{
			ID: "rem-pend", Workspace: "prod-network", DetectRunID: "run-net-3", Mode: "approve",
			ChangeSet: []byte(changeSet), ChangeSetHash: testHash, Refusals: []byte(`[]`),
			State: store.RemediationPending, CreatedAt: ago(10 * time.Minute), ExpiresAt: testNow.Add(23*time.Hour + 50*time.Minute),
		},
		store.Remediation{
			ID: "rem-refused", Workspace: "prod-network", DetectRunID: "run-net-2", Mode: "auto",
			ChangeSet: []byte(changeSet), ChangeSetHash: "h2",
			Refusals: []byte(`[
				{"code":"pending","address":"aws_instance.bastion","reason":"aws_instance.bastion has a planned update with no drift behind it (unapplied configuration): a remediation reverts drift, it never deploys unreviewed code"},
				{"code":"too_many_resources","reason":"the apply would change 3 resources; remediation.max_resources is 2"}]`),
			State: store.RemediationRefused, Reason: "pending: aws_instance.bastion has a planned update ...",
			CreatedAt: ago(3*time.Hour + 20*time.Minute),
		},
		store.Remediation{
			ID: "rem-applied", Workspace: "prod-network", DetectRunID: "run-net-1", ApplyRunID: "run-net-rem", Mode: "auto",
			ChangeSet: []byte(changeSet), ChangeSetHash: "h3", Refusals: []byte(`[]`),
			State: store.RemediationApplied, CreatedAt: ago(4 * time.Hour), DecidedAt: ago(4 * time.Hour), DecidedBy: "auto",
			FinishedAt: ago(4*time.Hour - 50*time.Second),
			Outcome:    []byte(`{"result":"applied","before":` + changeSet + `,"apply_started":true,"tool":"terraform 1.11.4"}`),
		},
		store.Remediation{
			ID: "rem-failed", Workspace: "prod-network", DetectRunID: "run-net-1", ApplyRunID: "run-net-fail", Mode: "approve",
			ChangeSet: []byte(changeSet), ChangeSetHash: "h4", Refusals: []byte(`[]`),
			State: store.RemediationFailed, Reason: "apply: aws_security_group.web: UnauthorizedOperation",
			CreatedAt: ago(5 * time.Hour), DecidedAt: ago(5 * time.Hour), DecidedBy: "api", FinishedAt: ago(5*time.Hour - time.Minute),
			Outcome: []byte(`{"result":"failed","reason":"apply: aws_security_group.web: UnauthorizedOperation","before":` + changeSet + `,"apply_started":true}`),
		},
		store.Remediation{
			ID: "rem-expired", Workspace: "prod-network", DetectRunID: "run-net-1", Mode: "approve",
			ChangeSet: []byte(changeSet), ChangeSetHash: "h5", Refusals: []byte(`[]`),
			State: store.RemediationExpired, CreatedAt: ago(30 * time.Hour), DecidedAt: ago(6 * time.Hour), DecidedBy: "expiry",
		},
		store.Remediation{
			ID: "rem-lapsed", Workspace: "sandbox", DetectRunID: "run-sbx-1", Mode: "approve",
			ChangeSet: []byte(`{"entries":[{"address":"aws_s3_bucket.scratch","action":"update","attributes":["tags"]}]}`), ChangeSetHash: "h6",
			State: store.RemediationPending, CreatedAt: ago(25 * time.Hour), ExpiresAt: ago(time.Hour),
		},
		store.Remediation{
			ID: "rem-held", Workspace: "staging-web", DetectRunID: "run-stg-1", Mode: "approve",
			ChangeSet: []byte(`{"entries":[{"address":"aws_lb.web","action":"update","attributes":["idle_timeout"]}]}`), ChangeSetHash: "h7",
			State: store.RemediationApproved, CreatedAt: ago(time.Hour), DecidedAt: ago(50 * time.Minute), DecidedBy: "api",
		},
		store.Remediation{
			ID: "rem-retired", Workspace: "retired", Mode: "approve", ChangeSet: []byte(`{"entries":[]}`),
			State: store.RemediationPending, CreatedAt: ago(time.Hour), ExpiresAt: testNow.Add(time.Hour),
		},
	)
	h.store.addRun(store.Run{
		ID: "run-net-rem", Workspace: "prod-network", Trigger: "remediate", Status: "applied",
		StartedAt: ago(4 * time.Hour), FinishedAt: ago(4*time.Hour - 50*time.Second),
	})
	h.store.addRun(store.Run{
		ID: "run-net-fail", Workspace: "prod-network", Trigger: "remediate", Status: "failed",
		StartedAt: ago(5 * time.Hour), FinishedAt: ago(5*time.Hour - time.Minute), Error: "apply: aws_security_group.web: UnauthorizedOperation",
	})
	return f
}

// serveRemediation serves the fixture with f as the remediation control,
// with testToken as the API token (run pages need it).
func serveRemediation(t *testing.T, h *harness, f *fakeRemediations) string {
	t.Helper()
	o := h.options()
	o.Control = withRemediation{h, f}
	o.Config.TokenFile = writeToken(t, testToken)
	return serve(t, o).URL
}

// rowOf returns the table row with the given id.
func rowOf(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, `id="`+id+`"`)
	require.GreaterOrEqual(t, i, 0, "row %s in %s", id, body)
	j := strings.Index(body[i:], "</tr>")
	require.Positive(t, j)
	return body[i : i+j]
}

func TestStatusPageRemediationSummary(t *testing.T) {
	h := newHarness(t)
	f := remediationFixture(h)
	base := serveRemediation(t, h, f)

	code, _, body := get(t, base+"/")
	body = withoutStyle(body)
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`<span class="remsum-head">Remediation</span>`,
		`<span class="badge s-clean">enabled</span>`,
		`<span class="chip"><b>2</b> pending approval</span>`,
		`<span class="chip"><b>1</b> approved, waiting</span>`,
		`<span class="chip zero"><b>0</b> applying</span>`,
		`<a href="/api/v1/remediations">/api/v1/remediations</a>`,
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "rem-retired", "a workspace no longer configured is not shown")
	// Oldest first: the lapsed one, then the fresh one.
	require.Less(t, strings.Index(body, `id="rem-rem-lapsed"`), strings.Index(body, `id="rem-rem-pend"`))
	pend := rowOf(t, body, "rem-rem-pend")
	for _, want := range []string{
		`<a href="/remediations/rem-pend" title="remediation rem-pend: change set and commands">review rem-pend</a>`,
		`<a href="/workspaces/prod-network">prod-network</a>`,
		`<td class="num">2</td>`,
		`<time datetime="2026-03-14T02:50:00Z" title="2026-03-14 02:50:00 UTC">10m ago</time>`,
		`<time datetime="2026-03-15T02:50:00Z" title="2026-03-15 02:50:00 UTC">in 23h</time>`,
	} {
		require.Contains(t, pend, want)
	}
	require.Contains(t, rowOf(t, body, "rem-rem-lapsed"), `<span class="late">approval window over</span>`)

	t.Run("paused", func(t *testing.T) {
		f.mu.Lock()
		f.paused = true
		f.mu.Unlock()
		t.Cleanup(func() { f.mu.Lock(); f.paused = false; f.mu.Unlock() })
		_, _, body := get(t, base+"/")
		require.Contains(t, body, `<span class="badge s-pending">paused</span> <span>kill switch on: nothing is applied until <code>POST /api/v1/remediation/resume</code></span>`)
	})
	t.Run("disabled by config", func(t *testing.T) {
		f.mu.Lock()
		f.enabled = false
		f.mu.Unlock()
		t.Cleanup(func() { f.mu.Lock(); f.enabled = true; f.mu.Unlock() })
		_, _, body := get(t, base+"/")
		require.Contains(t, body, `<span class="badge s-errored">disabled</span> <span>by config (<code>remediation.enabled: false</code>): nothing is applied</span>`)
	})
	t.Run("without remediation control", func(t *testing.T) {
		_, _, body := get(t, serve(t, h.options()).URL+"/")
		require.NotContains(t, withoutStyle(body), "remsum")
		require.NotContains(t, body, "/api/v1/remediations")
	})
	t.Run("store error", func(t *testing.T) {
		f2 := &fakeRemediations{err: errors.New("database is locked")}
		code, _, body := get(t, serveRemediation(t, newHarness(t), f2)+"/")
		require.Equal(t, http.StatusInternalServerError, code)
		require.Contains(t, body, "<h1>Internal error</h1>")
		require.NotContains(t, body, "database is locked")
	})
}

func TestWorkspacePageRemediations(t *testing.T) {
	h := newHarness(t)
	f := remediationFixture(h)
	base := serveRemediation(t, h, f)
	code, _, body := get(t, base+"/workspaces/prod-network")
	body = withoutStyle(body)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<h2 id="remediations">Remediations <small>newest first, at most 10</small></h2>`)
	require.Contains(t, body, `<a href="/api/v1/remediations?workspace=prod-network">remediations</a>`)
	require.NotContains(t, body, secretValue)

	// Newest first.
	last := -1
	for _, id := range []string{"rem-pend", "rem-refused", "rem-applied", "rem-failed", "rem-expired"} {
		i := strings.Index(body, `id="rem-`+id+`"`)
		require.Greater(t, i, last, id)
		last = i
	}
	require.NotContains(t, body, "rem-lapsed", "another workspace's")

	t.Run("pending", func(t *testing.T) {
		require.Contains(t, body, `<tr class="s-row-pending" id="rem-rem-pend">`)
		row := rowOf(t, body, "rem-rem-pend")
		for _, want := range []string{
			`<a href="/remediations/rem-pend" title="remediation rem-pend: change set, refusals, outcome"><span class="badge s-pending">pending</span></a>`,
			`<td>approve</td>`,
			`<td class="num">2</td>`,
			`waits for approval: nothing is applied until someone approves it <a href="/remediations/rem-pend">Review the change set</a>.`,
			`<code>driftwatch approve rem-pend --hash ` + testHash + ` --server ` + base + ` --token-file "$DRIFTWATCH_TOKEN_FILE"</code>`,
			`<code>driftwatch reject rem-pend --server ` + base + ` --token-file "$DRIFTWATCH_TOKEN_FILE"</code>`,
			`expires <time datetime="2026-03-15T02:50:00Z" title="2026-03-15 02:50:00 UTC">in 23h</time>`,
			`<a href="/runs/run-net-3">detection</a></td>`,
		} {
			require.Contains(t, row, want)
		}
		require.NotContains(t, row, ">apply</a>", "no apply run yet")
	})
	t.Run("refused", func(t *testing.T) {
		row := rowOf(t, body, "rem-rem-refused")
		require.Contains(t, row, `<span class="badge s-refused">refused</span>`)
		require.Contains(t, row, `<ul class="refusals"><li>aws_instance.bastion has a planned update with no drift behind it (unapplied configuration): a remediation reverts drift, it never deploys unreviewed code <span class="label">pending</span></li>`+
			`<li>the apply would change 3 resources; remediation.max_resources is 2 <span class="label">too_many_resources</span></li>`+"\n</ul>")
		require.NotContains(t, row, "driftwatch approve")
		require.Contains(t, row, `<span class="muted">—</span>`, "never decided")
	})
	t.Run("applied", func(t *testing.T) {
		row := rowOf(t, body, "rem-rem-applied")
		require.Contains(t, row, `<span class="badge s-applied">applied</span>`)
		require.Contains(t, row, "applied: the verification plan shows no drift and no change left at the approved addresses")
		require.NotContains(t, row, "apply had started", "an applied change is no warning")
		require.Contains(t, row, `<time datetime="2026-03-13T23:00:00Z" title="2026-03-13 23:00:00 UTC">4h ago</time> by auto`)
		require.Contains(t, row, `<a href="/runs/run-net-1">detection</a> · <a href="/runs/run-net-rem">apply</a>`)
	})
	t.Run("failed", func(t *testing.T) {
		row := rowOf(t, body, "rem-rem-failed")
		require.Contains(t, row, `<span class="badge s-failed">failed</span>`)
		require.Contains(t, row, `apply: aws_security_group.web: UnauthorizedOperation <strong class="late">terraform apply had started: infrastructure and state may have changed.</strong>`)
		require.Contains(t, row, " by api")
	})
	t.Run("expired", func(t *testing.T) {
		row := rowOf(t, body, "rem-rem-expired")
		require.Contains(t, row, `<span class="badge s-expired">expired</span>`)
		require.Contains(t, row, "expired unapproved: nothing was applied")
		require.Contains(t, row, `6h ago</time> by expiry`)
	})
	t.Run("lapsed pending", func(t *testing.T) {
		_, _, body := get(t, base+"/workspaces/sandbox")
		row := rowOf(t, body, "rem-rem-lapsed")
		require.Contains(t, row, "approval window over: an approval is refused; it expires unapplied")
		require.NotContains(t, row, "driftwatch approve")
	})
	t.Run("approved, held by the kill switch", func(t *testing.T) {
		f.mu.Lock()
		f.paused = true
		f.mu.Unlock()
		t.Cleanup(func() { f.mu.Lock(); f.paused = false; f.mu.Unlock() })
		_, _, body := get(t, base+"/workspaces/staging-web")
		row := rowOf(t, body, "rem-rem-held")
		require.Contains(t, row, `<span class="badge s-approved">approved</span>`)
		require.Contains(t, row, "approved, held by the kill switch (paused, or disabled in the config): it applies once remediation is on again")
		require.Contains(t, row, `Stop it before it applies: <code>driftwatch reject rem-held --server `+base)
		require.NotContains(t, row, "driftwatch approve")
	})
	t.Run("none", func(t *testing.T) {
		_, _, body := get(t, base+"/workspaces/new-service")
		require.Contains(t, body, `<p class="empty">No remediation proposed.</p>`)
	})
	t.Run("at most 10, more refusals linked", func(t *testing.T) {
		var many []store.Remediation
		for i := range 12 {
			many = append(many, store.Remediation{
				ID: fmt.Sprintf("rem-bulk-%02d", i), Workspace: "billing-db", Mode: "auto", State: store.RemediationRefused,
				Refusals: []byte(`[{"code":"unexpected_change","address":"a.b","reason":"r1"},{"code":"unexpected_change","address":"a.c","reason":"r2"},
					{"code":"unexpected_change","address":"a.d","reason":"r3"},{"code":"unexpected_change","address":"a.e","reason":"r4"},
					{"code":"too_many_resources","reason":"r5"}]`),
				CreatedAt: testNow.Add(-time.Duration(i) * time.Minute),
			})
		}
		f.add(many...)
		_, _, body := get(t, base+"/workspaces/billing-db")
		require.Equal(t, 10, strings.Count(body, `id="rem-rem-bulk-`))
		require.NotContains(t, body, "rem-bulk-10")
		row := rowOf(t, body, "rem-rem-bulk-00")
		require.Contains(t, row, `<li>r3 <span class="label">unexpected_change</span></li><li><a href="/remediations/rem-bulk-00">and 2 more</a></li>`)
		require.NotContains(t, row, "r4")
	})
	t.Run("without remediation control", func(t *testing.T) {
		_, _, body := get(t, serve(t, h.options()).URL+"/workspaces/prod-network")
		require.NotContains(t, body, "Remediations")
	})
}

func TestRemediationPage(t *testing.T) {
	h := newHarness(t)
	f := remediationFixture(h)
	base := serveRemediation(t, h, f)

	t.Run("pending", func(t *testing.T) {
		code, hdr, body := get(t, base+"/remediations/rem-pend")
		body = withoutStyle(body)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
		require.NotEmpty(t, hdr.Get("Content-Security-Policy"))
		for _, want := range []string{
			"<title>driftwatch: remediation rem-pend of prod-network (pending)</title>",
			`<a href="/workspaces/prod-network#remediations">← prod-network</a>`,
			`<h1>Remediation <span class="mono">rem-pend</span> <span class="badge s-pending">pending</span></h1>`,
			`approve mode · 2 resources · proposed`,
			`<dt>Expires</dt><dd>expires <time datetime="2026-03-15T02:50:00Z"`,
			`<dt>Detection run</dt><dd><a class="mono" href="/runs/run-net-3">run-net-3</a></dd>`,
			`<dt>Apply run</dt><dd><span class="muted">none</span></dd>`,
			`<dt>Change set hash</dt><dd class="mono">` + testHash + `</dd>`,
			`Approve exactly this change set: <code>driftwatch approve rem-pend --hash ` + testHash + ` --server ` + base + ` --token-file "$DRIFTWATCH_TOKEN_FILE"</code>`,
			`<p class="note">waits for approval: nothing is applied until someone approves it</p>`,
			`2 resources the approval applies: addresses, actions and attribute paths, never values`,
			`<tr><td class="nowrap">update</td><td class="addr mono">aws_route53_record.api</td><td><span class="attrs"><code>ttl</code></span></td></tr>`,
			`<tr><td class="nowrap">update</td><td class="addr mono">aws_security_group.web</td><td><span class="attrs"><code>egress[0].cidr_blocks</code><code>ingress</code></span></td></tr>`,
			`<a href="/api/v1/remediations/rem-pend">remediation</a>`,
		} {
			require.Contains(t, body, want)
		}
		require.NotContains(t, body, secretValue)
		require.NotContains(t, body, "<h2>Outcome")
		require.NotContains(t, body, `http-equiv="refresh"`, "the page stays still while someone reads it")
	})
	t.Run("approved follows its apply", func(t *testing.T) {
		_, _, body := get(t, base+"/remediations/rem-held")
		require.Contains(t, body, `<meta http-equiv="refresh" content="30">`)
		require.Contains(t, body, `<p class="note">approved: it applies in the workspace&#39;s next free run slot</p>`)
		require.Contains(t, body, `Stop it before it applies: <code>driftwatch reject rem-held`)
	})
	t.Run("refused", func(t *testing.T) {
		_, _, body := get(t, base+"/remediations/rem-refused")
		require.Contains(t, body, "<title>driftwatch: remediation rem-refused of prod-network (refused)</title>")
		require.NotContains(t, body, `http-equiv="refresh"`, "a final state does not refresh")
		require.Contains(t, body, "<h2>Refused <small>every reason the safety envelope gave at detection: nothing is applied</small></h2>")
		require.Contains(t, body, `<tr><td class="nowrap"><span class="label">pending</span></td><td class="addr mono">aws_instance.bastion</td><td>aws_instance.bastion has a planned update with no drift behind it`)
		require.Contains(t, body, `<tr><td class="nowrap"><span class="label">too_many_resources</span></td><td class="addr mono"></td><td>the apply would change 3 resources; remediation.max_resources is 2</td></tr>`)
		require.NotContains(t, body, "driftwatch approve")
	})
	t.Run("failed", func(t *testing.T) {
		_, _, body := get(t, base+"/remediations/rem-failed")
		require.Equal(t, 1, strings.Count(body, `<p class="errorbox">apply: aws_security_group.web: UnauthorizedOperation</p>`), "said once, in the outcome")
		require.Contains(t, body, "<h2>Outcome <small>of the apply run</small></h2>")
		require.Contains(t, body, `<dt>Result</dt><dd><span class="badge s-failed">failed</span></dd>`)
		require.Contains(t, body, `<dt>Terraform apply started</dt><dd><span class="late">yes: infrastructure and state may have changed</span></dd>`)
		require.Contains(t, body, `<dt>Apply run</dt><dd><a class="mono" href="/runs/run-net-fail">run-net-fail</a></dd>`)
		require.NotContains(t, body, "Change set of the fresh plan", "the fresh plan matched")
	})
	t.Run("verification failed and plan changed", func(t *testing.T) {
		f.add(store.Remediation{
			ID: "rem-verify", Workspace: "prod-network", Mode: "auto", ApplyRunID: "run-x",
			ChangeSet: []byte(`{"entries":[{"address":"dwtest_file.a","action":"update","attributes":["content"]}]}`),
			State:     store.RemediationVerificationFailed,
			Reason:    "still drifted after the apply: dwtest_file.a",
			CreatedAt: testNow.Add(-time.Minute),
			Outcome: []byte(`{"result":"verification_failed","reason":"still drifted after the apply: dwtest_file.a","apply_started":true,
				"before":{"entries":[{"address":"dwtest_file.a","action":"update","attributes":["content"]}]},
				"residual":[{"kind":"drift","address":"dwtest_file.a","type":"dwtest_file","action":"update","attributes":["content"]}]}`),
		}, store.Remediation{
			ID: "rem-changed", Workspace: "prod-network", Mode: "approve", ApplyRunID: "run-y",
			ChangeSet: []byte(`{"entries":[{"address":"dwtest_file.a","action":"update","attributes":["content"]}]}`),
			State:     store.RemediationRefused, Reason: "plan_changed: the fresh plan differs",
			Refusals: []byte(`[]`), CreatedAt: testNow.Add(-2 * time.Minute),
			Outcome: []byte(`{"result":"refused","reason":"plan_changed: the fresh plan differs","apply_started":false,
				"refusals":[{"code":"plan_changed","reason":"new: dwtest_file.b: update [content]"}],
				"before":{"entries":[{"address":"dwtest_file.a","action":"update","attributes":["content"]},{"address":"dwtest_file.b","action":"update","attributes":["content"]}]}}`),
		})
		_, _, body := get(t, base+"/remediations/rem-verify")
		require.Contains(t, body, `<span class="badge s-verification_failed">verification failed</span>`)
		require.Contains(t, body, `<p class="errorbox">still drifted after the apply: dwtest_file.a</p>`)
		require.Contains(t, body, `the verification plan's findings at approved addresses`)
		require.Contains(t, body, `<tr class="s-row-drift"><td><span class="badge s-drift">drift</span></td><td class="nowrap">update</td><td class="addr mono">dwtest_file.a</td><td><span class="attrs"><code>content</code></span></td></tr>`)

		_, _, body = get(t, base+"/remediations/rem-changed")
		require.Contains(t, body, `<dt>Terraform apply started</dt><dd>no: nothing was changed</dd>`)
		require.Contains(t, body, `<td class="nowrap"><span class="label">plan_changed</span></td><td class="addr mono"></td><td>new: dwtest_file.b: update [content]</td>`)
		require.Contains(t, body, "Change set of the fresh plan")
		require.Contains(t, body, `<td class="addr mono">dwtest_file.b</td>`)

		_, _, body = get(t, base+"/workspaces/prod-network")
		require.Contains(t, rowOf(t, body, "rem-rem-changed"), `<li>new: dwtest_file.b: update [content] <span class="label">plan_changed</span></li>`,
			"a refusal at apply time shows in the list")
	})
	t.Run("unreadable documents", func(t *testing.T) {
		f.add(store.Remediation{
			ID: "rem-broken", Workspace: "staging-web", Mode: "auto", State: store.RemediationFailed,
			ChangeSet: []byte(`{"entries":[`), Outcome: []byte(`{"result":`), CreatedAt: testNow.Add(-3 * time.Hour),
		})
		code, _, body := get(t, base+"/remediations/rem-broken")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `<p class="note">Stored change set, outcome could not be read; the JSON API has the raw documents.</p>`)
		require.NotContains(t, body, "<h2>Outcome", "no half-read outcome")
	})
	t.Run("unknown", func(t *testing.T) {
		code, _, body := get(t, base+"/remediations/nope")
		require.Equal(t, http.StatusNotFound, code)
		require.Contains(t, body, "<h1>Unknown remediation</h1>")
		require.Contains(t, body, "No remediation with id &#34;nope&#34; is recorded.")
	})
	t.Run("without remediation control", func(t *testing.T) {
		code, _, _ := get(t, serve(t, h.options()).URL+"/remediations/rem-pend")
		require.Equal(t, http.StatusNotFound, code)
	})
}

func TestRunPageRemediation(t *testing.T) {
	h := newHarness(t)
	f := remediationFixture(h)
	base := serveRemediation(t, h, f)

	auth := basicAuth(testToken)
	t.Run("apply run", func(t *testing.T) {
		code, _, body := do(t, http.MethodGet, base+"/runs/run-net-rem", auth)
		body = withoutStyle(body)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `<h2 id="remediation">Remediation outcome</h2>`)
		require.Contains(t, body, `<p>This run applied remediation <a class="mono" href="/remediations/rem-applied">rem-applied</a> <span class="badge s-applied">applied</span>, proposed by detection run <a class="mono" href="/runs/run-net-1">run-net-1</a>.</p>`)
		require.Contains(t, body, `<dt>Result</dt><dd><span class="badge s-applied">applied</span></dd>`)
		require.Contains(t, body, `<dt>Tool</dt><dd>terraform 1.11.4</dd>`)
		require.Contains(t, body, `<dt>Terraform apply started</dt><dd>yes</dd>`)
		require.Contains(t, body, `<h3>Approved change set <small class="muted">2 resources: addresses, actions and attribute paths, never values</small></h3>`)
		require.Contains(t, body, `<tr><td class="nowrap">update</td><td class="addr mono">aws_route53_record.api</td><td><span class="attrs"><code>ttl</code></span></td></tr>`)
		require.NotContains(t, body, secretValue)
	})
	t.Run("failed apply run", func(t *testing.T) {
		_, _, body := do(t, http.MethodGet, base+"/runs/run-net-fail", auth)
		require.Contains(t, body, `<p class="errorbox">apply: aws_security_group.web: UnauthorizedOperation</p>`)
		require.Contains(t, body, `<dt>Terraform apply started</dt><dd><span class="late">yes: infrastructure and state may have changed</span></dd>`)
	})
	t.Run("detection run", func(t *testing.T) {
		_, _, body := do(t, http.MethodGet, base+"/runs/run-net-3", auth)
		require.Contains(t, body, `<p>This run proposed remediation <a class="mono" href="/remediations/rem-pend">rem-pend</a> <span class="badge s-pending">pending</span> (2 resources).</p>`)
		require.Contains(t, body, `<div class="why">waits for approval: nothing is applied until someone approves it</div>`)
	})
	t.Run("run without remediation", func(t *testing.T) {
		code, _, body := do(t, http.MethodGet, base+"/runs/run-net-4", auth)
		require.Equal(t, http.StatusOK, code)
		require.NotContains(t, body, `id="remediation"`)
	})
}

func TestRemediationPagesEscape(t *testing.T) {
	const evil = `<script>alert("x")</script>`
	h := newHarness(t)
	h.store.setState(store.WorkspaceState{Workspace: evil, Status: drift.StatusDrift})
	h.store.addRun(store.Run{ID: "evil-apply", Workspace: evil, Trigger: "remediate", Status: "failed", StartedAt: testNow})
	h.setWorkspaces([]WorkspaceInfo{{Name: evil}})
	f := &fakeRemediations{enabled: true}
	f.add(store.Remediation{
		ID: "evil-rem", Workspace: evil, DetectRunID: evil, ApplyRunID: "evil-apply", Mode: evil,
		ChangeSet:     []byte(`{"entries":[{"address":"aws_instance.x[\"` + strings.ReplaceAll(evil, `"`, `\"`) + `\"]","action":"update","attributes":["tags.<svg>"]}]}`),
		ChangeSetHash: evil, State: store.RemediationPending, CreatedAt: testNow, ExpiresAt: testNow.Add(time.Hour),
		Refusals: []byte(`[{"code":"<iframe>","address":"<img>","reason":"` + strings.ReplaceAll(evil, `"`, `\"`) + `"}]`),
		Outcome:  []byte(`{"result":"failed","reason":"<object>"}`),
	})
	base := serveRemediation(t, h, f)
	for _, path := range []string{"/", "/workspaces/%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E", "/remediations/evil-rem", "/runs/evil-apply"} {
		t.Run(path, func(t *testing.T) {
			code, _, body := do(t, http.MethodGet, base+path, basicAuth(testToken))
			require.Equal(t, http.StatusOK, code)
			body = strings.ToLower(body)
			for _, tag := range []string{"<script", "<svg", "<iframe", "<img", "<object"} {
				require.NotContains(t, body, tag)
			}
		})
	}
	_, _, body := get(t, base+"/")
	require.Contains(t, body, `<a href="/workspaces/%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E">&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</a>`)
	_, _, body = get(t, base+"/remediations/evil-rem")
	require.Contains(t, body, `<td class="addr mono">aws_instance.x[&#34;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#34;]</td>`)
	require.Contains(t, body, `--hash &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; --server`)
}
