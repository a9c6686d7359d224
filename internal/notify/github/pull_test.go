package github

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

const pullsPath = "/api/v3/repos/driftwatch-test/infra/pulls"

// pullsQuery lists the open pull requests of driftwatch/accept/prod-x
// into main.
const pullsQuery = "base=main&head=driftwatch-test%3Adriftwatch%2Faccept%2Fprod-x&per_page=100&state=open"

func change() notify.ChangeRequest { return notifytest.SampleChange("driftwatch-test/infra") }

func TestOpenChange(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewGitHubServer, newTestNotifier)
	srv.Seed(notifytest.GitHubIssue{Title: "an issue first, so numbers are shared"})
	cr := change()

	got, err := n.OpenChange(t.Context(), cr)
	require.NoError(t, err)
	require.Equal(t, notify.ChangeProposal{Number: 2, URL: srv.URL()[:len(srv.URL())-len("/api/v3/")] + "/driftwatch-test/infra/pull/2"}, got)
	requireRequests(t, srv, 0,
		req{method: "GET", path: pullsPath, query: pullsQuery},
		req{method: "POST", path: pullsPath, body: `{"title":"driftwatch: accept drift of prod (2 attributes)","head":"driftwatch/accept/prod-x","base":"main","body":"## Accepted\n\n- ` + "`aws_instance.web` `instance_type`" + `\n"}`},
		req{method: "POST", path: "/api/v3/repos/driftwatch-test/infra/issues/2/labels", body: `["driftwatch","accept"]`},
	)
	pulls := srv.Pulls()
	require.Len(t, pulls, 1)
	require.Equal(t, notifytest.GitHubPull{Number: 2, Title: cr.Title, Body: cr.Body, State: "open",
		Head: cr.Head, Base: "main", Labels: []string{"driftwatch", "accept"}}, pulls[0])

	// Again: the open one is found and labelled again (a crash may have
	// come between opening and labelling), not opened twice.
	from := len(srv.Requests())
	again, err := n.OpenChange(t.Context(), cr)
	require.NoError(t, err)
	require.Equal(t, notify.ChangeProposal{Number: 2, URL: got.URL, Existing: true}, again)
	requireRequests(t, srv, from,
		req{method: "GET", path: pullsPath, query: pullsQuery},
		req{method: "POST", path: "/api/v3/repos/driftwatch-test/infra/issues/2/labels", body: `["driftwatch","accept"]`},
	)
	require.Len(t, srv.Pulls(), 1)

	// No labels: no labelling request.
	cr.Labels = nil
	from = len(srv.Requests())
	_, err = n.OpenChange(t.Context(), cr)
	require.NoError(t, err)
	require.Len(t, srv.Requests()[from:], 1)

	// Another base is another pull request.
	srv.Seed(notifytest.GitHubIssue{Title: "filler"})
	cr.Base = "release"
	other, err := n.OpenChange(t.Context(), cr)
	require.NoError(t, err)
	require.Equal(t, 4, other.Number)
	require.False(t, other.Existing)
	require.Contains(t, logs(), "pull request opened")
	notifytest.RequireNoSecretsIn(t, logs(), srv.Secrets())
}

// A pull request opened between the list and the create (another
// daemon's) is found after GitHub refuses the second.
func TestOpenChangeRace(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
	cr := change()
	srv.FailOn(http.MethodGet, "/pulls", notifytest.Failure{Status: 200, Body: `[]`})
	first, err := n.OpenChange(t.Context(), cr) // opens it
	require.NoError(t, err)
	srv.FailOn(http.MethodGet, "/pulls", notifytest.Failure{Status: 200, Body: `[]`}) // the list misses it
	got, err := n.OpenChange(t.Context(), cr)
	require.NoError(t, err)
	require.Equal(t, notify.ChangeProposal{Number: first.Number, URL: first.URL, Existing: true}, got)
	require.Len(t, srv.Pulls(), 1)
}

func TestOpenChangeErrors(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewGitHubServer, newTestNotifier)
	secrets := srv.Secrets()
	echo := fmt.Sprintf(`{"message":"no %s","documentation_url":"https://docs.github.com/rest"}`, srv.Token)
	for _, tt := range []struct {
		method, suffix string
		status         int
		want           string
	}{
		{"GET", "/pulls", 401, "github gh-infra: list pull requests of driftwatch-test/infra: status 401: no [REDACTED] (check the token in token_file)"},
		{"GET", "/pulls", 404, "the repository does not exist, or the token cannot see it"},
		{"POST", "/pulls", 403, "github gh-infra: open pull request in driftwatch-test/infra: status 403: no [REDACTED] (the token lacks pull-request write"},
		{"POST", "/labels", 403, "github gh-infra: label pull request driftwatch-test/infra#1: status 403: no [REDACTED] (the token lacks issue write"},
	} {
		srv.FailOn(tt.method, tt.suffix, notifytest.Failure{Status: tt.status, Body: echo})
		notifytest.RequireChangeRefused(t, n, change(), tt.want, secrets)
	}

	// A branch GitHub does not have.
	srv.KnowBranches("main")
	cr := change()
	cr.Base = "release"
	_, err := n.OpenChange(t.Context(), cr)
	require.ErrorContains(t, err, "status 422: Validation Failed: invalid base (PullRequest); invalid head (PullRequest) (is the head branch pushed, and the base a branch of the repository?)")

	// A 5xx stays retryable; a request without a repository, base or
	// title is refused before any request.
	notifytest.RequireChangeChecks(t, n, srv, 502, change(),
		notify.ChangeRequest{Repository: "no-slash", Head: "h", Base: "b", Title: "t"}, notify.ChangeRequest{Head: "h", Title: "t"}, notify.ChangeRequest{Head: "h", Base: "b"})
	notifytest.RequireNoSecretsIn(t, logs(), secrets)
}
