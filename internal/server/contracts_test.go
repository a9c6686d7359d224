package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify/slackinteract"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/store"
)

// The contracts of docs/api.md's "Contracts" section, read from the page:
// each test fails when the daemon and the documented table disagree.

const apiPage = "../../docs/api.md"

// docTable returns the cells (backticks and spaces trimmed) of the rows of
// the first table after heading in docs/api.md, the header row left out.
func docTable(t *testing.T, heading string) [][]string {
	t.Helper()
	b, err := os.ReadFile(apiPage)
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	require.True(t, ok, "%s has no heading %q", apiPage, heading)
	var rows [][]string
	for _, line := range strings.Split(after, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "|"):
		case len(rows) > 0 || strings.HasPrefix(line, "#"):
			require.NotEmpty(t, rows, "no table under %q", heading)
			return rows[1:] // the header; the separator row is skipped below
		default:
			continue
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.Trim(strings.TrimSpace(c), "`"))
		}
		rows = append(rows, cells)
	}
	require.NotEmpty(t, rows, "no table under %q", heading)
	return rows[1:]
}

// openRoutes are the routes of s that answer without a credential.
func openRoutes(s *Server) []string {
	var out []string
	for _, rt := range s.router.routes {
		if rt.access.kind == accessPublic || rt.access.kind == accessSelf {
			out = append(out, rt.pattern)
		}
	}
	return out
}

func TestContractOpenRoutes(t *testing.T) {
	rows := docTable(t, "### Open without a credential")
	documented := func(keep func(when string) bool) []string {
		var out []string
		for _, r := range rows {
			if keep(r[1]) {
				out = append(out, r[0])
			}
		}
		return out
	}

	// Token mode, anonymous_role none, with the Slack route mounted as the
	// daemon mounts it.
	h := newHarness(t)
	o := h.options()
	o.Config.Auth.AnonymousRole = config.RoleNone
	o.Config.TokenFile = writeToken(t, testToken+"\n")
	o.Handlers = map[string]http.Handler{slackinteract.Route: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized) // as a bad signature is answered
	})}
	s, err := New(o)
	require.NoError(t, err)
	require.ElementsMatch(t, documented(func(w string) bool { return w == "always" || strings.HasPrefix(w, "with Slack") }), openRoutes(s))
	ts := serve(t, o)
	for _, r := range rows {
		if r[1] != "always" {
			continue
		}
		method, path, _ := strings.Cut(r[0], " ")
		code, _, body := do(t, method, ts.URL+path, nil)
		require.Equal(t, http.StatusOK, code, "%s without a credential: %s", r[0], body)
	}
	for _, path := range []string{"/metrics", "/api/v1/status", "/api/v1/whoami", "/"} {
		code, _, _ := do(t, http.MethodGet, ts.URL+path, nil)
		require.Equal(t, http.StatusUnauthorized, code, path)
	}

	// OIDC mode adds its sign-in routes.
	p := startProvider(t, nil)
	e := newOIDCEnv(t, p.Issuer(), p.ClientID, p.ClientSecret, nil)
	require.ElementsMatch(t, documented(func(w string) bool { return w == "always" || strings.HasPrefix(w, "oidc mode") }), openRoutes(e.s))
}

func TestContractAuditFields(t *testing.T) {
	var documented []string
	for _, r := range docTable(t, "### Audit entries") {
		documented = append(documented, r[0])
	}
	require.Equal(t, jsonFields(reflect.TypeFor[apitypes.AuditEntry]()), documented, "docs/api.md lists the audit entry's JSON fields, in order")

	// Every action the router records is in the action row.
	var actionRow string
	for _, r := range docTable(t, "### Audit entries") {
		if r[0] == "action" {
			actionRow = r[1]
		}
	}
	_, _, o := roleOptions(t)
	s, err := New(o)
	require.NoError(t, err)
	for _, rt := range s.router.routes {
		if a := auditedRoute(rt.pattern); a != nil && rt.access.kind == accessRole {
			require.Contains(t, "`"+actionRow+"`", "`"+a.name+"`", rt.pattern)
		}
	}
}

// source: api for a bearer token, page for a page's path, an ambient
// credential or the CSRF header (the header the page names).
func TestContractAuditSource(t *testing.T) {
	b, err := os.ReadFile(apiPage)
	require.NoError(t, err)
	require.Contains(t, string(b), "carries the `"+auth.CSRFHeader+"` header")

	_, _, o := roleOptions(t)
	rec := &memAudit{}
	o.Audit = rec
	ts := serve(t, o)
	op := bearerAuth(roleTokens[auth.RoleOperator])
	code, _, body := do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", op)
	require.Equal(t, http.StatusAccepted, code, body)
	withCSRF := bearerAuth(roleTokens[auth.RoleOperator])
	withCSRF[auth.CSRFHeader] = "x"
	do(t, http.MethodPost, ts.URL+"/api/v1/runs/run-net-3/cancel", withCSRF)
	es := rec.take()
	require.Len(t, es, 2)
	require.Equal(t, []string{store.AuditSourceAPI, store.AuditSourcePage}, []string{es[0].Source, es[1].Source})
}

