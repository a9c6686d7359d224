package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ghDo sends a request to the fake GitHub and decodes its JSON answer.
func ghDo(t *testing.T, s *GitHubServer, method, path, auth, body string) (*http.Response, any) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, strings.TrimSuffix(s.URL(), "/")+path, r)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("User-Agent", "notifytest")
	resp, err := s.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), string(raw))
	return resp, v
}

func TestGitHubServerProtocol(t *testing.T) {
	s := NewGitHubServer(t)
	bearer := "Bearer " + s.Token
	repo := "/repos/driftwatch-test/infra"
	do := func(method, path, body string) (*http.Response, map[string]any) {
		t.Helper()
		resp, v := ghDo(t, s, method, path, bearer, body)
		m, _ := v.(map[string]any)
		return resp, m
	}
	list := func(path string) (*http.Response, []any) {
		t.Helper()
		resp, v := ghDo(t, s, "GET", path, bearer, "")
		require.Equal(t, 200, resp.StatusCode, v)
		return resp, v.([]any)
	}

	t.Run("authentication", func(t *testing.T) {
		resp, v := ghDo(t, s, "GET", repo+"/issues", "", "")
		require.Equal(t, 401, resp.StatusCode)
		require.Equal(t, "Requires authentication", v.(map[string]any)["message"])
		resp, v = ghDo(t, s, "GET", repo+"/issues", "Bearer nope", "")
		require.Equal(t, 401, resp.StatusCode)
		require.Equal(t, "Bad credentials", v.(map[string]any)["message"])
		resp, _ = ghDo(t, s, "GET", repo+"/issues", "token "+s.Token, "")
		require.Equal(t, 200, resp.StatusCode, "the classic token scheme works too")
		require.NotEmpty(t, resp.Header.Get("X-RateLimit-Remaining"))
		resp, v = ghDo(t, s, "GET", "/repos/driftwatch-test/other/issues", bearer, "")
		require.Equal(t, 404, resp.StatusCode)
		require.Equal(t, "Not Found", v.(map[string]any)["message"])
	})

	t.Run("create, update, close, reopen", func(t *testing.T) {
		resp, is := do("POST", repo+"/issues", `{"title":"t1","body":"b1","labels":["a","b"]}`)
		require.Equal(t, 201, resp.StatusCode)
		require.Equal(t, s.URL()+"repos/driftwatch-test/infra/issues/1", resp.Header.Get("Location"))
		require.EqualValues(t, 1, is["number"])
		require.Equal(t, "open", is["state"])
		require.Nil(t, is["state_reason"])
		require.Equal(t, "b1", is["body"])
		require.Len(t, is["labels"], 2)
		require.Equal(t, "a", is["labels"].([]any)[0].(map[string]any)["name"])

		resp, is = do("PATCH", repo+"/issues/1", `{"state":"closed","state_reason":"not_planned"}`)
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, "closed", is["state"])
		require.Equal(t, "not_planned", is["state_reason"])
		require.NotNil(t, is["closed_at"])
		require.Equal(t, "t1", is["title"], "fields not sent are kept")

		_, is = do("PATCH", repo+"/issues/1", `{"state":"open","body":"b2"}`)
		require.Equal(t, "open", is["state"])
		require.Equal(t, "reopened", is["state_reason"])
		require.Nil(t, is["closed_at"])
		got, _ := s.Issue(1)
		require.Equal(t, 1, got.Reopened)
		require.Equal(t, "b2", got.Body)

		resp, is = do("PATCH", repo+"/issues/1", `{"state":"done"}`)
		require.Equal(t, 422, resp.StatusCode)
		require.Equal(t, "Validation Failed", is["message"])
		resp, is = do("POST", repo+"/issues", `{"body":"no title"}`)
		require.Equal(t, 422, resp.StatusCode)
		require.Equal(t, []any{map[string]any{"resource": "Issue", "code": "missing_field", "field": "title"}}, is["errors"])
		resp, _ = do("POST", repo+"/issues", `{"title":"x","body":"`+strings.Repeat("b", 65537)+`"}`)
		require.Equal(t, 422, resp.StatusCode)
		resp, _ = do("POST", repo+"/issues", `{"title":"x","bodyy":"typo"}`)
		require.Equal(t, 422, resp.StatusCode, "this fake refuses unknown fields")
		resp, _ = do("PATCH", repo+"/issues/99", `{"state":"open"}`)
		require.Equal(t, 404, resp.StatusCode)
	})

	t.Run("list: filters, order, pull requests, pages", func(t *testing.T) {
		s := NewGitHubServer(t)
		for i := range 5 {
			s.Seed(GitHubIssue{Title: "x", Labels: []string{"l1"}, State: []string{"open", "closed"}[i%2]})
		}
		s.Seed(GitHubIssue{Title: "pr", Labels: []string{"l1", "l2"}, PullRequest: true})
		s.Seed(GitHubIssue{Title: "other", Labels: []string{"l2"}})
		numbers := func(items []any) []float64 {
			var out []float64
			for _, it := range items {
				out = append(out, it.(map[string]any)["number"].(float64))
			}
			return out
		}
		_, items := ghList(t, s, "/repos/driftwatch-test/infra/issues")
		require.Equal(t, []float64{7, 6, 5, 3, 1}, numbers(items), "open by default, newest first, pull requests included")
		_, items = ghList(t, s, "/repos/driftwatch-test/infra/issues?state=all&labels=l1,l2")
		require.Equal(t, []float64{6}, numbers(items))
		require.Contains(t, items[0].(map[string]any), "pull_request")
		resp, items := ghList(t, s, "/repos/driftwatch-test/infra/issues?state=all&labels=l1&per_page=2&direction=asc")
		require.Equal(t, []float64{1, 2}, numbers(items))
		link := resp.Header.Get("Link")
		require.Contains(t, link, `page=2&per_page=2&state=all>; rel="next"`)
		require.Contains(t, link, `page=3&per_page=2&state=all>; rel="last"`)
		resp, items = ghList(t, s, "/repos/driftwatch-test/infra/issues?state=all&labels=l1&per_page=2&direction=asc&page=3")
		require.Equal(t, []float64{5, 6}, numbers(items))
		require.NotContains(t, resp.Header.Get("Link"), `rel="next"`)
		require.Contains(t, resp.Header.Get("Link"), `rel="prev"`)
		s.Delete(7)
		_, items = ghList(t, s, "/repos/driftwatch-test/infra/issues")
		require.Equal(t, []float64{6, 5, 3, 1}, numbers(items), "a deleted issue is not listed")
		resp, v := ghDo(t, s, "GET", "/repos/driftwatch-test/infra/issues/7", "Bearer "+s.Token, "")
		require.Equal(t, 410, resp.StatusCode)
		require.Equal(t, "This issue was deleted", v.(map[string]any)["message"])
		resp, _ = ghDo(t, s, "GET", "/repos/driftwatch-test/infra/issues?state=opened", "Bearer "+s.Token, "")
		require.Equal(t, 422, resp.StatusCode)
	})

	t.Run("comments", func(t *testing.T) {
		resp, c := do("POST", repo+"/issues/1/comments", `{"body":"c1"}`)
		require.Equal(t, 201, resp.StatusCode)
		require.Equal(t, "c1", c["body"])
		require.Contains(t, c["html_url"], "/driftwatch-test/infra/issues/1#issuecomment-")
		do("POST", repo+"/issues/1/comments", `{"body":"c2"}`)
		_, items := list(repo + "/issues/1/comments")
		require.Len(t, items, 2)
		require.Equal(t, "c1", items[0].(map[string]any)["body"], "oldest first")
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		_, items = list(repo + "/issues/1/comments?since=" + future)
		require.Empty(t, items)
		resp, _ = do("POST", repo+"/issues/1/comments", `{"body":""}`)
		require.Equal(t, 422, resp.StatusCode)
		resp, m := do("POST", repo+"/issues/1/comments", `{"body":"`+strings.Repeat("c", 65537)+`"}`)
		require.Equal(t, 422, resp.StatusCode)
		require.Equal(t, "Body is too long (maximum is 65536 characters)", m["errors"].([]any)[0].(map[string]any)["message"])
		_, is := do("GET", repo+"/issues/1", "")
		require.EqualValues(t, 2, is["comments"])
	})

	t.Run("rate limits and injected failures", func(t *testing.T) {
		reset := time.Now().Add(time.Minute).Truncate(time.Second)
		s.LimitNext(GitHubRateLimit{Reset: reset})
		resp, m := do("GET", repo+"/issues", "")
		require.Equal(t, 403, resp.StatusCode)
		require.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
		require.Equal(t, reset.Unix(), mustInt(t, resp.Header.Get("X-RateLimit-Reset")))
		require.Contains(t, m["message"], "API rate limit exceeded")

		s.LimitNext(GitHubRateLimit{Status: 429, Secondary: true, RetryAfter: "9"})
		resp, m = do("GET", repo+"/issues", "")
		require.Equal(t, 429, resp.StatusCode)
		require.Equal(t, "9", resp.Header.Get("Retry-After"))
		require.Contains(t, m["message"], "secondary rate limit")

		s.FailOn("POST", "/comments", Failure{Status: 502})
		resp, _ = do("GET", repo+"/issues/1/comments", "")
		require.Equal(t, 200, resp.StatusCode, "only the matching request fails")
		resp, _ = do("POST", repo+"/issues/1/comments", `{"body":"c3"}`)
		require.Equal(t, 502, resp.StatusCode)
		resp, _ = do("POST", repo+"/issues/1/comments", `{"body":"c3"}`)
		require.Equal(t, 201, resp.StatusCode)

		s.DisableIssues(true)
		resp, m = do("GET", repo+"/issues", "")
		require.Equal(t, 410, resp.StatusCode)
		require.Equal(t, "Issues are disabled for this repo", m["message"])
		s.DisableIssues(false)
	})

	require.NotEmpty(t, s.Requests())
	for _, r := range s.Requests() {
		require.True(t, strings.HasPrefix(r.Path, "/api/v3/repos/"), r.Path)
	}
}

func ghList(t *testing.T, s *GitHubServer, path string) (*http.Response, []any) {
	t.Helper()
	resp, v := ghDo(t, s, "GET", path, "Bearer "+s.Token, "")
	require.Equal(t, 200, resp.StatusCode, v)
	return resp, v.([]any)
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, json.Unmarshal([]byte(s), &n))
	return n
}
