package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/store"
)

// fakeAccepts is an AcceptControl over a list: StartAccept records a
// running acceptance, or refuses as the daemon would.
type fakeAccepts struct {
	mu   sync.Mutex
	list []store.Acceptance // newest first
	busy string             // the running acceptance StartAccept refuses for
	err  error
}

func (f *fakeAccepts) StartAccept(workspace string, addresses []string, deletions bool, by string) (store.Acceptance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return store.Acceptance{}, f.err
	}
	if f.busy != "" {
		return store.Acceptance{}, busyAcceptance(f.busy)
	}
	a := store.Acceptance{ID: "acc-new", Workspace: workspace, Addresses: addresses, Deletions: deletions, RequestedBy: by,
		State: store.AcceptRunning, CreatedAt: testNow}
	f.list = append([]store.Acceptance{a}, f.list...)
	return a, nil
}

func (f *fakeAccepts) Acceptances(_ context.Context, workspace string, limit int) ([]store.Acceptance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Acceptance
	for _, a := range f.list {
		if (workspace == "" || a.Workspace == workspace) && (limit == 0 || len(out) < limit) {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *fakeAccepts) Acceptance(_ context.Context, id string) (store.Acceptance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.list {
		if a.ID == id {
			return a, nil
		}
	}
	return store.Acceptance{}, store.ErrNotFound
}

// busyAcceptance is the daemon's refusal while an acceptance runs.
type busyAcceptance string

func (b busyAcceptance) Error() string        { return "busy: " + string(b) }
func (b busyAcceptance) Is(target error) bool { return target == refusal.ErrBusy }
func (b busyAcceptance) AcceptanceID() string { return string(b) }

// proposedAcceptance is prod-network's drift accepted and proposed an
// hour ago, after its drift incident opened.
func proposedAcceptance() store.Acceptance {
	return store.Acceptance{ID: "acc-1", Workspace: "prod-network", RequestedBy: "olga", State: store.AcceptProposed,
		Tool: "terraform 1.11.4", Commit: "0123456789abcdef0123456789abcdef01234567",
		Accepted: []store.AcceptedAttribute{{Address: "aws_vpc.main", Attribute: "tags.env", Where: "main.tf:4", Kind: "literal"}},
		Refused:  []store.AcceptRefusal{{Address: "aws_subnet.a", Attribute: "cidr_block", Reason: "set by a function call: cidrsubnet(...)"}},
		Patch:    "--- a/main.tf\n+++ b/main.tf\n@@ -4 +4 @@\n-    env = \"prod\"\n+    env = \"VALUE-CANARY\"\n",
		Branch:   "driftwatch/accept/prod-network-0123456789", Base: "main", ProposalURL: "https://github.example.com/acme/net/pull/7", ProposalNumber: 7,
		CreatedAt: testNow.Add(-time.Hour), FinishedAt: testNow.Add(-50 * time.Minute)}
}

// acceptOptions is roleOptions with acceptances.
func acceptOptions(t *testing.T, acc *fakeAccepts) (*harness, Options) {
	t.Helper()
	h, rem, o := roleOptions(t)
	o.Control = acceptControl{fullControl{h, rem}, acc}
	return h, o
}

type acceptControl struct {
	fullControl
	AcceptControl
}

// An operator starts an acceptance through the API: 202 with it,
// running, recorded as the caller; the body's addresses go through
// (trimmed, without duplicates); a bad body, an unknown workspace and
// a running acceptance are refused, the last naming it.
func TestAcceptAPI(t *testing.T) {
	acc := &fakeAccepts{}
	_, o := acceptOptions(t, acc)
	ts := serve(t, o)
	op := bearerAuth(roleTokens[auth.RoleOperator])

	code, hdr, body := send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/accept", op, `{"addresses": [" aws_vpc.main ", "aws_vpc.main", "aws_subnet.a"]}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, "/api/v1/acceptances/acc-new", hdr.Get("Location"))
	var got apitypes.Acceptance
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, apitypes.Acceptance{ID: "acc-new", Workspace: "prod-network", Addresses: []string{"aws_vpc.main", "aws_subnet.a"},
		RequestedBy: "token:operator-bot", State: "running", Accepted: []apitypes.AcceptedPlace{}, Refused: []apitypes.AcceptRefusal{},
		Remaining: []string{}, CreatedAt: testNow}, got)

	// No body: every drifted resource, no deletions.
	code, _, body = send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/accept", op, "")
	require.Equal(t, http.StatusAccepted, code, body)
	require.Nil(t, acc.list[0].Addresses)
	require.False(t, acc.list[0].Deletions)
	require.NotContains(t, body, "deletions")

	// Deletions asked for go through, and show.
	code, _, body = send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/accept", op, `{"deletions": true}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.True(t, acc.list[0].Deletions)
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.True(t, got.Deletions)

	for b, want := range map[string]string{
		`{"address": ["x"]}`:      `unknown field \"address\"`,
		`{"addresses": "x"}`:      "addresses has the wrong type",
		`{"addresses": [""]}`:     "addresses[0]: want a resource address",
		`{"addresses": []} {}`:    "body must be one JSON object",
		`{"addresses": ["a\nb"]}`: "addresses[0]: want a resource address",
		`{"deletions": "yes"}`:    "deletions has the wrong type",
	} {
		code, _, body := send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/accept", op, b)
		require.Equal(t, http.StatusBadRequest, code, b)
		require.Contains(t, body, want, b)
	}
	code, _, body = send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/nope/accept", op, "")
	require.Equal(t, http.StatusNotFound, code, body)

	acc.busy = "acc-running"
	code, _, body = send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/accept", op, "")
	require.Equal(t, http.StatusConflict, code)
	require.JSONEq(t, `{"error": "an acceptance of this workspace is already running", "acceptance_id": "acc-running"}`, body)

	acc.busy, acc.err = "", refusal.Kind("the kubernetes runner runs no acceptance in the daemon: run driftwatch accept", refusal.ErrUnavailable)
	code, _, body = send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/accept", op, "")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "run driftwatch accept")

	// A viewer may not.
	code, _, _ = send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/accept", bearerAuth(roleTokens[auth.RoleViewer]), "")
	require.Equal(t, http.StatusForbidden, code)
}

// Acceptances read back through the API; the patch holds values, so an
// anonymous reader gets it withheld. A live drift incident names the
// proposal it waits for; the other incidents do not.
func TestAcceptancesRead(t *testing.T) {
	acc := &fakeAccepts{list: []store.Acceptance{proposedAcceptance()}}
	_, o := acceptOptions(t, acc)
	o.Config.Auth.AnonymousRole = "viewer"
	ts := serve(t, o)
	viewer := bearerAuth(roleTokens[auth.RoleViewer])

	code, _, body := do(t, http.MethodGet, ts.URL+"/api/v1/workspaces/prod-network/acceptances", viewer)
	require.Equal(t, http.StatusOK, code, body)
	var list apitypes.AcceptanceList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Acceptances, 1)
	a := list.Acceptances[0]
	require.Equal(t, "proposed", a.State)
	require.Equal(t, &apitypes.AcceptProposalRef{Branch: "driftwatch/accept/prod-network-0123456789", Base: "main", Number: 7,
		URL: "https://github.example.com/acme/net/pull/7"}, a.Proposal)
	require.Contains(t, a.Patch, "VALUE-CANARY")
	require.Equal(t, []apitypes.AcceptRefusal{{Address: "aws_subnet.a", Attribute: "cidr_block", Reason: "set by a function call: cidrsubnet(...)"}}, a.Refused)

	code, _, body = do(t, http.MethodGet, ts.URL+"/api/v1/acceptances/acc-1", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "VALUE-CANARY", "an anonymous reader gets no values")
	require.Contains(t, body, `"patch_withheld": true`)
	code, _, _ = do(t, http.MethodGet, ts.URL+"/api/v1/acceptances/nope", viewer)
	require.Equal(t, http.StatusNotFound, code)
	code, _, _ = do(t, http.MethodGet, ts.URL+"/api/v1/workspaces/nope/acceptances", viewer)
	require.Equal(t, http.StatusNotFound, code)

	code, _, body = do(t, http.MethodGet, ts.URL+"/api/v1/workspaces/prod-network", viewer)
	require.Equal(t, http.StatusOK, code, body)
	var ws apitypes.WorkspaceDetail
	require.NoError(t, json.Unmarshal([]byte(body), &ws))
	waiting := map[string]*apitypes.IncidentAcceptance{}
	for _, in := range ws.Incidents {
		waiting[in.Class] = in.Accepted
	}
	require.Equal(t, &apitypes.IncidentAcceptance{AcceptanceID: "acc-1", State: "waiting for merge",
		URL: "https://github.example.com/acme/net/pull/7", Number: 7, Branch: "driftwatch/accept/prod-network-0123456789"}, waiting["drift"])
	require.Nil(t, waiting["errored"], "only drift is accepted as code")

	// A proposal older than the incident is not what it waits for.
	old := proposedAcceptance()
	old.CreatedAt = testNow.Add(-4 * time.Hour)
	acc.list = []store.Acceptance{old}
	_, _, body = do(t, http.MethodGet, ts.URL+"/api/v1/workspaces/prod-network", viewer)
	require.NotContains(t, body, `"accepted"`)

	// The page shows the proposal on the incident and the acceptance,
	// the patch to a signed-in reader only.
	acc.list = []store.Acceptance{proposedAcceptance()}
	_, _, page := do(t, http.MethodGet, ts.URL+"/workspaces/prod-network", viewer)
	require.Contains(t, page, `accepted, waiting for merge: <a href="https://github.example.com/acme/net/pull/7">#7</a>`)
	require.Contains(t, page, "VALUE-CANARY")
	require.Contains(t, page, "refused: set by a function call")
	_, _, page = do(t, http.MethodGet, ts.URL+"/workspaces/prod-network", nil)
	require.NotContains(t, page, "VALUE-CANARY")
	require.Contains(t, page, "The change holds values: sign in to read it.")
}

