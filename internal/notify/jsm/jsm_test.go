package jsm

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func newTestNotifier(t *testing.T, srv *notifytest.JSMServer, logger *slog.Logger) *Notifier {
	return notifytest.MustNew(t, New, Config{Name: "jsm-oncall", APIKeyFile: srv.KeyFile, APIURL: srv.APIURL(), Timeout: 5 * time.Second}, srv.HTTPClient(), logger)
}

// req is the part of a recorded request the tests assert exactly.
type req struct {
	Method, Path, Query, Body string
}

func requests(srv *notifytest.JSMServer) []req {
	var out []req
	for _, r := range srv.Requests() {
		out = append(out, req{r.Method, r.Path, r.Query, string(r.Body)})
	}
	return out
}

// built is what the builder makes of m, as the server should receive it.
func built(t *testing.T, m notify.Message) []req {
	t.Helper()
	rs, err := buildRequests(m)
	require.NoError(t, err)
	var out []req
	for _, r := range rs {
		out = append(out, req{"POST", notifytest.JSMPathPrefix + "/v2/alerts" + r.Path, r.Query, string(r.Body)})
	}
	return out
}

func TestConformance(t *testing.T) {
	notifytest.ConformanceOf(t, notifytest.NewJSMServer, newTestNotifier)
}

// One incident is one JSM alert: open creates it, update and remediation
// add notes, renotify re-creates (de-duplicated) and notes, resolve
// closes it; every request carries the key in the GenieKey header and
// the builder's exact body.
func TestLifecycle(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewJSMServer, newTestNotifier)
	var want []req
	for _, m := range notifytest.NotifyLifecycle(t, n, true) {
		want = append(want, built(t, m)...)
	}
	require.Equal(t, want, requests(srv))
	require.Equal(t, []req{
		{"POST", "/jsm/ops/integration/v2/alerts", "", built(t, notifytest.SampleMessage(notify.EventOpen))[0].Body},
		{"POST", "/jsm/ops/integration/v2/alerts/" + notifytest.SampleKey + "/notes", "identifierType=alias", `{"source":"driftwatch","note":"Findings changed in prod/network (run run-0042), now 1 drifted, 1 pending, 0 forbidden.\nAdded:\n+ pending create aws_s3_bucket.logs"}`},
	}, requests(srv)[:2], "the paths and bodies on the wire")
	for _, r := range srv.Requests() {
		require.Equal(t, "GenieKey "+srv.APIKey, r.Header.Get("Authorization"))
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	}

	alerts := srv.Alerts()
	require.Len(t, alerts, 1)
	a := alerts[0]
	require.Equal(t, notifytest.SampleKey, a.Alias)
	require.Equal(t, "closed", a.Status)
	require.Equal(t, 2, a.Count, "the renotify was de-duplicated")
	require.Equal(t, "P2", a.Priority)
	require.Equal(t, []notifytest.JSMResponder{{Type: "team", Name: "platform"}}, a.Responders)
	require.Len(t, a.Notes, 3) // update, remediation, renotify
	require.Equal(t, "Still open since 2026-11-03T09:00:00Z (re-notification, run run-0042).", a.Notes[2])
	require.Equal(t, "Resolved: prod/network matches its Terraform configuration again (run run-0042).", a.CloseNote)
	for _, st := range srv.Statuses() {
		require.True(t, st.Success, "%+v", st)
	}

	// The incident re-opens under the same key: a new alert.
	notifytest.RequireReopens(t, n, srv, notifytest.SampleKey, func(a notifytest.JSMAlert) string { return a.Status }, "open")
}

