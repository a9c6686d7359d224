package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// teamsDo sends body to u with contentType and returns the status and the
// error envelope (nil for an empty body).
func teamsDo(t *testing.T, s *TeamsServer, method, u, contentType, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if len(raw) == 0 {
		return resp.StatusCode, nil
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	e, _ := m["error"].(map[string]any) // an injected failure's body has none
	return resp.StatusCode, e
}

const teamsCard = `{"type":"message","attachments":[{"contentType":"application/vnd.microsoft.card.adaptive","contentUrl":null,
	"content":{"$schema":"http://adaptivecards.io/schemas/adaptive-card.json","type":"AdaptiveCard","version":"1.4",
	"body":[{"type":"TextBlock","text":"hello"},{"type":"FactSet","facts":[{"title":"a","value":"b"}]},
	        {"type":"Container","style":"good","items":[{"type":"RichTextBlock","inlines":[{"type":"TextRun","text":"x"}]}]}],
	"actions":[{"type":"Action.OpenUrl","title":"Open","url":"https://example.com/x"}]}}]}`

func TestTeamsServerProtocol(t *testing.T) {
	s := NewTeamsServer(t)
	post := func(body string) (int, map[string]any) {
		t.Helper()
		return teamsDo(t, s, "POST", s.WebhookURL(), "application/json", body)
	}

	t.Run("a card is accepted with 202 and an empty body, and posted", func(t *testing.T) {
		code, e := post(teamsCard)
		require.Equal(t, 202, code)
		require.Nil(t, e)
		cards := s.Cards()
		require.Len(t, cards, 1)
		require.Equal(t, "AdaptiveCard", cards[0]["type"])

		s.AcceptStatus = 200
		code, _ = post(teamsCard)
		require.Equal(t, 200, code)
		s.AcceptStatus = 0
	})

	t.Run("payloads Workflows and Teams refuse are 400 with the reason", func(t *testing.T) {
		n := len(s.Cards())
		for name, tc := range map[string]struct{ body, want string }{
			"not JSON":          {`type=message`, "The request content is not valid JSON"},
			"not a message":     {strings.Replace(teamsCard, `"type":"message"`, `"type":"note"`, 1), `'type' must be 'message', not "note".`},
			"no attachments":    {`{"type":"message"}`, "'attachments' is missing or empty"},
			"empty attachments": {`{"type":"message","attachments":[]}`, "'attachments' is missing or empty"},
			"wrong contentType": {strings.Replace(teamsCard, "application/vnd.microsoft.card.adaptive", "application/vnd.microsoft.teams.card.o365connector", 1),
				`'attachments[0].contentType' must be "application/vnd.microsoft.card.adaptive"`},
			"contentUrl set":     {strings.Replace(teamsCard, `"contentUrl":null`, `"contentUrl":"https://x"`, 1), "'attachments[0].contentUrl' must be null"},
			"no content":         {`{"type":"message","attachments":[{"contentType":"application/vnd.microsoft.card.adaptive"}]}`, "'attachments[0].content' is missing."},
			"not a card":         {strings.Replace(teamsCard, `"AdaptiveCard"`, `"MessageCard"`, 1), "'type' must be 'AdaptiveCard'."},
			"no version":         {strings.Replace(teamsCard, `"version":"1.4",`, "", 1), "'version' is required."},
			"empty TextBlock":    {strings.Replace(teamsCard, `"text":"hello"`, `"text":" "`, 1), "body[0]: TextBlock: 'text' is required."},
			"unknown element":    {strings.Replace(teamsCard, `"type":"TextBlock"`, `"type":"Media"`, 1), "body[0]: element type Media is not expected"},
			"untitled fact":      {strings.Replace(teamsCard, `"title":"a"`, `"title":""`, 1), "body[1]: FactSet facts[0]: 'title' is required."},
			"inline not TextRun": {strings.Replace(teamsCard, `"TextRun"`, `"Image"`, 1), "body[2]: items[0]: RichTextBlock inlines[0]: must be a TextRun."},
			"relative action url": {strings.Replace(teamsCard, `"url":"https://example.com/x"`, `"url":"/x"`, 1),
				"actions[0]: 'url' must be an absolute http(s) URL."},
		} {
			t.Run(name, func(t *testing.T) {
				code, e := post(tc.body)
				require.Equal(t, 400, code, "%v", e)
				require.Equal(t, "InvalidRequestContent", e["code"])
				require.Contains(t, e["message"], tc.want)
			})
		}
		code, e := teamsDo(t, s, "POST", s.WebhookURL(), "text/plain", teamsCard)
		require.Equal(t, 400, code)
		require.Equal(t, "The request content type must be 'application/json'.", e["message"])
		require.Len(t, s.Cards(), n, "a refused payload posts nothing")
	})

	t.Run("over Teams' message limit: 413", func(t *testing.T) {
		big := strings.Replace(teamsCard, `"text":"hello"`, `"text":"`+strings.Repeat("x", TeamsMaxMessage)+`"`, 1)
		code, e := post(big)
		require.Equal(t, 413, code)
		require.Equal(t, "RequestEntityTooLarge", e["code"])
	})

	t.Run("signature", func(t *testing.T) {
		code, e := teamsDo(t, s, "POST", s.URLWithSig("not-the-sig"), "application/json", teamsCard)
		require.Equal(t, 401, code)
		require.Equal(t, "DirectApiInvalidAuthorizationSignature", e["code"])
		code, e = teamsDo(t, s, "POST", strings.Split(s.WebhookURL(), "&sig=")[0], "application/json", teamsCard)
		require.Equal(t, 401, code)
		require.Equal(t, "DirectApiAuthorizationRequired", e["code"])
	})

	t.Run("path and method", func(t *testing.T) {
		code, e := teamsDo(t, s, "POST", strings.Replace(s.WebhookURL(), s.WorkflowID, "otherflow", 1), "application/json", teamsCard)
		require.Equal(t, 404, code)
		require.Equal(t, "WorkflowNotFound", e["code"])
		code, _ = teamsDo(t, s, "GET", s.WebhookURL(), "", "")
		require.Equal(t, 405, code)
	})

	t.Run("records every request; a deleted flow is 404", func(t *testing.T) {
		n := len(s.Requests())
		cards := len(s.Cards())
		s.FailNext(Failure{Status: 429, RetryAfter: "5"})
		code, _ := post(teamsCard)
		require.Equal(t, 429, code)
		rs := s.Requests()
		require.Len(t, rs, n+1)
		last := rs[len(rs)-1]
		require.Equal(t, "POST", last.Method)
		require.Equal(t, "/workflows/"+s.WorkflowID+"/triggers/manual/paths/invoke", last.Path)
		require.Contains(t, last.Query, "sig="+s.Sig)
		require.Equal(t, "message", last.JSON(t)["type"])
		require.Len(t, s.Cards(), cards, "an injected failure is not handled")
		require.Equal(t, []string{s.WebhookURL(), s.Sig, s.WorkflowID}, s.Secrets())

		s.Delete()
		code, e := post(teamsCard)
		require.Equal(t, 404, code)
		require.Equal(t, "WorkflowNotFound", e["code"])
	})
}
