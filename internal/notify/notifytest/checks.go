package notifytest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// RecordingServer is a ServerControl that records the requests it
// receives, as every vendor HTTP server here does.
type RecordingServer interface {
	ServerControl
	Requests() []Request
}

// RequireStatusClasses checks, for each status on a fresh server from
// newServer, that a delivery answered with that status (and body) fails,
// retryable if the status is in retryable and permanent if it is in
// permanent, without a secret in the error, after exactly one request: a
// notifier makes one attempt per Notify, the outbox retries. deliver
// makes the delivery and returns its error.
func RequireStatusClasses[S RecordingServer](t *testing.T, newServer func(testing.TB) S, body string, retryable, permanent []int, deliver func(*testing.T, S) error) {
	t.Helper()
	check := func(status int, want bool) {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := newServer(t)
			srv.FailNext(Failure{Status: status, Body: body})
			err := deliver(t, srv)
			require.Error(t, err)
			retry, _ := notify.IsRetryable(err)
			require.Equal(t, want, retry, "%d: %v", status, err)
			require.Len(t, srv.Requests(), 1, "one attempt per Notify: the outbox retries")
			RequireNoSecrets(t, err, srv.Secrets())
		})
	}
	for _, status := range retryable {
		check(status, true)
	}
	for _, status := range permanent {
		check(status, false)
	}
}

// RedirectServer starts a plain-HTTP server that answers every request
// with a redirect (status) to the same path and query on a second server.
// It returns the first server's URL and a function that counts the
// requests the second one received: a notifier that follows no redirect
// sends it none.
func RedirectServer(t testing.TB, status int) (url string, followed func() int) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(target.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.RequestURI(), status)
	}))
	t.Cleanup(redirect.Close)
	return redirect.URL, func() int { return int(hits.Load()) }
}

// RequireNoRedirect makes the notifier newNotifier builds for a
// RedirectServer's URL deliver SampleMessage's open: it fails with the
// error want, and the redirect target receives nothing.
func RequireNoRedirect(t *testing.T, status int, newNotifier func(url string) (notify.Notifier, error), want string) {
	t.Helper()
	redirect, followed := RedirectServer(t, status)
	n, err := newNotifier(redirect)
	require.NoError(t, err)
	_, err = NotifyStateless(t, n, SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, want)
	require.Zero(t, followed(), "the redirect is not followed")
}

// RequireNoSecretsInResults fails if a secret appears in one of errs (see
// RequireNoSecrets) or states, what a notifier returned over several
// deliveries; it returns how many of errs are not nil.
func RequireNoSecretsInResults(t testing.TB, secrets []string, errs []error, states [][]byte) (failed int) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			failed++
		}
		RequireNoSecrets(t, err, secrets)
	}
	for _, s := range states {
		RequireNoSecretsIn(t, string(s), secrets)
	}
	return failed
}

// RequireNoSecretsInHeader fails if a secret appears in a header of h
// (its name or values) other than those named in except, where the
// notifier sends its credential (e.g. "Authorization").
func RequireNoSecretsInHeader(t testing.TB, h http.Header, secrets []string, except ...string) {
	t.Helper()
	h = h.Clone()
	for _, k := range except {
		h.Del(k)
	}
	for k, vs := range h {
		RequireNoSecretsIn(t, k+": "+strings.Join(vs, ","), secrets)
	}
}

