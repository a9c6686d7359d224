package notifytest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGitHubServerPulls(t *testing.T) {
	s := NewGitHubServer(t)
	bearer := "Bearer " + s.Token
	pulls := "/repos/driftwatch-test/infra/pulls"
	s.Seed(GitHubIssue{Title: "an issue"})

	// Create: 201, a number shared with issues, GitHub's shape.
	resp, v := ghDo(t, s, "POST", pulls, bearer, `{"title":"t","head":"driftwatch-test:feature","base":"main","body":"b"}`)
	require.Equal(t, 201, resp.StatusCode, v)
	pr := v.(map[string]any)
	require.InDelta(t, 2, pr["number"], 0)
	require.Equal(t, "feature", pr["head"].(map[string]any)["ref"])
	require.Equal(t, "driftwatch-test:main", pr["base"].(map[string]any)["label"])
	require.Equal(t, s.srv.URL+"/driftwatch-test/infra/pull/2", pr["html_url"])
	require.Equal(t, "open", pr["state"])
	issue, ok := s.Issue(2)
	require.True(t, ok)
	require.True(t, issue.PullRequest)

	// A second open one of the same head and base: 422, GitHub's words.
	resp, v = ghDo(t, s, "POST", pulls, bearer, `{"title":"t","head":"feature","base":"main"}`)
	require.Equal(t, 422, resp.StatusCode)
	require.Equal(t, "A pull request already exists for driftwatch-test:feature.", v.(map[string]any)["errors"].([]any)[0].(map[string]any)["message"])
	// Missing fields, one error each; head equal to base; an unknown field.
	resp, v = ghDo(t, s, "POST", pulls, bearer, `{"title":"t"}`)
	require.Equal(t, 422, resp.StatusCode)
	require.Len(t, v.(map[string]any)["errors"], 2)
	resp, _ = ghDo(t, s, "POST", pulls, bearer, `{"title":"t","head":"main","base":"main"}`)
	require.Equal(t, 422, resp.StatusCode)
	resp, _ = ghDo(t, s, "POST", pulls, bearer, `{"title":"t","head":"x","base":"main","reviewers":["a"]}`)
	require.Equal(t, 422, resp.StatusCode)
	// Known branches: another is an invalid head.
	s.KnowBranches("main", "feature")
	resp, v = ghDo(t, s, "POST", pulls, bearer, `{"title":"t","head":"nope","base":"main"}`)
	require.Equal(t, 422, resp.StatusCode)
	require.Equal(t, "head", v.(map[string]any)["errors"].([]any)[0].(map[string]any)["field"])

	// List: filtered by state, head (owner:branch) and base.
	for query, want := range map[string]int{
		"":                              1,
		"?head=driftwatch-test:feature": 1,
		"?head=driftwatch-test:other":   0,
		"?head=someone-else:feature":    0,
		"?base=main&head=driftwatch-test:feature": 1,
		"?base=release": 0,
		"?state=closed": 0,
	} {
		resp, v := ghDo(t, s, "GET", pulls+query, bearer, "")
		require.Equal(t, 200, resp.StatusCode, query)
		require.Len(t, v, want, query)
	}
	resp, _ = ghDo(t, s, "GET", pulls+"?head=feature", bearer, "")
	require.Equal(t, 422, resp.StatusCode, "GitHub's form is owner:branch")

	// Labels: both body forms, no duplicates, all the issue's labels back.
	resp, v = ghDo(t, s, "POST", "/repos/driftwatch-test/infra/issues/2/labels", bearer, `["a","b"]`)
	require.Equal(t, 200, resp.StatusCode)
	require.Len(t, v, 2)
	resp, v = ghDo(t, s, "POST", "/repos/driftwatch-test/infra/issues/2/labels", bearer, `{"labels":["B","c"]}`)
	require.Equal(t, 200, resp.StatusCode)
	require.Len(t, v, 3)
	resp, _ = ghDo(t, s, "POST", "/repos/driftwatch-test/infra/issues/2/labels", bearer, `"a"`)
	require.Equal(t, 422, resp.StatusCode)
	resp, _ = ghDo(t, s, "POST", "/repos/driftwatch-test/infra/issues/9/labels", bearer, `["a"]`)
	require.Equal(t, 404, resp.StatusCode)
	require.Equal(t, []GitHubPull{{Number: 2, Title: "t", Body: "b", State: "open", Head: "feature", Base: "main", Labels: []string{"a", "b", "c"}}}, s.Pulls())

	// Authentication and other repositories, as for issues.
	resp, _ = ghDo(t, s, "GET", pulls, "Bearer nope", "")
	require.Equal(t, 401, resp.StatusCode)
	resp, _ = ghDo(t, s, "GET", "/repos/other/infra/pulls", bearer, "")
	require.Equal(t, 404, resp.StatusCode)
}
