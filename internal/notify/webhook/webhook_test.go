package webhook

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

const headerToken = "gw-token-canary-5f1e2d3c"

func newTestNotifier(t *testing.T, srv *notifytest.WebhookServer, logger *slog.Logger) *Notifier {
	return notifytest.MustNew(t, New, Config{
		Name: "hook", URLFile: srv.URLFile, SecretFile: srv.SecretFile, Timeout: 5 * time.Second,
		Headers: map[string]string{"Authorization": "Bearer " + headerToken},
	}, srv.HTTPClient(), logger)
}

func TestLifecycle(t *testing.T) {
	srv := notifytest.NewWebhookServer(t, "")
	n := newTestNotifier(t, srv, nil)

	state := []byte(`{"kept":true}`)
	events := []notify.Event{notify.EventOpen, notify.EventUpdate, notify.EventRenotify, notify.EventResolve}
	for _, ev := range events {
		got, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(ev), state)
		require.NoError(t, err, ev)
		require.Equal(t, state, got, "webhooks keep no state: passed through")
	}

	ds := srv.Deliveries()
	require.Len(t, ds, len(events))
	for i, d := range ds {
		ev := events[i]
		require.True(t, d.Verified, d.Reason)
		require.False(t, d.Duplicate)
		require.Equal(t, string(ev), d.Header.Get("X-Driftwatch-Event"))
		require.Equal(t, "msg-"+string(ev)+"-0001", d.Header.Get("X-Driftwatch-Delivery"))
		require.Equal(t, "application/json", d.Header.Get("Content-Type"))
		require.Equal(t, "Bearer "+headerToken, d.Header.Get("Authorization"))
		require.Regexp(t, `^sha256=[0-9a-f]{64}$`, d.Header.Get("X-Driftwatch-Signature"))
		require.NoError(t, Verify([]byte(srv.Secret), d.Header, d.Body, time.Now(), DefaultTolerance))

		m := notifytest.SampleMessage(ev)
		want := notifytest.WebhookPayload{
			Version: 1, ID: m.ID, Event: string(ev), At: m.At,
			Incident: notifytest.WebhookIncident{
				Key: m.Incident.Key, Workspace: "prod/network", Class: "drift", Severity: "high",
				Owner: "network-team", Team: "platform", Labels: map[string]string{"env": "prod", "tier": "core"},
				Since: m.Incident.Since, Counts: drift.Counts{Drift: 1, Pending: 1},
				Findings: []drift.Finding{
					{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update", Attributes: []string{"ingress", "tags.Name"}},
					{Kind: drift.KindPending, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "create", Attributes: []string{}},
				},
				RunID: "run-0042", URL: "https://driftwatch.example.com/workspaces/prod%2Fnetwork",
			},
		}
		if ev == notify.EventUpdate {
			want.Delta = &notifytest.WebhookDelta{Added: want.Incident.Findings[1:], Removed: []drift.Finding{}, Changed: []drift.Finding{}}
		}
		require.Equal(t, want, d.Payload, ev)
	}
}

func TestResendIsFlaggedByTheReceiver(t *testing.T) {
	srv := notifytest.NewWebhookServer(t, "")
	n := newTestNotifier(t, srv, nil)
	clock := time.Now()
	n.sender.Now = func() time.Time { return clock }
	m := notifytest.SampleMessage(notify.EventOpen)
	_, err := notifytest.NotifyStateless(t, n, m, nil)
	require.NoError(t, err)
	clock = clock.Add(time.Minute)
	_, err = notifytest.NotifyStateless(t, n, m, nil)
	require.NoError(t, err)

	ds := srv.Deliveries()
	require.Len(t, ds, 2)
	require.False(t, ds[0].Duplicate)
	require.True(t, ds[1].Duplicate)
	require.Equal(t, ds[0].Body, ds[1].Body, "the body of a retry is identical")
	require.NotEqual(t, ds[0].Header.Get("X-Driftwatch-Timestamp"), ds[1].Header.Get("X-Driftwatch-Timestamp"), "each attempt is signed afresh")
}