// DeliverEchoing delivers an incident's events through deliver while srv
// answers with echo, a body that repeats the notifier's secrets: open as
// usual, an update for each of the failing statuses, a remediation
// answered with okStatus (a success status, with the echo as its body),
// a renotify while srv is down and a resolve once it is up again. It
// returns the deliveries' errors and states, in order, for
// RequireNoSecretsInResults.
func DeliverEchoing(srv ServerControl, echo string, okStatus int, failing []int, deliver func(notify.Event) ([]byte, error)) (errs []error, states [][]byte) {
	run := func(ev notify.Event) {
		st, err := deliver(ev)
		errs = append(errs, err)
		states = append(states, st)
	}
	run(notify.EventOpen)
	for _, status := range failing {
		srv.FailNext(Failure{Status: status, Body: echo})
		run(notify.EventUpdate)
	}
	srv.FailNext(Failure{Status: okStatus, Body: echo})
	run(notify.EventRemediation)
	srv.Down()
	run(notify.EventRenotify)
	srv.Up()
	run(notify.EventResolve)
	return errs, states
}

// Now is the clock of the retry tests (RetryAfter429): 2026-11-03
// 10:00 UTC, an hour after SampleMessage's incident began.
var Now = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

// Clock is Now as a notifier's clock (its Sender's Now).
func Clock() time.Time { return Now }

// RetryCase is a failure and the delay its error must ask for.
type RetryCase struct {
	Failure
	Want time.Duration
}

// RetryAfter429 are 429 answers whose Retry-After asks for 30 s, for 2
// minutes (an HTTP date, against Now), and for nothing (the outbox's
// backoff): cases of RequireRetryAfter.
func RetryAfter429() []RetryCase {
	return []RetryCase{
		{Failure{Status: 429, RetryAfter: "30"}, 30 * time.Second},
		{Failure{Status: 429, RetryAfter: Now.Add(2 * time.Minute).Format(http.TimeFormat)}, 2 * time.Minute},
		{Failure{Status: 429}, 0},
	}
}

// RequireRetryAfter makes n deliver SampleMessage's open once for each
// case, answered with its failure and body: each delivery fails
// retryable after the case's Want (Retry-After dates are read against
// Now: n's clock must be Clock), with an error checkErr accepts. None of
// them delivered anything (delivered counts what was), and the next
// delivery does.
func RequireRetryAfter(t *testing.T, srv ServerControl, n notify.Notifier, body string, cases []RetryCase, checkErr func(error), delivered func() int) {
	t.Helper()
	for _, tc := range cases {
		f := tc.Failure
		f.Body = body
		srv.FailNext(f)
		_, err := NotifyStateless(t, n, SampleMessage(notify.EventOpen), nil)
		retry, after := notify.IsRetryable(err)
		require.True(t, retry, "%d", f.Status)
		require.Equal(t, tc.Want, after, "%d %q", f.Status, f.RetryAfter)
		checkErr(err)
	}
	require.Zero(t, delivered())
	_, err := NotifyStateless(t, n, SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	require.Equal(t, 1, delivered())
}

// RequirePosts checks that reqs are n POSTs to path, each with the
// Content-Type contentType.
func RequirePosts(t testing.TB, reqs []Request, n int, path, contentType string) {
	t.Helper()
	require.Len(t, reqs, n)
	for _, r := range reqs {
		require.Equal(t, "POST", r.Method)
		require.Equal(t, path, r.Path)
		require.Equal(t, contentType, r.Header.Get("Content-Type"))
	}
}

// RequireTimeout makes n, whose requests time out after 100 ms, deliver
// SampleMessage's open to srv, which holds its answer back a minute: the
// delivery fails, retryable, with the error want.
func RequireTimeout(t *testing.T, srv ServerControl, n notify.Notifier, want string) {
	t.Helper()
	srv.FailNext(Failure{Delay: time.Minute})
	_, err := NotifyStateless(t, n, SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, want)
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)
}

// RequireAPIError checks a delivery's error for a vendor's error answer
// of status: it reads want, is retryable or permanent as retryable says,
// and is a *notify.APIError of that status.
func RequireAPIError(t testing.TB, err error, want string, status int, retryable bool) {
	t.Helper()
	require.EqualError(t, err, want)
	retry, _ := notify.IsRetryable(err)
	require.Equal(t, retryable, retry)
	var apiErr *notify.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, status, apiErr.StatusCode)
}
