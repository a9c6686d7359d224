package notifytest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGitLabServerMerges(t *testing.T) {
	s := NewGitLabServer(t)
	merges := "/api/v4/projects/platform%2Finfra%2Fdrift-alerts/merge_requests"
	s.AddIssue("an issue", "", nil, false)

	// Create: 201, iids of their own, GitLab's shape, labels created.
	code, _, v := glDo(t, s, "POST", merges, `{"title":"t","description":"d","source_branch":"feature","target_branch":"main","labels":"x,y"}`)
	require.Equal(t, 201, code, v)
	mr := v.(map[string]any)
	require.InDelta(t, 1, mr["iid"], 0)
	require.Equal(t, "opened", mr["state"])
	require.Equal(t, []any{"x", "y"}, mr["labels"])
	require.Equal(t, s.URL()+"/platform/infra/drift-alerts/-/merge_requests/1", mr["web_url"])
	require.Subset(t, s.Labels(), []string{"x", "y"})

	// A second opened one of the same branches: 409, GitLab's words.
	code, _, v = glDo(t, s, "POST", merges, `{"title":"t","source_branch":"feature","target_branch":"main"}`)
	require.Equal(t, 409, code)
	require.Equal(t, map[string]any{"message": []any{"Another open merge request already exists for this source branch: !1"}}, v)
	for body, want := range map[string]int{
		`{"title":"t","source_branch":"feature"}`:                     400, // target_branch is missing
		`{"title":"t","source_branch":"main","target_branch":"main"}`: 422,
		`{"title":"t","source_branch":"a","target_branch":"b","x":1}`: 400, // unknown field (this fake)
		`{"title":"","source_branch":"a","target_branch":"b"}`:        400,
	} {
		code, _, _ := glDo(t, s, "POST", merges, body)
		require.Equal(t, want, code, body)
	}
	s.KnowBranches("main", "feature")
	code, _, v = glDo(t, s, "POST", merges, `{"title":"t","source_branch":"nope","target_branch":"main"}`)
	require.Equal(t, 400, code)
	require.Equal(t, map[string]any{"message": map[string]any{"source_branch": []any{"does not exist"}}}, v)

	// List: filtered by state and branches; the project by its ID too.
	for query, want := range map[string]int{
		"":                                    1,
		"?state=opened&source_branch=feature": 1,
		"?source_branch=other":                0,
		"?target_branch=release":              0,
		"?state=merged":                       0,
	} {
		code, _, v := glDo(t, s, "GET", merges+query, "")
		require.Equal(t, 200, code, query)
		require.Len(t, v, want, query)
	}
	code, _, v = glDo(t, s, "GET", "/api/v4/projects/4242/merge_requests", "")
	require.Equal(t, 200, code)
	require.Len(t, v, 1)
	code, _, _ = glDo(t, s, "GET", merges+"?state=nope", "")
	require.Equal(t, 400, code)
	code, _, _ = glDo(t, s, "GET", "/api/v4/projects/other%2Fproject/merge_requests", "")
	require.Equal(t, 404, code)
	code, _, _ = glDoToken(t, s, "wrong", "GET", merges, "")
	require.Equal(t, 401, code)

	got := s.MergeRequests()
	require.Len(t, got, 1)
	require.Equal(t, "feature", got[0].SourceBranch)
	require.Equal(t, "d", got[0].Description)
}
