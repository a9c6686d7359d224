package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opsgenie/opsgenie-go-sdk-v2/alert"
	"github.com/opsgenie/opsgenie-go-sdk-v2/client"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

// ogDo sends a raw request to the fake the way the SDK would.
func ogDo(t *testing.T, s *OpsGenieServer, method, path, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "https://"+s.APIURL()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "GenieKey "+s.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	return resp.StatusCode, resp.Header, m
}

func TestOpsGenieServerProtocol(t *testing.T) {
	s := NewOpsGenieServer(t)

	t.Run("auth", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "https://"+s.APIURL()+"/v2/alerts", strings.NewReader(`{"message":"x"}`))
		req.Header.Set("Authorization", "GenieKey wrong")
		resp, err := s.HTTPClient().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 401, resp.StatusCode)
		require.Empty(t, s.Alerts())
	})

	t.Run("create, dedup, close, re-create", func(t *testing.T) {
		code, h, body := ogDo(t, s, "POST", "/v2/alerts", `{"message":"m","alias":"a1","priority":"P2","note":"n1"}`)
		require.Equal(t, 202, code)
		require.Equal(t, "Request will be processed", body["result"])
		reqID := body["requestId"].(string)
		require.Equal(t, reqID, h.Get("X-Request-Id"))

		code, _, body = ogDo(t, s, "GET", "/v2/alerts/requests/"+reqID, "")
		require.Equal(t, 200, code)
		data := body["data"].(map[string]any)
		require.Equal(t, true, data["isSuccess"])
		require.Equal(t, "a1", data["alias"])

		code, _, _ = ogDo(t, s, "POST", "/v2/alerts", `{"message":"m again","alias":"a1"}`)
		require.Equal(t, 202, code)
		as := s.Alerts()
		require.Len(t, as, 1)
		require.Equal(t, 2, as[0].Count)
		require.Equal(t, "m", as[0].Message, "a de-duplicated create changes nothing but the count")
		require.Equal(t, []string{"n1"}, as[0].Notes)

		code, _, _ = ogDo(t, s, "PUT", "/v2/alerts/a1/priority?identifierType=alias", `{"priority":"P1"}`)
		require.Equal(t, 202, code)
		code, _, _ = ogDo(t, s, "POST", "/v2/alerts/a1/notes?identifierType=alias", `{"note":"n2"}`)
		require.Equal(t, 202, code)
		code, _, _ = ogDo(t, s, "POST", "/v2/alerts/a1/close?identifierType=alias", `{"note":"bye"}`)
		require.Equal(t, 202, code)
		a, ok := s.Alert("a1")
		require.True(t, ok)
		require.Equal(t, "closed", a.Status)
		require.Equal(t, "P1", a.Priority)
		require.Equal(t, []string{"n1", "n2"}, a.Notes)
		require.Equal(t, "bye", a.CloseNote)

		code, _, _ = ogDo(t, s, "POST", "/v2/alerts", `{"message":"m3","alias":"a1"}`)
		require.Equal(t, 202, code)
		require.Len(t, s.Alerts(), 2, "a closed alias does not de-duplicate")
	})

	t.Run("action on unknown alias fails when processed", func(t *testing.T) {
		code, _, body := ogDo(t, s, "POST", "/v2/alerts/nope/close?identifierType=alias", `{}`)
		require.Equal(t, 202, code)
		_, _, body = ogDo(t, s, "GET", "/v2/alerts/requests/"+body["requestId"].(string), "")
		data := body["data"].(map[string]any)
		require.Equal(t, false, data["isSuccess"])
		require.Equal(t, "Alert does not exist", data["status"])
	})

	t.Run("strictness", func(t *testing.T) {
		for _, tc := range []struct{ method, path, body string }{
			{"POST", "/v2/alerts", `{"message":""}`},
			{"POST", "/v2/alerts", `{"message":"` + strings.Repeat("x", 131) + `"}`},
			{"POST", "/v2/alerts", `{"message":"m","tags":["` + strings.Repeat("t", 51) + `"]}`},
			{"POST", "/v2/alerts", `{"message":"m","priority":"P9"}`},
			{"POST", "/v2/alerts", `{"message":"m","colour":"red"}`},
			{"POST", "/v2/alerts", `{"message":"m","responders":[{"type":"team"}]}`},
			{"POST", "/v2/alerts/a1/close?identifierType=id", `{}`},
			{"POST", "/v2/alerts/a1/notes?identifierType=alias", `{"note":""}`},
		} {
			code, _, body := ogDo(t, s, tc.method, tc.path, tc.body)
			require.Equal(t, 422, code, "%s %s %s: %v", tc.method, tc.path, tc.body, body)
		}
		code, _, _ := ogDo(t, s, "DELETE", "/v2/alerts/a1", "")
		require.Equal(t, 404, code)
	})

	t.Run("records every request", func(t *testing.T) {
		n := len(s.Requests())
		s.FailNext(Failure{Status: 503})
		code, _, _ := ogDo(t, s, "POST", "/v2/alerts", `{"message":"m"}`)
		require.Equal(t, 503, code)
		rs := s.Requests()
		require.Len(t, rs, n+1)
		last := rs[len(rs)-1]
		require.Equal(t, "POST", last.Method)
		require.Equal(t, "/v2/alerts", last.Path)
		require.Equal(t, map[string]any{"message": "m"}, last.JSON(t))
	})
}