// The workspace page's button: an operator signed in through the proxy
// sees a form with its CSRF token; posting it starts an acceptance as
// that person and sends the browser back to the page. A token's page
// shows the command instead; a viewer gets neither.
func TestAcceptButton(t *testing.T) {
	acc := &fakeAccepts{}
	h, rem, o := proxyOptions(t, "127.0.0.0/8")
	o.Control = acceptControl{fullControl{h, rem}, acc}
	ts := serve(t, o)
	olga := proxied("olga", "", "")

	_, _, page := do(t, http.MethodGet, ts.URL+"/workspaces/prod-network", olga)
	tok := getWhoami(t, ts.URL, olga).CSRFToken
	require.NotEmpty(t, tok)
	require.Contains(t, page, `<form class="accept" method="post" action="/api/v1/workspaces/prod-network/accept"><input type="hidden" name="csrf_token" value="`+tok+`">`)
	_, _, page = do(t, http.MethodGet, ts.URL+"/workspaces/prod-network", proxied("vera", "Vera@Example.com", ""))
	require.NotContains(t, page, `<form class="accept"`, "a viewer")
	_, _, page = do(t, http.MethodGet, ts.URL+"/workspaces/prod-network", bearerAuth(roleTokens[auth.RoleOperator]))
	require.NotContains(t, page, `<form class="accept"`, "a token holds no CSRF token")
	require.Contains(t, page, "/api/v1/workspaces/prod-network/accept</code>")

	post := func(form url.Values, hdr map[string]string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/accept", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", ts.URL)
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post(url.Values{"csrf_token": {tok}}, olga)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/workspaces/prod-network#acceptances", resp.Header.Get("Location"))
	require.Equal(t, "olga", acc.list[0].RequestedBy)

	resp = post(url.Values{}, olga)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	require.Len(t, acc.list, 1)

	acc.busy = "acc-new"
	resp = post(url.Values{"csrf_token": {tok}}, olga)
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	b, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(b), "An acceptance of this workspace is already running: acc-new.")
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html", "a form is answered with a page")
}
