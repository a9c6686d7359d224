package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pdDo posts body to the fake's path with contentType.
func pdDo(t *testing.T, s *PagerDutyServer, method, path, contentType, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL()+path, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	return resp.StatusCode, m
}

func TestPagerDutyServerProtocol(t *testing.T) {
	s := NewPagerDutyServer(t)
	require.Len(t, s.RoutingKey, 32)
	key := s.RoutingKey
	post := func(body string) (int, map[string]any) {
		t.Helper()
		return pdDo(t, s, "POST", "/v2/enqueue", "application/json", body)
	}
	trigger := func(dedup, summary string) string {
		return `{"routing_key":"` + key + `","event_action":"trigger","dedup_key":"` + dedup +
			`","payload":{"summary":"` + summary + `","source":"prod/network","severity":"error"}}`
	}

	t.Run("trigger, de-duplicate, resolve, trigger again", func(t *testing.T) {
		code, body := post(trigger("k1", "first"))
		require.Equal(t, 202, code)
		require.Equal(t, map[string]any{"status": "success", "message": "Event processed", "dedup_key": "k1"}, body)
		code, _ = post(trigger("k1", "second"))
		require.Equal(t, 202, code)
		as := s.Alerts()
		require.Len(t, as, 1, "a trigger on an open alert's dedup_key opens no second alert")
		require.Equal(t, "first", as[0].Summary)
		require.Equal(t, 2, as[0].Triggers())

		code, _ = post(`{"routing_key":"` + key + `","event_action":"acknowledge","dedup_key":"k1"}`)
		require.Equal(t, 202, code)
		a, _ := s.Alert("k1")
		require.Equal(t, "acknowledged", a.Status)
		code, _ = post(`{"routing_key":"` + key + `","event_action":"resolve","dedup_key":"k1"}`)
		require.Equal(t, 202, code)
		a, _ = s.Alert("k1")
		require.Equal(t, "resolved", a.Status)

		code, _ = post(`{"routing_key":"` + key + `","event_action":"resolve","dedup_key":"k1"}`)
		require.Equal(t, 202, code, "a resolve without an open alert is dropped, not refused")
		code, _ = post(trigger("k1", "third"))
		require.Equal(t, 202, code)
		require.Len(t, s.Alerts(), 2, "a resolved dedup_key does not de-duplicate")
		a, _ = s.Alert("k1")
		require.Equal(t, "triggered", a.Status)
		require.Equal(t, "third", a.Summary)
	})

	t.Run("generated dedup_key", func(t *testing.T) {
		code, body := post(strings.Replace(trigger("", "x"), `"dedup_key":"",`, "", 1))
		require.Equal(t, 202, code)
		require.NotEmpty(t, body["dedup_key"])
	})

	t.Run("invalid events are 400 with reasons", func(t *testing.T) {
		n := len(s.Alerts())
		for name, tc := range map[string]struct{ body, want string }{
			"short key":         {strings.Replace(trigger("k", "s"), key, "abc", 1), "Length of 'routing_key' is incorrect (should be 32 characters)"},
			"unknown key":       {strings.Replace(trigger("k", "s"), key, strings.Repeat("x", 32), 1), "'routing_key' is not the key of an integration"},
			"no summary":        {trigger("k", ""), "'payload.summary' is missing or blank"},
			"long summary":      {trigger("k", strings.Repeat("s", 1025)), "'payload.summary' is longer than 1024 characters"},
			"severity":          {strings.Replace(trigger("k", "s"), `"error"`, `"high"`, 1), "'payload.severity' is invalid"},
			"no source":         {strings.Replace(trigger("k", "s"), `"prod/network"`, `""`, 1), "'payload.source' is missing or blank"},
			"no payload":        {`{"routing_key":"` + key + `","event_action":"trigger","dedup_key":"k"}`, "'payload' is missing or blank"},
			"action":            {strings.Replace(trigger("k", "s"), `"trigger"`, `"snooze"`, 1), "'event_action' is invalid"},
			"resolve no key":    {`{"routing_key":"` + key + `","event_action":"resolve"}`, "'dedup_key' is missing or blank"},
			"long dedup_key":    {trigger(strings.Repeat("k", 256), "s"), "'dedup_key' is longer than 255 characters"},
			"unknown field":     {strings.Replace(trigger("k", "s"), `"event_action"`, `"colour":"red","event_action"`, 1), "unknown field"},
			"link without href": {strings.Replace(trigger("k", "s"), `"event_action"`, `"links":[{"text":"x"}],"event_action"`, 1), "'links[0].href' is missing or blank"},
			"bad timestamp":     {strings.Replace(trigger("k", "s"), `"severity":"error"`, `"severity":"error","timestamp":"yesterday"`, 1), "'payload.timestamp'"},
		} {
			t.Run(name, func(t *testing.T) {
				code, body := post(tc.body)
				require.Equal(t, 400, code, "%v", body)
				require.Equal(t, "invalid event", body["status"])
				require.Equal(t, "Event object is invalid", body["message"])
				require.Contains(t, body["errors"].([]any)[0], tc.want)
			})
		}
		require.Len(t, s.Alerts(), n, "an invalid event changes nothing")
	})

	t.Run("content type, path and method", func(t *testing.T) {
		code, body := pdDo(t, s, "POST", "/v2/enqueue", "text/plain", trigger("k", "s"))
		require.Equal(t, 400, code)
		require.Equal(t, []any{"Content-Type must be application/json"}, body["errors"])
		code, _ = pdDo(t, s, "POST", "/v2/enqueue", "application/json; charset=utf-8", trigger("k", "s"))
		require.Equal(t, 202, code)
		code, _ = pdDo(t, s, "POST", "/v2/alerts", "application/json", trigger("k", "s"))
		require.Equal(t, 404, code)
		code, _ = pdDo(t, s, "GET", "/v2/enqueue", "", "")
		require.Equal(t, 405, code)
	})

	t.Run("records every request", func(t *testing.T) {
		n := len(s.Requests())
		s.FailNext(Failure{Status: 429, RetryAfter: "5"})
		code, _ := post(trigger("k9", "s"))
		require.Equal(t, 429, code)
		rs := s.Requests()
		require.Len(t, rs, n+1)
		last := rs[len(rs)-1]
		require.Equal(t, "POST", last.Method)
		require.Equal(t, "/v2/enqueue", last.Path)
		require.Equal(t, "trigger", last.JSON(t)["event_action"])
		_, ok := s.Alert("k9")
		require.False(t, ok, "an injected failure is not handled")
		require.Equal(t, []string{key}, s.Secrets())
	})
}