func TestRetryAfter(t *testing.T) {
	srv := notifytest.NewWebhookServer(t, "")
	n := newTestNotifier(t, srv, nil)
	now := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	n.sender.Now = func() time.Time { return now }

	srv.FailNext(notifytest.Failure{Status: 429, RetryAfter: "Tue, 03 Nov 2026 09:02:00 GMT"})
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	retry, after := notify.IsRetryable(err)
	require.True(t, retry)
	require.Equal(t, 2*time.Minute, after)
	require.EqualError(t, err, "webhook hook: deliver msg-open-0001: status 429")
}

func TestStatusTable(t *testing.T) {
	for _, tc := range []struct {
		status    int
		retryable bool
		msg       string
	}{
		{200, false, ""},
		{202, false, ""},
		{204, false, ""},
		{301, false, "webhook hook: deliver msg-open-0001: status 301: redirects are not followed"},
		{400, false, "webhook hook: deliver msg-open-0001: status 400"},
		{404, false, "webhook hook: deliver msg-open-0001: status 404"},
		{408, true, "webhook hook: deliver msg-open-0001: status 408"},
		{410, false, "webhook hook: deliver msg-open-0001: status 410"},
		{422, false, "webhook hook: deliver msg-open-0001: status 422"},
		{429, true, "webhook hook: deliver msg-open-0001: status 429"},
		{500, true, "webhook hook: deliver msg-open-0001: status 500"},
		{502, true, "webhook hook: deliver msg-open-0001: status 502"},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := notifytest.NewWebhookServer(t, "")
			n := newTestNotifier(t, srv, nil)
			srv.FailNext(notifytest.Failure{Status: tc.status})
			_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.msg)
			retry, _ := notify.IsRetryable(err)
			require.Equal(t, tc.retryable, retry)
			require.Equal(t, 1, srv.Attempts())
		})
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	elsewhere := notifytest.NewWebhookServer(t, "")
	redirect := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	files := notifytest.NewFiles(t)
	urlFile := files.Write("url", redirect.URL+"/hook")
	n, err := New(Config{Name: "hook", URLFile: urlFile, SecretFile: elsewhere.SecretFile}, redirect.Client(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, "webhook hook: deliver msg-open-0001: status 307: redirects are not followed")
	require.Zero(t, elsewhere.Attempts())
}

func TestTimeout(t *testing.T) {
	srv := notifytest.NewWebhookServer(t, "")
	n := newTestNotifier(t, srv, nil)
	n.sender.Timeout = 100 * time.Millisecond
	srv.FailNext(notifytest.Failure{Delay: time.Minute})
	start := time.Now()
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.Less(t, time.Since(start), 2*time.Second)
	require.EqualError(t, err, "webhook hook: deliver msg-open-0001: timeout after 100ms")
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)
}

func TestCanaryAbsentEverywhere(t *testing.T) {
	srv := notifytest.NewWebhookServer(t, "")
	logger, logs := notifytest.CaptureLogger()
	n := newTestNotifier(t, srv, logger)
	secrets := append(srv.Secrets(), headerToken)
	var errs []error
	run := func() {
		_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		errs = append(errs, err)
	}
	echo := strings.Join(secrets, " ")
	srv.FailNext(notifytest.Failure{Status: 500, Body: echo})
	run()
	srv.FailNext(notifytest.Failure{Status: 400, Body: echo})
	run()
	srv.Down()
	run()
	srv.Up()
	run()

	// A refused connection and a TLS failure quote the address, not the URL.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	files := notifytest.NewFiles(t)
	closedURL := "https://" + addr + "/hooks/" + notifytest.Canary("closed-token") + "?sig=" + notifytest.Canary("query")
	urlFile := files.Write("url", closedURL)
	n2, err := New(Config{Name: "hook", URLFile: urlFile, SecretFile: srv.SecretFile}, nil, logger)
	require.NoError(t, err)
	_, err = notifytest.NotifyStateless(t, n2, notifytest.SampleMessage(notify.EventOpen), nil)
	require.ErrorContains(t, err, "connection refused")
	errs = append(errs, err)
	secrets = append(secrets, closedURL, strings.Split(closedURL, "?")[1], "/hooks/")

	tlsFile := files.Write("tls-url", srv.URL)
	n3, err := New(Config{Name: "hook", URLFile: tlsFile, SecretFile: srv.SecretFile}, nil, logger) // default client: untrusted cert
	require.NoError(t, err)
	_, err = notifytest.NotifyStateless(t, n3, notifytest.SampleMessage(notify.EventOpen), nil)
	require.ErrorContains(t, err, "certificate")
	errs = append(errs, err)

	var failed int
	for _, err := range errs {
		if err != nil {
			failed++
		}
		notifytest.RequireNoSecrets(t, err, secrets)
	}
	require.Equal(t, 5, failed)
	notifytest.RequireNoSecretsIn(t, logs(), secrets)
}

