package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// glDo sends body (JSON if not empty) to the fake's path with the token
// and returns the status, the headers and the decoded answer.
func glDo(t *testing.T, s *GitLabServer, method, path, body string) (int, http.Header, any) {
	t.Helper()
	return glDoToken(t, s, s.Token, method, path, body)
}

func glDoToken(t *testing.T, s *GitLabServer, token, method, path, body string) (int, http.Header, any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL()+path, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("PRIVATE-TOKEN", token)
	}
	resp, err := s.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), string(raw))
	return resp.StatusCode, resp.Header, v
}

const glIssues = "/api/v4/projects/platform%2Finfra%2Fdrift-alerts/issues"

func TestGitLabServerProtocol(t *testing.T) {
	s := NewGitLabServer(t)
	require.True(t, strings.HasPrefix(s.Token, "glpat-"))
	require.Equal(t, []string{s.Token}, s.Secrets())

	t.Run("auth and routes", func(t *testing.T) {
		code, _, body := glDoToken(t, s, "", "GET", glIssues, "")
		require.Equal(t, 401, code)
		require.Equal(t, map[string]any{"message": "401 Unauthorized"}, body)
		code, _, _ = glDoToken(t, s, "glpat-wrong", "GET", glIssues, "")
		require.Equal(t, 401, code)
		code, _, body = glDo(t, s, "GET", "/api/v4/projects/platform/infra/drift-alerts/issues", "")
		require.Equal(t, 404, code, "an unencoded path matches no route")
		require.Equal(t, map[string]any{"error": "404 Not Found"}, body)
		code, _, body = glDo(t, s, "GET", "/api/v4/projects/platform%2Fother/issues", "")
		require.Equal(t, 404, code)
		require.Equal(t, map[string]any{"message": "404 Project Not Found"}, body)
		code, _, _ = glDo(t, s, "GET", "/api/v4/projects/4242/issues", "")
		require.Equal(t, 200, code, "the numeric ID")
		code, _, body = glDo(t, s, "PUT", glIssues+"/99", `{"title":"x"}`)
		require.Equal(t, 404, code)
		require.Equal(t, map[string]any{"message": "404 Not found"}, body)
		code, _, _ = glDo(t, s, "DELETE", glIssues, "")
		require.Equal(t, 405, code)
	})

	t.Run("create, edit, close, reopen", func(t *testing.T) {
		code, _, body := glDo(t, s, "POST", glIssues, `{"title":"Drift","description":"d1","labels":"driftwatch,driftwatch::drift"}`)
		require.Equal(t, 201, code)
		is := body.(map[string]any)
		require.EqualValues(t, 1, is["iid"])
		require.EqualValues(t, GitLabProjectID, is["project_id"])
		require.Equal(t, "opened", is["state"])
		require.Equal(t, []any{"driftwatch", "driftwatch::drift"}, is["labels"])
		require.Equal(t, s.URL()+"/platform/infra/drift-alerts/-/issues/1", is["web_url"])
		require.Equal(t, "2026-11-03T10:00:01.000Z", is["created_at"])
		require.Equal(t, map[string]any{"short": "#1", "relative": "#1", "full": "platform/infra/drift-alerts#1"}, is["references"])

		code, _, body = glDo(t, s, "PUT", glIssues+"/1", `{"description":"d2","add_labels":"infra","state_event":"close"}`)
		require.Equal(t, 200, code)
		is = body.(map[string]any)
		require.Equal(t, "closed", is["state"])
		require.Equal(t, []any{"driftwatch", "driftwatch::drift", "infra"}, is["labels"])
		require.NotNil(t, is["closed_at"])
		code, _, _ = glDo(t, s, "PUT", glIssues+"/1", `{"state_event":"close"}`)
		require.Equal(t, 200, code, "close on a closed issue changes nothing")
		code, _, _ = glDo(t, s, "PUT", glIssues+"/1", `{"title":"Drift again","state_event":"reopen"}`)
		require.Equal(t, 200, code)
		got, ok := s.Issue(1)
		require.True(t, ok)
		require.Equal(t, "opened", got.State)
		require.Equal(t, "d2", got.Description)
		var system []string
		for _, n := range got.Notes {
			require.True(t, n.System)
			system = append(system, n.Body)
		}
		require.Equal(t, []string{"changed the description", "closed", "changed title from **Drift** to **Drift again**", "reopened"}, system)
		require.Equal(t, []string{"driftwatch", "driftwatch::drift", "infra"}, s.Labels())
	})

	t.Run("refused edits", func(t *testing.T) {
		for name, tc := range map[string]struct {
			method, path, body string
			want               any
		}{
			"no title":        {"POST", glIssues, `{"description":"x"}`, map[string]any{"error": "title is missing"}},
			"long title":      {"POST", glIssues, `{"title":"` + strings.Repeat("t", 256) + `"}`, map[string]any{"message": map[string]any{"title": []any{"is too long (maximum is 255 characters)"}}}},
			"nothing to edit": {"PUT", glIssues + "/1", `{}`, nil},
			"state_event":     {"PUT", glIssues + "/1", `{"state_event":"shut"}`, map[string]any{"error": "state_event does not have a valid value"}},
			"no note body":    {"POST", glIssues + "/1/notes", `{"body":" "}`, map[string]any{"error": "body is missing"}},
			"unknown field":   {"POST", glIssues, `{"title":"x","colour":"red"}`, nil},
		} {
			t.Run(name, func(t *testing.T) {
				n := len(s.Issues())
				code, _, body := glDo(t, s, tc.method, tc.path, tc.body)
				require.Equal(t, 400, code, "%v", body)
				if tc.want != nil {
					require.Equal(t, tc.want, body)
				}
				require.Len(t, s.Issues(), n)
			})
		}
	})

	t.Run("list filters and pagination", func(t *testing.T) {
		s := NewGitLabServer(t)
		for i := range 5 {
			s.AddIssue("Issue", "key-abc item", []string{"driftwatch::drift"}, i%2 == 1)
		}
		s.AddIssue("Other", "no key", []string{"driftwatch::drift"}, false)
		s.AddIssue("Key-ABC in title", "", nil, false)

		code, h, body := glDo(t, s, "GET", glIssues+"?labels=driftwatch%3A%3Adrift&search=key-abc&in=description&state=all&per_page=2&sort=desc", "")
		require.Equal(t, 200, code)
		require.Len(t, body, 2)
		require.EqualValues(t, 5, body.([]any)[0].(map[string]any)["iid"], "newest first")
		require.Equal(t, "1", h.Get("X-Page"))
		require.Equal(t, "2", h.Get("X-Per-Page"))
		require.Equal(t, "5", h.Get("X-Total"))
		require.Equal(t, "3", h.Get("X-Total-Pages"))
		require.Equal(t, "2", h.Get("X-Next-Page"))
		require.Empty(t, h.Get("X-Prev-Page"))
		require.Contains(t, h.Get("Link"), `page=2&per_page=2&search=key-abc&sort=desc&state=all>; rel="next"`)

		_, h, body = glDo(t, s, "GET", glIssues+"?labels=driftwatch%3A%3Adrift&search=key-abc&state=all&per_page=2&page=3", "")
		require.Len(t, body, 1)
		require.Empty(t, h.Get("X-Next-Page"))
		require.Equal(t, "2", h.Get("X-Prev-Page"))

		_, _, body = glDo(t, s, "GET", glIssues+"?search=KEY-abc&state=opened", "")
		require.Len(t, body, 4, "title and description, any case, open only")
		_, _, body = glDo(t, s, "GET", glIssues+"?search=key-abc&state=closed&sort=asc", "")
		require.Len(t, body, 2)
		require.EqualValues(t, 2, body.([]any)[0].(map[string]any)["iid"])
		code, _, _ = glDo(t, s, "GET", glIssues+"?state=shut", "")
		require.Equal(t, 400, code)
	})

	t.Run("notes", func(t *testing.T) {
		s := NewGitLabServer(t)
		iid := s.AddIssue("Drift", "d", nil, false)
		s.AddComment(iid, "first")
		code, _, body := glDo(t, s, "POST", glIssues+"/1/notes", `{"body":"second"}`)
		require.Equal(t, 201, code)
		n := body.(map[string]any)
		require.Equal(t, "second", n["body"])
		require.Equal(t, false, n["system"])
		require.Equal(t, "Issue", n["noteable_type"])
		require.EqualValues(t, 1, n["noteable_iid"])
		require.Equal(t, gitlabBotUsername, n["author"].(map[string]any)["username"])

		_, h, body := glDo(t, s, "GET", glIssues+"/1/notes?order_by=created_at&sort=desc&per_page=100", "")
		require.Equal(t, "2", h.Get("X-Total"))
		require.Equal(t, "second", body.([]any)[0].(map[string]any)["body"])
		require.Equal(t, "first", body.([]any)[1].(map[string]any)["body"])
		got, _ := s.Issue(iid)
		require.Len(t, got.Comments(), 2)
	})

	t.Run("lost answers, rate-limit headers, recording", func(t *testing.T) {
		s := NewGitLabServer(t)
		s.LoseNext("POST", "/issues")
		req, err := http.NewRequestWithContext(t.Context(), "POST", s.URL()+glIssues, strings.NewReader(`{"title":"x"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("PRIVATE-TOKEN", s.Token)
		resp, err := s.HTTPClient().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		require.Error(t, err, "the answer is lost")
		require.Len(t, s.Issues(), 1, "but the issue was made")

		reset := time.Date(2026, 11, 3, 10, 1, 0, 0, time.UTC)
		s.SetRateLimitReset(reset)
		s.FailNext(Failure{Status: 429, RetryAfter: "60"})
		code, h, _ := glDo(t, s, "GET", glIssues+"?state=all", "")
		require.Equal(t, 429, code)
		require.Equal(t, "60", h.Get("Retry-After"))
		require.Equal(t, strconv.FormatInt(reset.Unix(), 10), h.Get("RateLimit-Reset"))
		require.Equal(t, "Tue, 03 Nov 2026 10:01:00 GMT", h.Get("RateLimit-ResetTime"))
		require.Equal(t, "0", h.Get("RateLimit-Remaining"))

		rs := s.Requests()
		require.Len(t, rs, 2)
		require.Equal(t, "POST", rs[0].Method)
		require.Equal(t, glIssues, rs[0].Path, "the escaped path")
		require.Equal(t, "x", rs[0].JSON(t)["title"])
		require.Equal(t, "state=all", rs[1].Query)
	})
}