// The fake's asynchronous processing matches what the SDK's own
// RetrieveStatus expects (404 + X-Opsgenie-Errortype: RequestNotProcessed).
func TestOpsGenieServerWithSDK(t *testing.T) {
	s := NewOpsGenieServer(t)
	s.SetPendingPolls(1)
	lg := logrus.New()
	lg.SetOutput(io.Discard)
	cli, err := alert.NewClient(&client.Config{
		ApiKey: s.APIKey, OpsGenieAPIURL: client.ApiUrl(s.APIURL()), HttpClient: s.HTTPClient(),
		RetryCount: 1, Logger: lg, RequestTimeout: 5 * time.Second,
	})
	require.NoError(t, err)
	res, err := cli.Create(t.Context(), &alert.CreateAlertRequest{Message: "m", Alias: "sdk-1", Priority: alert.P4,
		Responders: []alert.Responder{{Type: alert.TeamResponder, Name: "platform"}}})
	require.NoError(t, err)
	st, err := res.RetrieveStatus(t.Context()) // one "not processed", then processed
	require.NoError(t, err)
	require.True(t, st.IsSuccess)
	require.Equal(t, "sdk-1", st.Alias)
	_, err = cli.Close(t.Context(), &alert.CloseAlertRequest{IdentifierType: alert.ALIAS, IdentifierValue: "sdk-1"})
	require.NoError(t, err)
	a, ok := s.Alert("sdk-1")
	require.True(t, ok)
	require.Equal(t, "closed", a.Status)
	require.Equal(t, []OpsGenieResponder{{Type: "team", Name: "platform"}}, a.Responders)
}

func TestFaults(t *testing.T) {
	s := NewOpsGenieServer(t)
	s.Down()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "https://"+s.APIURL()+"/v2/alerts/requests/x", nil)
	_, err := s.HTTPClient().Do(req)
	require.Error(t, err)
	s.Up()
	s.FailNext(Failure{Status: 429, RetryAfter: "9", Body: `{"message":"slow down"}`})
	code, h, body := ogDo(t, s, "GET", "/v2/alerts/requests/x", "")
	require.Equal(t, 429, code)
	require.Equal(t, "9", h.Get("Retry-After"))
	require.Equal(t, "slow down", body["message"])
	code, _, _ = ogDo(t, s, "GET", "/v2/alerts/requests/x", "")
	require.Equal(t, 404, code, "one failure per FailNext")

	// A delayed response does not hold up the server's shutdown.
	s.FailNext(Failure{Delay: time.Hour})
	go func() {
		r, _ := http.NewRequest("GET", "https://"+s.APIURL()+"/v2/alerts/requests/x", nil)
		if resp, err := s.HTTPClient().Do(r); err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool { return len(s.Requests()) == 4 }, 5*time.Second, 10*time.Millisecond)
	start := time.Now()
	s.Faults.Close()
	s.srv.Close()
	require.Less(t, time.Since(start), 2*time.Second)
}

// Flaky fails about the fraction of requests it is given, never more than
// maxInARow in a row, with the failures it reports; rate 0 ends it.
func TestFlaky(t *testing.T) {
	s := NewOpsGenieServer(t)
	s.Flaky(0.5, 2, 42)
	failed, inARow, longest := 0, 0, 0
	const n = 200
	for range n {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "https://"+s.APIURL()+"/v2/alerts/requests/x", nil)
		req.Header.Set("Authorization", "GenieKey "+s.APIKey)
		resp, err := s.HTTPClient().Do(req)
		ok := err == nil && resp.StatusCode == http.StatusNotFound // the handler's answer
		if err == nil {
			resp.Body.Close()
		}
		if ok {
			inARow = 0
			continue
		}
		failed++
		inARow++
		longest = max(longest, inARow)
	}
	require.InDelta(t, n*0.4, failed, n*0.15, "about half, less the forced successes after two failures")
	require.LessOrEqual(t, longest, 2)
	kinds := s.FlakyFailures()
	total := 0
	for _, k := range []string{"500", "503", "429", "drop"} {
		require.Positive(t, kinds[k], "kind %s used: %v", k, kinds)
		total += kinds[k]
	}
	require.Equal(t, failed, total)
	s.Flaky(0, 0, 0)
	code, _, _ := ogDo(t, s, "GET", "/v2/alerts/requests/x", "")
	require.Equal(t, 404, code)
}