func TestContractRemediationCodes(t *testing.T) {
	rows := docTable(t, "### Approve, reject, pause, resume")
	h, _, o := roleOptions(t)
	o.Control = fullControl{h, codedRemediations{remediationFixture(h)}}
	ts := serve(t, o)
	admin := bearerAuth(roleTokens[auth.RoleAdmin])
	for _, r := range rows {
		method, path, _ := strings.Cut(r[0], " ")
		// The id says which answer the fake gives: see codedRemediations.
		path = strings.ReplaceAll(path, "{id}", "code-"+r[1])
		code, _, body := do(t, method, ts.URL+path, admin)
		require.Equal(t, r[1], strconv.Itoa(code), "%s (%s): %s", r[0], r[2], body)
	}
	for _, path := range []string{"/api/v1/remediations/code-200/approve", "/api/v1/remediations/code-200/reject"} {
		code, _, _ := send(t, http.MethodPost, ts.URL+path, admin, "not json")
		require.Equal(t, http.StatusBadRequest, code, path)
		code, _, _ = send(t, http.MethodPost, ts.URL+path, admin, `{"change_set_hash": "`+strings.Repeat("a", 70<<10)+`"}`)
		require.Equal(t, http.StatusRequestEntityTooLarge, code, path)
	}
}

// codedRemediations answers an id "code-404" with store.ErrNotFound,
// "code-409" with store.ErrConflict, any other with the fixture's.
type codedRemediations struct{ *fakeRemediations }

func (c codedRemediations) answer(ctx context.Context, id string) (store.Remediation, error) {
	switch id {
	case "code-404":
		return store.Remediation{}, store.ErrNotFound
	case "code-409":
		return store.Remediation{}, fmt.Errorf("remediation %q: %w: it is not pending", id, store.ErrConflict)
	}
	return c.Get(ctx, "rem-pend")
}

func (c codedRemediations) Approve(ctx context.Context, id, _ string) (store.Remediation, error) {
	return c.answer(ctx, id)
}

func (c codedRemediations) Reject(ctx context.Context, id string) (store.Remediation, error) {
	return c.answer(ctx, id)
}

func (c codedRemediations) SetPaused(context.Context, bool) error { return nil }

// A token file that cannot be read refuses its token (401) and only it,
// logs a warning naming the file once, and says when it is usable again.
func TestContractUnreadableTokenFile(t *testing.T) {
	_, _, o := roleOptions(t)
	h := newHarness(t)
	o.Logger = h.options().Logger
	var opFile string
	for _, tk := range o.Config.Auth.Tokens {
		if tk.Role == string(auth.RoleOperator) {
			opFile = tk.File
		}
	}
	ts := serve(t, o)
	op, viewer := bearerAuth(roleTokens[auth.RoleOperator]), bearerAuth(roleTokens[auth.RoleViewer])
	code, _, _ := do(t, http.MethodGet, ts.URL+"/api/v1/workspaces", op)
	require.Equal(t, http.StatusOK, code)

	require.NoError(t, os.Chmod(opFile, 0))
	if f, err := os.Open(opFile); err == nil { // root reads it anyway
		f.Close()
		require.NoError(t, os.Rename(opFile, opFile+".away"))
		t.Cleanup(func() { _ = os.Rename(opFile+".away", opFile) })
	}
	for range 2 {
		code, _, _ = do(t, http.MethodGet, ts.URL+"/api/v1/workspaces", op)
		require.Equal(t, http.StatusUnauthorized, code)
	}
	code, _, _ = do(t, http.MethodGet, ts.URL+"/api/v1/workspaces", viewer)
	require.Equal(t, http.StatusOK, code, "the other credentials keep working")
	logs := h.logs.String()
	require.Equal(t, 1, strings.Count(logs, "credential file unusable"), logs)
	require.Contains(t, logs, opFile)
	require.NotContains(t, logs, roleTokens[auth.RoleOperator])

	b, err := os.ReadFile(apiPage)
	require.NoError(t, err)
	require.Contains(t, string(b), "`credential file usable again`")
}

// docs/api.md lists a group's JSON fields in order, and its members'.
func TestContractGroupFields(t *testing.T) {
	var documented []string
	var members string
	for _, r := range docTable(t, "### Group incidents") {
		documented = append(documented, r[0])
		if r[0] == "members" {
			members = r[1]
		}
	}
	require.Equal(t, jsonFields(reflect.TypeFor[apitypes.Group]()), documented)
	for _, f := range jsonFields(reflect.TypeFor[apitypes.GroupMember]()) {
		require.Contains(t, members, "`"+f+"`")
	}
}

// jsonFields are the JSON names of a struct's fields, in order.
func jsonFields(ty reflect.Type) []string {
	var out []string
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}