// A crash between JSM accepting a request and the outbox recording it:
// the outbox sends the message again with the state it had before (the
// first call's result is lost). The create lands on the same alert, the
// close of a closed alert is harmless; a note is added twice (doc.go).
func TestCrashReplay(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewJSMServer, newTestNotifier)
	var prev []byte
	for _, ev := range []notify.Event{notify.EventOpen, notify.EventUpdate, notify.EventResolve} {
		m := notifytest.SampleMessage(ev)
		_, err := notifytest.NotifyStateless(t, n, m, prev) // accepted; its result is lost
		require.NoError(t, err)
		st, err := notifytest.NotifyStateless(t, n, m, prev) // the replay
		require.NoError(t, err)
		prev = st
	}
	alerts := srv.Alerts()
	require.Len(t, alerts, 1, "no duplicate alert")
	require.Equal(t, 2, alerts[0].Count)
	require.Equal(t, "closed", alerts[0].Status)
	require.Len(t, alerts[0].Notes, 2, "a replayed note appears twice")
	sts := srv.Statuses()
	require.Equal(t, "Alert is de-duplicated", sts[1].Status)
	last := sts[len(sts)-1]
	require.Equal(t, notifytest.JSMStatus{RequestID: last.RequestID, Action: "Close", Alias: notifytest.SampleKey, Status: "Alert does not exist"}, last)
}

// A renotify whose note fails is resent whole: the create again
// (de-duplicated), then the note, which is added once. (The first
// create is answered by an injected 202, so the server does not process
// it: the alert's count is the open's create and the resent one.)
func TestRenotifyRetriedWhole(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewJSMServer, newTestNotifier)
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	srv.FailNext(notifytest.Failure{Status: 202, Body: `{"result":"Request will be processed","took":0.1,"requestId":"r"}`}) // the create
	srv.FailNext(notifytest.Failure{Status: 503})                                                                            // the note
	renotify := notifytest.SampleMessage(notify.EventRenotify)
	_, err = notifytest.NotifyStateless(t, n, renotify, nil)
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry, "%v", err)
	require.EqualError(t, err, `jsm jsm-oncall: add note to alert "`+notifytest.SampleKey+`": status 503: Service Unavailable`)
	_, err = notifytest.NotifyStateless(t, n, renotify, nil)
	require.NoError(t, err)
	a, _ := srv.Alert(notifytest.SampleKey)
	require.Equal(t, 2, a.Count)
	require.Len(t, a.Notes, 1)
	var paths []string
	for _, r := range srv.Requests() {
		paths = append(paths, r.Path)
	}
	create, note := "/jsm/ops/integration/v2/alerts", "/jsm/ops/integration/v2/alerts/"+notifytest.SampleKey+"/notes"
	require.Equal(t, []string{create, create, note, create, note}, paths)
}

// 400, 401, 403, 404 and 422 are permanent, with the service's message
// (and a 422's field errors) on the error, which is what the notifier's
// status shows.
func TestPermanentErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{400, `{"message":"Could not parse request body","took":0.001,"requestId":"r"}`, "status 400: Could not parse request body"},
		{401, `{"message":"Key format is not valid","took":0.001,"requestId":"r"}`, "status 401: Key format is not valid"},
		{403, `{"message":"You are not authorized to perform this action","took":0.001,"requestId":"r"}`, "status 403: You are not authorized to perform this action"},
		{404, `{"message":"No handler found","took":0.001,"requestId":"r"}`, "status 404: No handler found"},
		{422, `{"message":"Request body is not processable. Please check the errors.","errors":{"message":"Message can not be empty.","alias":"too long"},"took":0.0,"requestId":"r"}`,
			"status 422: Request body is not processable. Please check the errors. (alias: too long; message: Message can not be empty.)"},
		{422, `not json`, "status 422"},
	} {
		srv, n := notifytest.Start(t, notifytest.NewJSMServer, newTestNotifier)
		srv.FailNext(notifytest.Failure{Status: tc.status, Body: tc.body})
		_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		notifytest.RequireAPIError(t, err, `jsm jsm-oncall: create alert "`+notifytest.SampleKey+`": `+tc.want, tc.status, false)
		require.Len(t, srv.Requests(), 1, "one attempt per Notify: the outbox retries")
	}

	// The fake's own validation, end to end: a key it does not know.
	srv := notifytest.NewJSMServer(t)
	other := notifytest.NewFiles(t).Write("other-key", "not-the-key")
	n, err := New(Config{Name: "jsm-oncall", APIKeyFile: other, APIURL: srv.APIURL()}, srv.HTTPClient(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventResolve), nil)
	require.EqualError(t, err, `jsm jsm-oncall: close alert "`+notifytest.SampleKey+`": status 401: Key format is not valid or the key does not belong to an API integration`)
	notifytest.RequireNoSecrets(t, err, []string{"not-the-key"})

	t.Run("refused before sending", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewJSMServer, newTestNotifier)
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Key = "drift/prod/network"
		_, err := notifytest.NotifyStateless(t, n, m, []byte("{}"))
		require.EqualError(t, err, `jsm jsm-oncall: incident key "drift/prod/network" cannot be an alias (want [A-Za-z0-9._-], at most 512 characters)`)
		m = notifytest.SampleMessage(notify.EventOpen)
		m.Event = "snooze"
		_, err = notifytest.NotifyStateless(t, n, m, nil)
		require.EqualError(t, err, `jsm jsm-oncall: unknown event "snooze"`)
		retry, _ := notify.IsRetryable(err)
		require.False(t, retry)
		require.Empty(t, srv.Requests())
	})
}

