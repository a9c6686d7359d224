package pagerduty

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func newTestNotifier(t *testing.T, srv *notifytest.PagerDutyServer, logger *slog.Logger) *Notifier {
	return notifytest.MustNew(t, New, Config{Name: "pd-oncall", RoutingKeyFile: srv.KeyFile, URL: srv.URL(), Timeout: 5 * time.Second}, srv.HTTPClient(), logger)
}

func TestConformance(t *testing.T) {
	notifytest.ConformanceOf(t, notifytest.NewPagerDutyServer, newTestNotifier)
}

// One incident is one PagerDuty alert: open, update, remediation and
// renotify trigger on the same dedup_key (de-duplicated into the open
// alert), resolve resolves it; the bodies on the wire are the builder's.
func TestLifecycle(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewPagerDutyServer, newTestNotifier)
	sent := notifytest.NotifyLifecycle(t, n, true)

	o := options{routingKey: srv.RoutingKey, severities: DefaultSeverityMap()}
	reqs := srv.Requests()
	notifytest.RequirePosts(t, reqs, len(sent), "/v2/enqueue", "application/json")
	for i, r := range reqs {
		require.JSONEq(t, body(t, sent[i], o), string(r.Body), "event %s", sent[i].Event)
	}
	alerts := srv.Alerts()
	require.Len(t, alerts, 1)
	a := alerts[0]
	require.Equal(t, notifytest.SampleKey, a.DedupKey)
	require.Equal(t, "resolved", a.Status)
	require.Equal(t, 4, a.Triggers())
	require.Equal(t, "Terraform drift in prod/network: 1 drifted, 1 pending", a.Summary)
	require.Equal(t, "critical", a.Log[2].Payload.Severity, "the failed remediation's raised severity")

	// The incident re-opens under the same key: a new alert.
	notifytest.RequireReopens(t, n, srv, notifytest.SampleKey, func(a notifytest.PagerDutyAlert) string { return a.Status }, "triggered")
}

// The outbox resends a message whose delivery was not recorded (a crash,
// kill -9, between the send and the record): the same dedup_key lands on
// the same alert, and a resent resolve is harmless.
func TestResendIsDeduplicated(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewPagerDutyServer, newTestNotifier)
	open := notifytest.SampleMessage(notify.EventOpen)
	for range 2 {
		_, err := notifytest.NotifyStateless(t, n, open, nil)
		require.NoError(t, err)
	}
	require.Len(t, srv.Alerts(), 1)
	require.Equal(t, 2, srv.Alerts()[0].Triggers())
	for range 2 {
		_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventResolve), nil)
		require.NoError(t, err)
	}
	as := srv.Alerts()
	require.Len(t, as, 1)
	require.Equal(t, "resolved", as[0].Status)
}

// 400 is permanent and its message and reasons are on the error (what the
// notifier's status shows), without the routing key.
func TestInvalidEventIsPermanent(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewPagerDutyServer, newTestNotifier)
	srv.FailNext(notifytest.Failure{Status: 400, Body: `{"status":"invalid event","message":"Event object is invalid","errors":["'payload.summary' is missing or blank","bad key ` + srv.RoutingKey + `"]}`})
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	notifytest.RequireAPIError(t, err, `pagerduty pd-oncall: trigger `+notifytest.SampleKey+`: status 400 (invalid event): Event object is invalid: 'payload.summary' is missing or blank; bad key [REDACTED]`, 400, false)
	notifytest.RequireNoSecrets(t, err, srv.Secrets())

	// The fake's own validation, end to end: a summary over 1024
	// characters never leaves the builder, a refused key is a 400.
	bad := notifytest.NewFiles(t).Write("other-key", strings.Repeat("k", 32))
	other, err := New(Config{Name: "pd-oncall", RoutingKeyFile: bad, URL: srv.URL()}, srv.HTTPClient(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, err = notifytest.NotifyStateless(t, other, notifytest.SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, `pagerduty pd-oncall: trigger `+notifytest.SampleKey+`: status 400 (invalid event): Event object is invalid: 'routing_key' is not the key of an integration`)
	notifytest.RequireNoSecrets(t, err, []string{strings.Repeat("k", 32)})
}

func TestRateLimited(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewPagerDutyServer, newTestNotifier)
	n.sender.Now = notifytest.Clock
	notifytest.RequireRetryAfter(t, srv, n, `{"status":"throttle event","message":"Requests for this service are arriving too quickly. Please retry later."}`, notifytest.RetryAfter429(),
		func(err error) {
			require.EqualError(t, err, `pagerduty pd-oncall: trigger `+notifytest.SampleKey+`: status 429 (throttle event): Requests for this service are arriving too quickly. Please retry later.`)
		},
		func() int { return len(srv.Alerts()) })
}

