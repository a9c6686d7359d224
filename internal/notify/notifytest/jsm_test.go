package notifytest

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/jsm"
	"github.com/driftwatch/driftwatch/internal/notify/opsgenie"
)

// jsmDo posts body to the fake's path (under the integration API's
// prefix) with auth as the Authorization header.
func jsmDo(t *testing.T, s *JSMServer, method, path, auth, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.APIURL()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	return resp.StatusCode, m
}

func TestJSMServerProtocol(t *testing.T) {
	s := NewJSMServer(t)
	auth := "GenieKey " + s.APIKey
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		return jsmDo(t, s, "POST", path, auth, body)
	}
	accepted := func(t *testing.T, code int, body map[string]any) {
		t.Helper()
		require.Equal(t, 202, code, "%v", body)
		require.Equal(t, "Request will be processed", body["result"])
		require.NotEmpty(t, body["requestId"])
		require.Contains(t, body, "took")
	}

	t.Run("create, de-duplicate, note, close, create again", func(t *testing.T) {
		code, body := post("/v2/alerts", `{"message":"first","alias":"a1","priority":"P2","responders":[{"type":"team","name":"platform"}],"tags":["x"],"details":{"k":"v"},"entity":"e","source":"s","description":"d"}`)
		accepted(t, code, body)
		code, body = post("/v2/alerts", `{"message":"second","alias":"a1","priority":"P1"}`)
		accepted(t, code, body)
		as := s.Alerts()
		require.Len(t, as, 1, "a create on an open alert's alias opens no second alert")
		require.Equal(t, "first", as[0].Message)
		require.Equal(t, "P2", as[0].Priority, "de-duplication keeps the priority")
		require.Equal(t, 2, as[0].Count)

		code, body = post("/v2/alerts/a1/notes?identifierType=alias", `{"note":"n1","source":"s","user":"u"}`)
		accepted(t, code, body)
		code, body = post("/v2/alerts/a1/acknowledge?identifierType=alias", `{"source":"s"}`)
		accepted(t, code, body)
		code, body = post("/v2/alerts/a1/close?identifierType=alias", `{"note":"done","source":"s"}`)
		accepted(t, code, body)
		a, ok := s.Alert("a1")
		require.True(t, ok)
		require.Equal(t, "closed", a.Status)
		require.Equal(t, []string{"n1"}, a.Notes)
		require.Equal(t, "done", a.CloseNote)

		code, body = post("/v2/alerts", `{"message":"third","alias":"a1"}`)
		accepted(t, code, body)
		require.Len(t, s.Alerts(), 2, "a closed alert's alias opens a new alert")
		a, _ = s.Alert("a1")
		require.Equal(t, "P3", a.Priority, "the default priority")
	})

	t.Run("actions on unknown aliases are accepted and fail when processed", func(t *testing.T) {
		code, body := post("/v2/alerts/nope/close?identifierType=alias", `{"note":"x"}`)
		accepted(t, code, body)
		st := s.Statuses()[len(s.Statuses())-1]
		require.Equal(t, JSMStatus{RequestID: body["requestId"].(string), Action: "Close", Alias: "nope", Status: "Alert does not exist"}, st)
	})

	t.Run("authentication", func(t *testing.T) {
		for _, a := range []string{"", "GenieKey wrong", "Bearer " + s.APIKey, s.APIKey} {
			code, body := jsmDo(t, s, "POST", "/v2/alerts", a, `{"message":"m"}`)
			require.Equal(t, 401, code, a)
			require.NotEmpty(t, body["message"])
		}
	})

	t.Run("refused bodies", func(t *testing.T) {
		for _, tc := range []struct{ path, body, field string }{
			{"/v2/alerts", `{"alias":"x"}`, "message"},
			{"/v2/alerts", `{"message":"m","note":"not a create field"}`, "body"},
			{"/v2/alerts", `{"message":"` + strings.Repeat("m", 131) + `"}`, "message"},
			{"/v2/alerts", `{"message":"m","priority":"P0"}`, "priority"},
			{"/v2/alerts", `{"message":"m","responders":[{"type":"team"}]}`, "responders[0]"},
			{"/v2/alerts", `{"message":"m","tags":["` + strings.Repeat("t", 51) + `"]}`, "tags"},
			{"/v2/alerts/a1/notes?identifierType=alias", `{"note":""}`, "note"},
			{"/v2/alerts/a1/notes?identifierType=alias", `{"note":"n","priority":"P1"}`, "body"},
			{"/v2/alerts/a1/notes", `{"note":"n"}`, "identifierType"},
			{"/v2/alerts/a1/close?identifierType=id", `{}`, "identifierType"},
		} {
			code, body := post(tc.path, tc.body)
			require.Equal(t, 422, code, tc.body)
			require.Equal(t, "Request body is not processable. Please check the errors.", body["message"])
			require.Contains(t, body["errors"], tc.field, tc.body)
		}
	})

	t.Run("unknown paths", func(t *testing.T) {
		code, _ := post("/v2/alerts/a1/priority?identifierType=alias", `{"priority":"P1"}`)
		require.Equal(t, 404, code, "the integration API has no priority action")
		code, _ = jsmDo(t, s, "GET", "/v2/alerts", auth, "")
		require.Equal(t, 404, code)
		code, _ = jsmDo(t, s, "POST", "/../v2/alerts", auth, `{"message":"m"}`)
		require.Equal(t, 404, code)
	})

	t.Run("every request is recorded", func(t *testing.T) {
		rs := s.Requests()
		require.Equal(t, "/jsm/ops/integration/v2/alerts", rs[0].Path)
		require.Equal(t, "GenieKey "+s.APIKey, rs[0].Header.Get("Authorization"))
		require.Equal(t, "first", rs[0].JSON(t)["message"])
	})
}

