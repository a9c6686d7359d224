package gitlab

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

const (
	mergesPath  = projectPath + "/merge_requests"
	mergesQuery = "per_page=20&source_branch=driftwatch%2Faccept%2Fprod-x&state=opened&target_branch=main"
)

func change() notify.ChangeRequest { return notifytest.SampleChange(notifytest.GitLabProjectPath) }

func TestOpenChange(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewGitLabServer, newTestNotifier)
	srv.AddIssue("an issue: merge requests number apart", "", nil, false)
	cr := change()

	got, err := n.OpenChange(t.Context(), cr)
	require.NoError(t, err)
	require.Equal(t, notify.ChangeProposal{Number: 1, URL: srv.URL() + "/" + notifytest.GitLabProjectPath + "/-/merge_requests/1"}, got)
	requireCalls(t, []call{
		{method: "GET", path: mergesPath, query: mergesQuery},
		{method: "POST", path: mergesPath, body: map[string]any{
			"title": cr.Title, "description": cr.Body, "source_branch": cr.Head, "target_branch": "main", "labels": "driftwatch,accept",
		}},
	}, srv.Requests())
	for _, r := range srv.Requests() {
		require.Equal(t, srv.Token, r.Header.Get("PRIVATE-TOKEN"))
	}
	mrs := srv.MergeRequests()
	require.Len(t, mrs, 1)
	require.Equal(t, []string{"driftwatch", "accept"}, mrs[0].Labels)
	require.Equal(t, "opened", mrs[0].State)

	// Again: found, not opened twice.
	from := len(srv.Requests())
	again, err := n.OpenChange(t.Context(), cr)
	require.NoError(t, err)
	require.Equal(t, notify.ChangeProposal{Number: 1, URL: got.URL, Existing: true}, again)
	requireCalls(t, []call{{method: "GET", path: mergesPath, query: mergesQuery}}, srv.Requests()[from:])
	require.Len(t, srv.MergeRequests(), 1)

	// The project by its numeric ID, another target: another one.
	cr.Repository, cr.Base, cr.Labels = "4242", "release", nil
	other, err := n.OpenChange(t.Context(), cr)
	require.NoError(t, err)
	require.Equal(t, 2, other.Number)
	last := srv.Requests()[len(srv.Requests())-1]
	require.Equal(t, "/api/v4/projects/4242/merge_requests", last.Path)
	require.NotContains(t, string(last.Body), "labels")
	require.Contains(t, logs(), "merge request opened")
	notifytest.RequireNoSecretsIn(t, logs(), srv.Secrets())
}

// A merge request opened between the list and the create is found after
// GitLab refuses the second with 409.
func TestOpenChangeRace(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	first, err := n.OpenChange(t.Context(), change())
	require.NoError(t, err)
	srv.FailNext(notifytest.Failure{Status: http.StatusOK, Body: `[]`}) // the list misses it
	got, err := n.OpenChange(t.Context(), change())
	require.NoError(t, err)
	require.Equal(t, notify.ChangeProposal{Number: first.Number, URL: first.URL, Existing: true}, got)
	require.Len(t, srv.MergeRequests(), 1)
}

func TestOpenChangeErrors(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewGitLabServer, newTestNotifier)
	secrets := srv.Secrets()
	echo := fmt.Sprintf(`{"message":"no %s"}`, srv.Token)
	for _, tt := range []struct {
		status int
		want   string
	}{
		{401, "gitlab gl-infra: list the merge requests of platform/infra/drift-alerts: status 401: no [REDACTED] (is the token valid and unexpired?)"},
		{403, "status 403: no [REDACTED] (the token lacks merge-request write"},
		{404, "status 404 (does the project exist, and can the token see it?)"}, // the client library drops a 404's body
	} {
		srv.FailNext(notifytest.Failure{Status: tt.status, Body: echo})
		notifytest.RequireChangeRefused(t, n, change(), tt.want, secrets)
	}

	// A branch GitLab does not have.
	srv.KnowBranches("main")
	_, err := n.OpenChange(t.Context(), change())
	require.ErrorContains(t, err, "gitlab gl-infra: open a merge request in platform/infra/drift-alerts: status 400: source_branch does not exist (is the source branch pushed, and the target a branch of the project?)")

	// A 5xx stays retryable; a request without a base or a title is
	// refused before any request.
	notifytest.RequireChangeChecks(t, n, srv, 503, change(), notify.ChangeRequest{Head: "h", Title: "t"}, notify.ChangeRequest{Head: "h", Base: "b", Title: " "})
	notifytest.RequireNoSecretsIn(t, logs(), secrets)
}
