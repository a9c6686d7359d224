package opsgenie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// fastPolls keeps request-status polling short in tests.
var fastPolls = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}

func newTestNotifier(t *testing.T, srv *notifytest.OpsGenieServer, logger *slog.Logger) *Notifier {
	n := notifytest.MustNew(t, New, Config{Name: "opsgenie-oncall", APIKeyFile: srv.KeyFile, APIURL: srv.APIURL(), Timeout: 5 * time.Second}, srv.HTTPClient(), logger)
	n.polls = fastPolls
	return n
}

// req is the part of a recorded request the tests assert exactly.
type req struct {
	Method, Path, Query string
	Body                map[string]any
}

func requests(t *testing.T, srv *notifytest.OpsGenieServer) []req {
	t.Helper()
	var out []req
	for _, r := range srv.Requests() {
		out = append(out, req{r.Method, r.Path, r.Query, r.JSON(t)})
	}
	return out
}

// jsonOf round-trips v, so expectations compare like decoded bodies.
func jsonOf(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestLifecycle(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)

	open := notifytest.SampleMessage(notify.EventOpen)
	state, err := notifytest.NotifyStateless(t, n, open, nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"priority":"P2","alert_id":"alert-0002"}`, string(state))

	update := notifytest.SampleMessage(notify.EventUpdate)
	update.Incident.Severity = notify.SeverityCritical
	state, err = notifytest.NotifyStateless(t, n, update, state)
	require.NoError(t, err)
	require.JSONEq(t, `{"priority":"P1","alert_id":"alert-0002"}`, string(state))

	// Same severity again: a note only.
	state, err = notifytest.NotifyStateless(t, n, update, state)
	require.NoError(t, err)

	state, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventResolve), state)
	require.NoError(t, err)
	require.Nil(t, state)

	note := "Findings changed in prod/network (run run-0042), now 1 drifted, 1 pending, 0 forbidden.\nAdded:\n+ pending create aws_s3_bucket.logs"
	require.Equal(t, []req{
		{"POST", "/v2/alerts", "", jsonOf(t, map[string]any{
			"message": "Terraform drift in prod/network: 1 drifted, 1 pending",
			"alias":   notifytest.SampleKey,
			"description": "Workspace: prod/network\nClass: drift, severity: high\nSince: 2026-11-03T09:00:00Z\nRun: run-0042\n" +
				"Owner: network-team\nStatus page: https://driftwatch.example.com/workspaces/prod%2Fnetwork\n\n" +
				"Findings (1 drifted, 1 pending, 0 forbidden):\n- drift update aws_security_group.web: ingress, tags.Name\n- pending create aws_s3_bucket.logs",
			// The SDK's broken `json:"username, omitempty"` tag always sends username.
			"responders": []any{map[string]any{"type": "team", "name": "platform", "username": ""}},
			"tags":       []string{"driftwatch", "drift", "prod/network", "env:prod", "tier:core"},
			"details": map[string]string{
				"incident_key": notifytest.SampleKey, "workspace": "prod/network", "class": "drift", "severity": "high",
				"drift": "1", "pending": "1", "forbidden": "0", "run_id": "run-0042",
				"status_page": "https://driftwatch.example.com/workspaces/prod%2Fnetwork",
				"owner":       "network-team", "team": "platform", "since": "2026-11-03T09:00:00Z",
			},
			"entity": "prod/network", "source": "driftwatch", "priority": "P2",
		})},
		{"GET", "/v2/alerts/requests/req-0001", "", nil},
		// The SDK also sends its untagged IdentifierType/IdentifierValue fields.
		{"PUT", "/v2/alerts/" + notifytest.SampleKey + "/priority", "identifierType=alias", jsonOf(t, map[string]any{
			"IdentifierType": 1, "IdentifierValue": notifytest.SampleKey, "priority": "P1",
		})},
		{"POST", "/v2/alerts/" + notifytest.SampleKey + "/notes", "identifierType=alias", jsonOf(t, map[string]any{
			"IdentifierType": 1, "IdentifierValue": notifytest.SampleKey, "source": "driftwatch", "note": note,
		})},
		{"POST", "/v2/alerts/" + notifytest.SampleKey + "/notes", "identifierType=alias", jsonOf(t, map[string]any{
			"IdentifierType": 1, "IdentifierValue": notifytest.SampleKey, "source": "driftwatch", "note": note,
		})},
		{"POST", "/v2/alerts/" + notifytest.SampleKey + "/close", "identifierType=alias", jsonOf(t, map[string]any{
			"IdentifierType": 1, "IdentifierValue": notifytest.SampleKey, "source": "driftwatch",
			"note": "Resolved: prod/network matches its Terraform configuration again (run run-0042).",
		})},
	}, requests(t, srv))

	for _, r := range srv.Requests() {
		require.Equal(t, "GenieKey "+srv.APIKey, r.Header.Get("Authorization"))
	}
	alerts := srv.Alerts()
	require.Len(t, alerts, 1)
	a := alerts[0]
	require.Equal(t, "closed", a.Status)
	require.Equal(t, "P1", a.Priority)
	require.Equal(t, 1, a.Count)
	require.Equal(t, []string{note, note}, a.Notes)
	require.Equal(t, "Resolved: prod/network matches its Terraform configuration again (run run-0042).", a.CloseNote)

	// The incident re-opens under the same key: a new alert.
	notifytest.RequireReopens(t, n, srv, notifytest.SampleKey, func(a notifytest.OpsGenieAlert) string { return a.Status }, "open")
}

func TestResendOpenCreatesNoSecondAlert(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
	open := notifytest.SampleMessage(notify.EventOpen)

	_, err := notifytest.NotifyStateless(t, n, open, nil)
	require.NoError(t, err)
	// The outbox resends (a crash before MarkDelivered): no state, same message.
	state, err := notifytest.NotifyStateless(t, n, open, nil)
	require.NoError(t, err)
	// Renotify while open: de-duplicated too, with a note.
	state, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventRenotify), state)
	require.NoError(t, err)

	alerts := srv.Alerts()
	require.Len(t, alerts, 1)
	require.Equal(t, 3, alerts[0].Count)
	require.Equal(t, "open", alerts[0].Status)
	require.Equal(t, []string{"Still open since 2026-11-03T09:00:00Z (re-notification, run run-0042)."}, alerts[0].Notes)
	require.JSONEq(t, `{"priority":"P2","alert_id":"alert-0002"}`, string(state))

	// A renotify whose severity differs from the alert's updates the priority.
	re := notifytest.SampleMessage(notify.EventRenotify)
	re.Incident.Severity = notify.SeverityLow
	state, err = notifytest.NotifyStateless(t, n, re, state)
	require.NoError(t, err)
	require.JSONEq(t, `{"priority":"P4","alert_id":"alert-0002"}`, string(state))
	a, _ := srv.Alert(notifytest.SampleKey)
	require.Equal(t, "P4", a.Priority)
	require.Len(t, srv.Alerts(), 1)
}

func TestRetryAfter(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
	srv.FailNext(notifytest.Failure{Status: 429, RetryAfter: "30", Body: `{"message":"You are making too many requests!","took":0.001,"requestId":"r"}`})

	start := time.Now()
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.Less(t, time.Since(start), 2*time.Second, "the SDK must not wait out Retry-After itself")
	retry, after := notify.IsRetryable(err)
	require.True(t, retry)
	require.Equal(t, 30*time.Second, after)
	require.EqualError(t, err, `opsgenie opsgenie-oncall: create alert "`+notifytest.SampleKey+`": status 429: You are making too many requests!`)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 429, apiErr.StatusCode)
	require.Len(t, srv.Requests(), 1, "no SDK-internal retry")

	_, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	require.Len(t, srv.Alerts(), 1)
}

func TestNoInternalRetries(t *testing.T) {
	for _, status := range []int{500, 502, 503} {
		srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
		srv.FailNext(notifytest.Failure{Status: status})
		_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventResolve), nil)
		retry, _ := notify.IsRetryable(err)
		require.True(t, retry, "%d", status)
		require.Len(t, srv.Requests(), 1, "%d", status)
	}
}

func TestServerDownThenUp(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
	open := notifytest.SampleMessage(notify.EventOpen)

	srv.Down()
	_, err := notifytest.NotifyStateless(t, n, open, nil)
	require.Error(t, err)
	retry, after := notify.IsRetryable(err)
	require.True(t, retry)
	require.Zero(t, after)
	require.Empty(t, srv.Alerts())

	srv.Up()
	state, err := notifytest.NotifyStateless(t, n, open, nil)
	require.NoError(t, err)
	require.NotEmpty(t, state)
	require.Len(t, srv.Alerts(), 1)
}

func TestRequestStatus(t *testing.T) {
	t.Run("processed after two polls", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
		srv.SetPendingPolls(2)
		state, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		require.NoError(t, err)
		require.JSONEq(t, `{"priority":"P2","alert_id":"alert-0002"}`, string(state))
		require.Len(t, srv.Requests(), 4) // create + 3 polls
	})

	t.Run("not processed yet counts as delivered", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
		srv.SetPendingPolls(100)
		state, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		require.NoError(t, err)
		require.JSONEq(t, `{"priority":"P2"}`, string(state))
		require.Len(t, srv.Requests(), 1+len(fastPolls))
	})

	t.Run("failed poll counts as delivered", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
		srv.SetPendingPolls(1)
		// The create passes, the first poll is refused.
		srv.FailNext(notifytest.Failure{Status: 202, Body: `{"result":"Request will be processed","took":0.1,"requestId":"x"}`})
		srv.FailNext(notifytest.Failure{Status: 503})
		_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		require.NoError(t, err)
	})

	t.Run("processed failure is permanent", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
		srv.FailNextProcessing("Team [platform] does not exist")
		_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		require.EqualError(t, err, `opsgenie opsgenie-oncall: create alert "`+notifytest.SampleKey+`": request req-0001 failed: Team [platform] does not exist`)
		retry, _ := notify.IsRetryable(err)
		require.False(t, retry)
	})

	t.Run("context done while polling counts as delivered", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
		n.polls = []time.Duration{time.Minute}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := n.Notify(ctx, notifytest.SampleMessage(notify.EventOpen), nil, nil)
		require.NoError(t, err)
		require.Len(t, srv.Alerts(), 1)
	})
}

func TestAbandonedCallIsAbortedOnTheWire(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
	srv.FailNext(notifytest.Failure{Status: 500, Delay: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := n.Notify(ctx, notifytest.SampleMessage(notify.EventOpen), nil, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// Calls are serialised: the next one would wait for the hung one (up to
	// Timeout, 5 s here) unless the transport cancelled it.
	start := time.Now()
	_, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 2*time.Second)
}

func TestPermanentErrors(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)

	t.Run("alias unusable in a path", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Key = "drift/prod/network"
		_, err := notifytest.NotifyStateless(t, n, m, nil)
		require.EqualError(t, err, `opsgenie opsgenie-oncall: incident key "drift/prod/network" cannot be an alias (want [A-Za-z0-9._-], at most 512 characters)`)
		retry, _ := notify.IsRetryable(err)
		require.False(t, retry)
	})
	t.Run("unknown event", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Event = "snooze"
		_, err := notifytest.NotifyStateless(t, n, m, []byte(`{"priority":"P2"}`))
		require.EqualError(t, err, `opsgenie opsgenie-oncall: unknown event "snooze"`)
	})
	t.Run("refused before sending", func(t *testing.T) {
		err := n.classify(t.Context(), "create alert", notifytest.SampleKey, false, 0, errors.New("message can not be empty"))
		require.EqualError(t, err, `opsgenie opsgenie-oncall: create alert "`+notifytest.SampleKey+`": message can not be empty`)
		retry, _ := notify.IsRetryable(err)
		require.False(t, retry)
	})
	t.Run("422", func(t *testing.T) {
		srv.FailNext(notifytest.Failure{Status: 422, Body: `{"message":"Request body is not processable. Please check the errors.","errors":{"message":"Message can not be empty."},"took":0.0,"requestId":"r"}`})
		_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		require.EqualError(t, err, `opsgenie opsgenie-oncall: create alert "`+notifytest.SampleKey+`": status 422: Request body is not processable. Please check the errors.`)
		retry, _ := notify.IsRetryable(err)
		require.False(t, retry)
	})
	t.Run("unreadable state is ignored", func(t *testing.T) {
		state, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventUpdate), []byte("{"))
		require.NoError(t, err)
		require.JSONEq(t, `{"priority":"P2"}`, string(state))
	})
}

func TestCanaryAbsentEverywhere(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewOpsGenieServer, newTestNotifier)
	secrets := srv.Secrets()
	var errs []error
	var states [][]byte
	run := func(ev notify.Event, state []byte) []byte {
		st, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(ev), state)
		errs = append(errs, err)
		states = append(states, st)
		return st
	}

	st := run(notify.EventOpen, nil)
	echo := `{"message":"invalid key ` + srv.APIKey + `","errors":{"key":"GenieKey ` + srv.APIKey + `"},"took":0.0,"requestId":"r"}`
	srv.FailNext(notifytest.Failure{Status: 500, Body: echo})
	run(notify.EventUpdate, st)
	srv.FailNext(notifytest.Failure{Status: 401, Body: echo})
	run(notify.EventUpdate, st)
	srv.FailNext(notifytest.Failure{Status: 422, Body: echo})
	run(notify.EventOpen, nil)
	srv.FailNext(notifytest.Failure{Status: 200, Body: "not json " + srv.APIKey})
	run(notify.EventOpen, nil)
	srv.FailNextProcessing("bad key " + srv.APIKey)
	run(notify.EventOpen, nil)
	srv.Down()
	run(notify.EventResolve, st)
	srv.Up()
	st = run(notify.EventUpdate, st)
	run(notify.EventResolve, st)

	require.Equal(t, 6, notifytest.RequireNoSecretsInResults(t, secrets, errs, states))
	out := logs()
	require.Contains(t, out, "opsgenie sdk", "the SDK's lines go to slog")
	require.Contains(t, out, "[REDACTED]", "the SDK logged the echoed key, redacted")
	notifytest.RequireNoSecretsIn(t, out, secrets)

	// On the wire the key is in the Authorization header only.
	for _, r := range srv.Requests() {
		notifytest.RequireNoSecretsIn(t, r.Path+"?"+r.Query+string(r.Body), secrets)
		notifytest.RequireNoSecretsInHeader(t, r.Header, secrets, "Authorization")
	}
}

func TestNew(t *testing.T) {
	files := notifytest.NewFiles(t)
	key := notifytest.Canary("og-key")
	logger := slog.New(slog.DiscardHandler)
	good := notifytest.OpenChecks{Vendor: "opsgenie", Name: "og", Key: "api_key_file", New: notifytest.NewOf(New, func(file string) Config { return Config{Name: "og", APIKeyFile: file} })}.Require(t, files, key)

	_, err := New(Config{Name: "og", APIKeyFile: files.Write("two", key+"\n"+key+"\n")}, nil, logger)
	require.EqualError(t, err, `opsgenie "og": api_key_file "`+files.Path("two")+`": the key must be one line without spaces`)
	notifytest.RequireNoSecrets(t, err, []string{key})

	n, err := New(Config{Name: "og", APIKeyFile: good, Region: "eu"}, nil, logger)
	require.NoError(t, err)
	require.Equal(t, "og", n.Name())
	require.Equal(t, key, n.key)
}

func TestConcurrentNotify(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			m := notifytest.SampleMessage(notify.EventOpen)
			m.Incident.Key = fmt.Sprintf("drift-ws-%d", i)
			_, errs[i] = n.Notify(t.Context(), m, nil, nil)
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, srv.Alerts(), len(errs))
}

// A loopback api_url is allowed, and the SDK speaks plain http to it.
func TestLoopbackPlainHTTP(t *testing.T) {
	var got []string
	var mu sync.Mutex
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"result":"Request will be processed","took":0.1,"requestId":"r1"}`))
	}))
	t.Cleanup(plain.Close)
	keyFile := notifytest.NewFiles(t).Write("key", "k")
	n, err := New(Config{Name: "og", APIKeyFile: keyFile, APIURL: strings.TrimPrefix(plain.URL, "http://")}, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, err = n.Notify(t.Context(), notifytest.SampleMessage(notify.EventResolve), nil, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"POST /v2/alerts/" + notifytest.SampleKey + "/close?identifierType=alias"}, got)
}

func TestConformance(t *testing.T) {
	notifytest.ConformanceOf(t, notifytest.NewOpsGenieServer, newTestNotifier)
}