func TestRetryable(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewJSMServer, newTestNotifier)
	n.sender.Now = notifytest.Clock
	cases := append(notifytest.RetryAfter429(),
		notifytest.RetryCase{Failure: notifytest.Failure{Status: 500}},
		notifytest.RetryCase{Failure: notifytest.Failure{Status: 502}},
		notifytest.RetryCase{Failure: notifytest.Failure{Status: 503, RetryAfter: "5"}, Want: 5 * time.Second},
		notifytest.RetryCase{Failure: notifytest.Failure{Status: 408}})
	notifytest.RequireRetryAfter(t, srv, n, `{"message":"You are making too many requests!","took":0.001,"requestId":"r"}`, cases,
		func(err error) { require.ErrorContains(t, err, "You are making too many requests!") },
		func() int { return len(srv.Alerts()) })
}

func TestTimeoutAndDrop(t *testing.T) {
	srv := notifytest.NewJSMServer(t)
	n := notifytest.MustNew(t, New, Config{Name: "jsm", APIKeyFile: srv.KeyFile, APIURL: srv.APIURL(), Timeout: 100 * time.Millisecond}, srv.HTTPClient(), nil)
	notifytest.RequireTimeout(t, srv, n, `jsm jsm: create alert "`+notifytest.SampleKey+`": timeout after 100ms`)

	srv.FailNext(notifytest.Failure{Status: -1}) // the connection drops
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.ErrorContains(t, err, `jsm jsm: create alert "`+notifytest.SampleKey+`": `)
	retry, after := notify.IsRetryable(err)
	require.True(t, retry)
	require.Zero(t, after)
	require.Empty(t, srv.Alerts())
}

// Redirects are not followed: the key would go along.
func TestRedirectNotFollowed(t *testing.T) {
	keyFile := notifytest.SecretFile(t, "key", "k")
	notifytest.RequireNoRedirect(t, http.StatusTemporaryRedirect, func(redirect string) (notify.Notifier, error) {
		return New(Config{Name: "jsm", APIKeyFile: keyFile, APIURL: redirect}, nil, slog.New(slog.DiscardHandler))
	}, `jsm jsm: create alert "`+notifytest.SampleKey+`": status 307: redirects are not followed`)
}

// The API key is in the Authorization header and nowhere else: not in a
// path, query, body, other header, error, state or log line, whatever the
// server echoes.
func TestCanaryAbsentEverywhere(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewJSMServer, newTestNotifier)
	secrets := srv.Secrets()
	echo := `{"message":"invalid key ` + srv.APIKey + `","errors":{"GenieKey ` + srv.APIKey + `":"bad ` + srv.APIKey + `"},"took":0.0,"requestId":"` + srv.APIKey + `"}`
	errs, states := notifytest.DeliverEchoing(srv, echo, 202, []int{400, 401, 403, 422, 429, 500}, func(ev notify.Event) ([]byte, error) {
		return notifytest.NotifyStateless(t, n, notifytest.SampleMessage(ev), nil)
	})

	require.Equal(t, 7, notifytest.RequireNoSecretsInResults(t, secrets, errs, states))
	for _, err := range errs {
		if err != nil {
			require.NotContains(t, err.Error(), "canary", "redacted: %v", err)
		}
	}
	out := logs()
	require.Contains(t, out, "[REDACTED]", "the echoed request id was logged, redacted")
	notifytest.RequireNoSecretsIn(t, out, secrets)
	for _, r := range srv.Requests() {
		require.Equal(t, "GenieKey "+srv.APIKey, r.Header.Get("Authorization"))
		notifytest.RequireNoSecretsInHeader(t, r.Header, secrets, "Authorization")
		notifytest.RequireNoSecretsIn(t, r.Path+"?"+r.Query+string(r.Body), secrets)
	}
}