func TestStatusClasses(t *testing.T) {
	notifytest.RequireStatusClasses(t, notifytest.NewPagerDutyServer, "", []int{500, 502, 503, 408}, []int{401, 403, 404, 413},
		func(t *testing.T, srv *notifytest.PagerDutyServer) error {
			_, err := notifytest.NotifyStateless(t, newTestNotifier(t, srv, nil), notifytest.SampleMessage(notify.EventResolve), nil)
			return err
		})
}

// Redirects are not followed: the routing key is in the body.
func TestRedirectNotFollowed(t *testing.T) {
	keyFile := notifytest.SecretFile(t, "key", strings.Repeat("a", 32))
	notifytest.RequireNoRedirect(t, http.StatusTemporaryRedirect, func(redirect string) (notify.Notifier, error) {
		return New(Config{Name: "pd", RoutingKeyFile: keyFile, URL: redirect}, nil, slog.New(slog.DiscardHandler))
	}, "pagerduty pd: trigger "+notifytest.SampleKey+": status 307: redirects are not followed")
}

func TestTimeoutIsRetryable(t *testing.T) {
	srv := notifytest.NewPagerDutyServer(t)
	n := notifytest.MustNew(t, New, Config{Name: "pd", RoutingKeyFile: srv.KeyFile, URL: srv.URL(), Timeout: 100 * time.Millisecond}, srv.HTTPClient(), nil)
	notifytest.RequireTimeout(t, srv, n, "pagerduty pd: trigger "+notifytest.SampleKey+": timeout after 100ms")
}

func TestPermanentErrors(t *testing.T) {
	notifytest.RequireUnknownEventOf(t, notifytest.NewPagerDutyServer, newTestNotifier, []byte("{}"), `pagerduty pd-oncall: unknown event "snooze"`)
}

// The routing key is in the body's routing_key and nowhere else: not in
// another field, a header, an error, a state or a log line, whatever the
// server echoes.
func TestCanaryAbsentEverywhere(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewPagerDutyServer, newTestNotifier)
	secrets := srv.Secrets()
	echo := `{"status":"invalid event","message":"bad ` + srv.RoutingKey + `","errors":["routing_key ` + srv.RoutingKey + `"],"dedup_key":"` + srv.RoutingKey + `"}`
	errs, states := notifytest.DeliverEchoing(srv, echo, 202, []int{400, 401, 429, 500}, func(ev notify.Event) ([]byte, error) {
		return notifytest.NotifyStateless(t, n, notifytest.SampleMessage(ev), nil)
	})

	require.Equal(t, 5, notifytest.RequireNoSecretsInResults(t, secrets, errs, states))
	notifytest.RequireNoSecretsIn(t, logs(), secrets)
	for _, r := range srv.Requests() {
		require.Equal(t, srv.RoutingKey, r.JSON(t)["routing_key"])
		require.Equal(t, 1, strings.Count(string(r.Body), srv.RoutingKey), "the key only as routing_key")
		notifytest.RequireNoSecretsInHeader(t, r.Header, secrets)
	}
}

func TestNew(t *testing.T) {
	files := notifytest.NewFiles(t)
	key := strings.Repeat("Ab3", 10) + "Z9" // 32
	logger := slog.New(slog.DiscardHandler)
	good := notifytest.OpenChecks{Vendor: "pagerduty", Name: "pd", Key: "routing_key_file", New: notifytest.NewOf(New, func(file string) Config { return Config{Name: "pd", RoutingKeyFile: file} })}.Require(t, files, key)

	for name, content := range map[string]string{"short": key[:31], "two": key + "\n" + key, "spaced": key[:16] + " " + key[17:]} {
		_, err := New(Config{Name: "pd", RoutingKeyFile: files.Write(name, content)}, nil, logger)
		require.EqualError(t, err, `pagerduty "pd": routing_key_file "`+files.Path(name)+`": want the 32-character integration key of an Events API v2 integration, on one line`)
		notifytest.RequireNoSecrets(t, err, []string{key, key[:31], key[:16]})
	}

	n, err := New(Config{Name: "pd", RoutingKeyFile: good}, nil, logger)
	require.NoError(t, err)
	require.Equal(t, "pd", n.Name())
	require.Equal(t, key, n.key)
	require.Equal(t, "https://events.pagerduty.com/v2/enqueue", n.url)

	n, err = New(Config{Name: "pd", RoutingKeyFile: good, URL: "https://pd-proxy.corp.example/pagerduty/"}, nil, logger)
	require.NoError(t, err)
	require.Equal(t, "https://pd-proxy.corp.example/pagerduty/v2/enqueue", n.url)
}