func TestNew(t *testing.T) {
	files := notifytest.NewFiles(t)
	write := files.Write
	secret := write("secret", "whsec-0123456789abcdef\n")
	logger := slog.New(slog.DiscardHandler)
	token := notifytest.Canary("token")

	_, err := New(Config{Name: "hook", URLFile: write("u0", "https://h/"+token), SecretFile: secret}, nil, nil)
	require.EqualError(t, err, "webhook: logger is required")

	_, err = New(Config{Name: "hook", URLFile: files.Path("missing"), SecretFile: secret}, nil, logger)
	require.ErrorIs(t, err, os.ErrNotExist)

	for i, bad := range []string{"ftp://h/" + token, "h/" + token, "https://h/x#" + token, "https://h/%zz" + token, "https:///" + token} {
		f := write("bad"+string(rune('a'+i)), bad)
		_, err = New(Config{Name: "hook", URLFile: f, SecretFile: secret}, nil, logger)
		require.EqualError(t, err, `webhook "hook": url_file "`+f+`": want an absolute http(s) URL without a fragment`, bad)
	}

	_, err = New(Config{Name: "hook", URLFile: write("u1", "https://h/"+token), SecretFile: write("short", "short-secret")}, nil, logger)
	require.EqualError(t, err, `webhook "hook": secret_file "`+files.Path("short")+`": the key must be at least 16 bytes`)

	_, err = New(Config{Name: "hook", URLFile: write("u2", "\n"), SecretFile: secret}, nil, logger)
	require.EqualError(t, err, `webhook "hook": url_file: "`+files.Path("u2")+`" is empty`)

	captured, logs := notifytest.CaptureLogger()
	n, err := New(Config{Name: "hook", URLFile: write("plain", "http://hooks.internal/"+token), SecretFile: secret}, nil, captured)
	require.NoError(t, err)
	require.Equal(t, "hook", n.Name())
	require.Contains(t, logs(), "webhook url uses plain http")
	require.NotContains(t, logs(), token)

	captured, logs = notifytest.CaptureLogger()
	_, err = New(Config{Name: "hook", URLFile: write("loop", "http://127.0.0.1:9/"+token), SecretFile: secret}, nil, captured)
	require.NoError(t, err)
	require.Empty(t, logs())
}

func TestContextCancelledDuringRequest(t *testing.T) {
	srv := notifytest.NewWebhookServer(t, "")
	n := newTestNotifier(t, srv, nil)
	srv.FailNext(notifytest.Failure{Delay: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := n.Notify(ctx, notifytest.SampleMessage(notify.EventOpen), nil, nil)
	require.ErrorIs(t, err, context.Canceled)
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)
}

func TestConformance(t *testing.T) {
	notifytest.Conformance(t, func(t *testing.T) (notify.Notifier, notifytest.ServerControl) {
		srv := notifytest.NewWebhookServer(t, "")
		return newTestNotifier(t, srv, nil), srv
	})
}
