package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/store"
)

// fakeAdopts is an AdoptControl that answers out (or err) and records
// what it was asked.
type fakeAdopts struct {
	mu       sync.Mutex
	out      drift.AdoptOutcome
	err      error
	scan, by string
	findings []string
	deadline time.Duration // how long the adoption was given
}

func (f *fakeAdopts) Adopt(ctx context.Context, scan string, findings []string, by string) (drift.AdoptOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scan, f.findings, f.by = scan, findings, by
	if d, ok := ctx.Deadline(); ok {
		f.deadline = time.Until(d)
	}
	return f.out, f.err
}

type adoptControl struct {
	fullControl
	AdoptControl
}

// hand2 is the unmanaged file the fixture's scan adopts.
const hand2 = `dwtest_file[filename="/srv/hand"]`

// provenAdoption is hand2 adopted and proven.
func provenAdoption() drift.AdoptOutcome {
	return drift.AdoptOutcome{Tool: "terraform 1.14.0", Proven: true, Adoptions: []drift.Adoption{{Finding: hand2,
		Import: "import {\n  to = dwtest_file.hand\n  identity = { filename = \"/srv/hand\" }\n}\n",
		Config: "resource \"dwtest_file\" \"hand\" {\n  content = \"<made by hand>\"\n}\n"}}}
}