func TestNew(t *testing.T) {
	files := notifytest.NewFiles(t)
	key := notifytest.Canary("jsm-key")
	logger := slog.New(slog.DiscardHandler)
	good := notifytest.OpenChecks{Vendor: "jsm", Name: "jsm", Key: "api_key_file", New: notifytest.NewOf(New, func(file string) Config { return Config{Name: "jsm", APIKeyFile: file} })}.Require(t, files, key)

	for name, content := range map[string]string{"two": key + "\n" + key, "spaced": key[:10] + " " + key[11:]} {
		_, err := New(Config{Name: "jsm", APIKeyFile: files.Write(name, content)}, nil, logger)
		require.EqualError(t, err, `jsm "jsm": api_key_file "`+files.Path(name)+`": the key must be one line of printable ASCII without spaces`)
		notifytest.RequireNoSecrets(t, err, []string{key, key[:10], key[11:]})
	}

	for _, tc := range []struct{ url, want string }{
		{"", "https://api.atlassian.com/jsm/ops/integration/v2/alerts"},
		{"https://jsm-proxy.corp.example/jsm/", "https://jsm-proxy.corp.example/jsm/v2/alerts"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/v2/alerts"},
	} {
		n, err := New(Config{Name: "jsm", APIKeyFile: good, APIURL: tc.url}, nil, logger)
		require.NoError(t, err)
		require.Equal(t, "jsm", n.Name())
		require.Equal(t, key, n.key)
		require.Equal(t, tc.want, n.alerts.String())
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "name: required\napi_key_file: required"},
		{Config{Name: "j", APIKeyFile: "k", APIURL: "http://api.atlassian.com/jsm/ops/integration"},
			`api_url: must be https: the API key travels in a header (http only to a loopback address)`},
		{Config{Name: "j", APIKeyFile: "k", APIURL: "https://u:p@api.atlassian.com"}, "api_url: credentials in the URL are not allowed"},
		{Config{Name: "j", APIKeyFile: "k", APIURL: "https://api.atlassian.com/x?y=1"}, `api_url: only scheme, host, port and a path prefix are allowed`},
		{Config{Name: "j", APIKeyFile: "k", APIURL: "api.atlassian.com"}, `api_url: not an http(s) URL`},
		{Config{Name: "j", APIKeyFile: "k", Timeout: -time.Second}, "timeout: -1s: must not be negative"},
	} {
		require.EqualError(t, tc.cfg.Validate(), tc.want)
	}
	require.NoError(t, Config{Name: "j", APIKeyFile: "k", APIURL: "http://localhost:9/jsm"}.Validate())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An answer the transport hands over as the context ends is not trusted:
// the delivery is retried (a resend is safe), so Notify reports the
// context's error as a done context must.
func TestAnswerRacingTheDeadline(t *testing.T) {
	keyFile := notifytest.NewFiles(t).Write("key", "k")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		cancel()
		return &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{}, Request: r,
			Body: io.NopCloser(strings.NewReader(`{"result":"Request will be processed","took":0.1,"requestId":"r"}`))}, nil
	})}
	n, err := New(Config{Name: "jsm", APIKeyFile: keyFile}, hc, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, err = n.Notify(ctx, notifytest.SampleMessage(notify.EventOpen), nil, nil)
	require.ErrorIs(t, err, context.Canceled)
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)

	// The same answer in time is a delivery.
	hc.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{}, Request: r,
			Body: io.NopCloser(strings.NewReader(`{"result":"Request will be processed","took":0.1,"requestId":"r"}`))}, nil
	})
	n, err = New(Config{Name: "jsm", APIKeyFile: keyFile}, hc, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, err = n.Notify(t.Context(), notifytest.SampleMessage(notify.EventOpen), nil, nil)
	require.NoError(t, err)
}