// The migration claim: a team moves from OpsGenie to JSM by changing
// the notifier's block. The same incident sequence through the opsgenie
// notifier (to OpsGenieServer) and the jsm notifier (to JSMServer)
// sends the same alert bodies, apart from the endpoint and these
// differences, each asserted here:
//   - OpsGenie's priority updates (PUT .../priority) and request-status
//     polls: JSM's integration API has neither;
//   - the renotify's note: in OpsGenie's create body, a note request
//     after JSM's create (whose documented body has no note);
//   - the failed remediation's line about the raised priority;
//   - what the OpsGenie SDK adds to bodies (empty responder usernames,
//     untagged IdentifierType/IdentifierValue fields).
func TestOpsGenieToJSMMigration(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	ogSrv := NewOpsGenieServer(t)
	og, err := opsgenie.New(opsgenie.Config{Name: "pager", APIKeyFile: ogSrv.KeyFile, APIURL: ogSrv.APIURL()}, ogSrv.HTTPClient(), logger)
	require.NoError(t, err)
	jsmSrv := NewJSMServer(t)
	js, err := jsm.New(jsm.Config{Name: "pager", APIKeyFile: jsmSrv.KeyFile, APIURL: jsmSrv.APIURL()}, jsmSrv.HTTPClient(), logger)
	require.NoError(t, err)

	applied := SampleMessage(notify.EventRemediation)
	applied.Incident.Severity, applied.Incident.Escalated = notify.SeverityHigh, 0
	applied.Remediation.Result, applied.Remediation.Reason = notify.RemediationApplied, ""
	errored := SampleMessage(notify.EventOpen)
	errored.Incident.Key, errored.Incident.Class, errored.Incident.Error = "errored-prod-network-77aa01", notify.ClassErrored, "terraform init: provider registry unreachable"
	errored.Incident.Findings, errored.Incident.Team = nil, ""
	erroredResolve := errored
	erroredResolve.Event = notify.EventResolve
	sequence := []notify.Message{
		SampleMessage(notify.EventOpen), SampleMessage(notify.EventUpdate), applied,
		SampleMessage(notify.EventRemediation), SampleMessage(notify.EventRenotify),
		errored, SampleMessage(notify.EventResolve), erroredResolve,
	}
	var ogState, jsmState []byte
	for _, m := range sequence {
		ogState, err = og.Notify(t.Context(), m, ogState, func([]byte) error { return nil })
		require.NoError(t, err, "opsgenie %s", m.Event)
		jsmState, err = js.Notify(t.Context(), m, jsmState, func([]byte) error { return nil })
		require.NoError(t, err, "jsm %s", m.Event)
	}

	type wire struct {
		Path, Query string
		Body        map[string]any
	}
	var fromOG []wire
	for _, r := range ogSrv.Requests() {
		if r.Method == http.MethodGet || strings.HasSuffix(r.Path, "/priority") {
			continue // request status, priority: OpsGenie only
		}
		require.Equal(t, http.MethodPost, r.Method)
		body := r.JSON(t)
		delete(body, "IdentifierType")
		delete(body, "IdentifierValue")
		if rs, ok := body["responders"].([]any); ok {
			for _, x := range rs {
				if x.(map[string]any)["username"] == "" {
					delete(x.(map[string]any), "username")
				}
			}
		}
		note, renotify := body["note"]
		if r.Path == "/v2/alerts" && renotify {
			delete(body, "note")
			fromOG = append(fromOG, wire{r.Path, r.Query, body},
				wire{"/v2/alerts/" + body["alias"].(string) + "/notes", OpsGenieAliasQuery, map[string]any{"source": "driftwatch", "note": note}})
			continue
		}
		fromOG = append(fromOG, wire{r.Path, r.Query, body})
	}
	var fromJSM []wire
	for _, r := range jsmSrv.Requests() {
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "GenieKey "+jsmSrv.APIKey, r.Header.Get("Authorization"))
		fromJSM = append(fromJSM, wire{strings.TrimPrefix(r.Path, JSMPathPrefix), r.Query, r.JSON(t)})
	}

	// The failed remediation's note: the one line that differs.
	const failedNote = "Remediation failed (remediation rem-0007, run run-0043).\n" +
		"Reason: apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)\n%s\n" +
		"Run: https://driftwatch.example.com/runs/run-0043"
	i := 3 // create, update note, applied note, failed note
	require.Equal(t, strings.Replace(failedNote, "%s", "Priority raised to P1 (severity critical).", 1), fromOG[i].Body["note"])
	require.Equal(t, strings.Replace(failedNote, "%s", "Severity raised to critical (P1); the open alert keeps its priority.", 1), fromJSM[i].Body["note"])
	fromJSM[i].Body["note"] = fromOG[i].Body["note"]

	require.Len(t, fromJSM, 9, "create, 3 notes, create + note, create, 2 closes")
	require.Equal(t, fromOG, fromJSM)

	// And the alerts each service ends up with.
	ogAlerts, jsmAlerts := ogSrv.Alerts(), jsmSrv.Alerts()
	require.Len(t, jsmAlerts, 2)
	require.Len(t, ogAlerts, len(jsmAlerts))
	for k, o := range ogAlerts {
		j := jsmAlerts[k]
		require.Equal(t, []any{o.Alias, o.Message, o.Description, o.Tags, o.Details, o.Entity, o.Source, o.Status, o.Count, o.CloseNote},
			[]any{j.Alias, j.Message, j.Description, j.Tags, j.Details, j.Entity, j.Source, j.Status, j.Count, j.CloseNote})
		require.Len(t, j.Notes, len(o.Notes))
		require.Len(t, j.Responders, len(o.Responders))
		for r := range o.Responders {
			require.Equal(t, []string{o.Responders[r].Type, o.Responders[r].Name}, []string{j.Responders[r].Type, j.Responders[r].Name})
		}
	}
	require.Equal(t, "P2", ogAlerts[0].Priority, "raised to P1 by the failed remediation, back to P2 by the renotify")
	require.Equal(t, "P2", jsmAlerts[0].Priority)
}