// scanFixture adds the scan "files" with an unmanaged, an ignored and a
// doubly managed finding to h.
func scanFixture(h *harness) {
	h.store.setState(store.WorkspaceState{
		Workspace: "files", Status: drift.StatusDrift, Since: testNow.Add(-time.Hour),
		LastRunID: "run-files-1", LastRunAt: testNow.Add(-time.Minute), LastSuccessAt: testNow.Add(-time.Minute),
		Findings: []drift.Finding{
			{Kind: drift.KindManagedTwice, Address: `dwtest_file[filename="/srv/s"]`, Type: "dwtest_file", Action: "none", Detail: "/srv/s",
				ManagedBy: []string{"a: dwtest_file.s", "b: dwtest_file.s"}},
			{Kind: drift.KindUnmanaged, Address: hand2, Type: "dwtest_file", Action: "none", Detail: "/srv/hand"},
			{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="/srv/tmp"]`, Type: "dwtest_file", Action: "none", Detail: "/srv/tmp", Ignored: true},
		},
	})
	h.workspaces = append(h.workspaces, WorkspaceInfo{Name: "files", Schedule: "@hourly", Scan: true})
}

// An operator adopts a scan's unmanaged resource through the API: 200
// with the generated blocks and file when proven, what else the plan
// would do when not, the failure's reason when it failed; the body's
// findings go through trimmed and once, the adoption is bounded by
// AdoptTimeout and asked as the caller. Refusals: a bad body, no
// findings, a workspace that is not a scan (400), an unknown one (404),
// a running adoption (409), a daemon that runs none (503), a viewer
// (403), a daemon without AdoptControl (501).
func TestAdoptAPI(t *testing.T) {
	adp := &fakeAdopts{out: provenAdoption()}
	h, rem, o := roleOptions(t)
	scanFixture(h)
	o.Control = adoptControl{fullControl{h, rem}, adp}
	ts := serve(t, o)
	op := bearerAuth(roleTokens[auth.RoleOperator])
	adopt := func(ws, body string) (int, string) {
		code, _, b := send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/"+ws+"/adopt", op, body)
		return code, b
	}

	code, body := adopt("files", `{"findings": [`+jsonString(" "+hand2+" ")+`, `+jsonString(hand2)+`]}`)
	require.Equal(t, http.StatusOK, code, body)
	var got apitypes.Adoption
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	want := apitypes.Adoption{Scan: "files", Findings: []string{hand2}, RequestedBy: "token:operator-bot", State: "proven", Proven: true,
		Tool: "terraform 1.14.0", Adopted: []apitypes.AdoptedResource{{Finding: hand2,
			Import: "import {\n  to = dwtest_file.hand\n  identity = { filename = \"/srv/hand\" }\n}",
			Config: "resource \"dwtest_file\" \"hand\" {\n  content = \"<made by hand>\"\n}"}},
		Missing: []string{}, Remaining: []string{}, File: provenAdoption().File(), FileName: "driftwatch_adopt.tf"}
	require.Equal(t, want, got)
	require.Equal(t, "files", adp.scan)
	require.Equal(t, []string{hand2}, adp.findings)
	require.Equal(t, "token:operator-bot", adp.by)
	require.InDelta(t, control.AdoptTimeout.Seconds(), adp.deadline.Seconds(), 5, "bounded by AdoptTimeout")

	// Not proven: no file, what else the plan would do.
	adp.out = drift.AdoptOutcome{Tool: "terraform 1.14.0", Adoptions: provenAdoption().Adoptions, Missing: []string{"gone"},
		Remaining: []string{"dwtest_file.hand: update"}}
	code, body = adopt("files", `{"findings": ["gone", `+jsonString(hand2)+`]}`)
	require.Equal(t, http.StatusOK, code, body)
	got = apitypes.Adoption{}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, "not_proven", got.State)
	require.False(t, got.Proven)
	require.Empty(t, got.File)
	require.Equal(t, []string{"dwtest_file.hand: update"}, got.Remaining)
	require.Equal(t, []string{"gone"}, got.Missing)
	require.Len(t, got.Adopted, 1)

	// Failed: the reason.
	adp.out, adp.err = drift.AdoptOutcome{}, errors.New("the scan's query lists none of the named resources")
	code, body = adopt("files", `{"findings": ["gone"]}`)
	require.Equal(t, http.StatusOK, code, body)
	got = apitypes.Adoption{}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, "failed", got.State)
	require.Equal(t, "the scan's query lists none of the named resources", got.Error)
	require.Empty(t, got.File)

	for b, want := range map[string]string{
		``:                               "body must be JSON",
		`{"finding": ["x"]}`:             `unknown field \"finding\"`,
		`{"findings": "x"}`:              "findings has the wrong type",
		`{"findings": []}`:               "name the unmanaged resources to adopt",
		`{"findings": [" "]}`:            "findings[0]: want a finding address",
		`{"findings": ["a\nb"]}`:         "findings[0]: want a finding address",
		`{"findings": ["x"]} {}`:         "body must be one JSON object",
		`{"findings": ["x", "y\u0000"]}`: "findings[1]: want a finding address",
	} {
		code, body := adopt("files", b)
		require.Equal(t, http.StatusBadRequest, code, b)
		require.Contains(t, body, want, b)
	}
	code, body = adopt("prod-network", `{"findings": ["x"]}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, `\"prod-network\" is not a scan`)
	code, _ = adopt("nope", `{"findings": ["x"]}`)
	require.Equal(t, http.StatusNotFound, code)

	adp.err = refusal.Kind("an adoption of this scan is already running", refusal.ErrBusy)
	code, body = adopt("files", `{"findings": ["x"]}`)
	require.Equal(t, http.StatusConflict, code)
	require.JSONEq(t, `{"error": "an adoption of this scan is already running"}`, body)
	adp.err = refusal.Kind("adopting runs Terraform in the daemon, which this one does not", refusal.ErrUnavailable)
	code, body = adopt("files", `{"findings": ["x"]}`)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "which this one does not")
	adp.err = refusal.ErrUnknownWorkspace // removed by a reload meanwhile
	code, _ = adopt("files", `{"findings": ["x"]}`)
	require.Equal(t, http.StatusNotFound, code)

	code, _, _ = send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/files/adopt", bearerAuth(roleTokens[auth.RoleViewer]), `{"findings": ["x"]}`)
	require.Equal(t, http.StatusForbidden, code)

	// A daemon without AdoptControl.
	o.Control = fullControl{h, rem}
	ts = serve(t, o)
	code, _, body = send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/files/adopt", op, `{"findings": ["x"]}`)
	require.Equal(t, http.StatusNotImplemented, code, body)
}

// The scan page's Adopt button: an operator signed in through the proxy
// sees one on each unmanaged finding (not on an ignored or doubly
// managed one, not on a workspace that is not a scan), the CLI command
// still beside it; a viewer and a token's page get the command alone.
// Posting it adopts as that person and answers a page with the result
// and the file to copy or download; without the CSRF token it is
// refused, and a refusal is a page.
func TestAdoptButton(t *testing.T) {
	adp := &fakeAdopts{out: provenAdoption()}
	h, rem, o := proxyOptions(t, "127.0.0.0/8")
	scanFixture(h)
	o.Control = adoptControl{fullControl{h, rem}, adp}
	ts := serve(t, o)
	olga := proxied("olga", "", "")
	tok := getWhoami(t, ts.URL, olga).CSRFToken
	require.NotEmpty(t, tok)

	form := `<form class="adopt" method="post" action="/api/v1/workspaces/files/adopt"><input type="hidden" name="csrf_token" value="` + tok +
		`"><input type="hidden" name="finding" value="dwtest_file[filename=&#34;/srv/hand&#34;]">`
	command := `adopt it: <code>driftwatch adopt files 'dwtest_file[filename=&#34;/srv/hand&#34;]'</code>`
	_, _, page := do(t, http.MethodGet, ts.URL+"/workspaces/files", olga)
	require.Contains(t, page, form)
	require.Equal(t, 1, strings.Count(page, `<form class="adopt"`), "the unmanaged one alone, not the ignored or doubly managed ones")
	require.Contains(t, page, command)
	_, _, page = do(t, http.MethodGet, ts.URL+"/workspaces/prod-network", olga)
	require.NotContains(t, page, `<form class="adopt"`, "not a scan")
	for who, hdr := range map[string]map[string]string{
		"a viewer": proxied("vera", "Vera@Example.com", ""),
		"a token":  bearerAuth(roleTokens[auth.RoleOperator]),
	} {
		_, _, page = do(t, http.MethodGet, ts.URL+"/workspaces/files", hdr)
		require.NotContains(t, page, `<form class="adopt"`, who)
		require.Contains(t, page, command, who)
	}

	post := func(form url.Values) (*http.Response, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/api/v1/workspaces/files/adopt", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		for k, v := range olga {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", ts.URL)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	resp, page := post(url.Values{"csrf_token": {tok}, "finding": {hand2}})
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	require.Equal(t, "olga", adp.by)
	require.Equal(t, []string{hand2}, adp.findings)
	require.Contains(t, page, "Proven with terraform 1.14.0")
	require.Contains(t, page, `<pre class="patch" id="adopt-file"># Generated by driftwatch adopt`)
	require.Contains(t, page, "to = dwtest_file.hand")
	require.Contains(t, page, "&lt;made by hand&gt;", "the file is escaped")
	require.Contains(t, page, `<a download="driftwatch_adopt.tf" href="data:text/plain;charset=utf-8,%23%20Generated%20by%20driftwatch%20adopt`)
	require.Contains(t, page, "driftwatch adopt --output driftwatch_adopt.tf files 'dwtest_file[filename=&#34;/srv/hand&#34;]'")

	adp.out = drift.AdoptOutcome{Adoptions: provenAdoption().Adoptions, Remaining: []string{"dwtest_file.hand: update"}}
	_, page = post(url.Values{"csrf_token": {tok}, "finding": {hand2}})
	require.Contains(t, page, "Not proven:")
	require.Contains(t, page, "<code>dwtest_file.hand: update</code>")
	require.NotContains(t, page, "Download")

	resp, _ = post(url.Values{"finding": {hand2}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	resp, page = post(url.Values{"csrf_token": {tok}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html", "a refusal is a page")
	require.Contains(t, page, "Name the unmanaged resources to adopt")
}
