package notifytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	mrand "math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// Failure is an injected response: the server answers one request with it
// instead of handling the request.
type Failure struct {
	// Status is the HTTP status to answer (0: 500).
	Status int
	// RetryAfter is sent as the Retry-After header if not empty.
	RetryAfter string
	// Body is the response body, sent as application/json (empty:
	// {"message":"<status text>"}).
	Body string
	// Delay holds the response back (until the client gives up or the
	// server closes, whichever is first).
	Delay time.Duration
}

// ServerControl is what Conformance needs from a notifier's test server.
type ServerControl interface {
	// FailNext answers the next request with f (failures queue up).
	FailNext(f Failure)
	// Down makes the server drop every connection without a response
	// until Up.
	Down()
	// Up ends Down.
	Up()
	// Secrets are the values that must never appear in an error: API
	// keys, webhook URLs and signing secrets.
	Secrets() []string
}

// Faults implements ServerControl's failure injection for a test server:
// wrap the server's handler with Wrap and call Close before the server's
// Close. The zero value is ready to use.
type Faults struct {
	mu     sync.Mutex
	queue  []Failure
	down   bool
	closed chan struct{}
	flaky  *flakiness
}

// flakiness fails requests at random (see Flaky).
type flakiness struct {
	rate        float64
	maxInARow   int
	inARow      int
	rng         *mrand.Rand
	failed      int
	failedKinds map[string]int
}

// Flaky makes the server fail a fraction rate of the requests it would
// otherwise handle, chosen by a generator seeded with seed, never more
// than maxInARow in a row: each failure is, at random, a 500, a 503, a 429
// with Retry-After: 1, or a dropped connection. Like every injected
// failure, a failed request is not handled (nothing is recorded as
// received). Rate 0 ends it.
func (f *Faults) Flaky(rate float64, maxInARow int, seed int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rate <= 0 {
		f.flaky = nil
		return
	}
	f.flaky = &flakiness{rate: rate, maxInARow: maxInARow, rng: mrand.New(mrand.NewSource(seed)), failedKinds: map[string]int{}}
}

// FlakyFailures returns how many requests Flaky failed, by kind ("500",
// "503", "429", "drop").
func (f *Faults) FlakyFailures() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flaky == nil {
		return nil
	}
	return maps.Clone(f.flaky.failedKinds)
}

// next decides, under f.mu, whether Flaky fails this request and how.
func (k *flakiness) next() (Failure, bool) {
	if k.inARow >= k.maxInARow || k.rng.Float64() >= k.rate {
		k.inARow = 0
		return Failure{}, false
	}
	k.inARow++
	k.failed++
	switch k.rng.Intn(4) {
	case 0:
		k.failedKinds["500"]++
		return Failure{Status: http.StatusInternalServerError}, true
	case 1:
		k.failedKinds["503"]++
		return Failure{Status: http.StatusServiceUnavailable}, true
	case 2:
		k.failedKinds["429"]++
		return Failure{Status: http.StatusTooManyRequests, RetryAfter: "1"}, true
	default:
		k.failedKinds["drop"]++
		return Failure{Status: -1}, true
	}
}

// FailNext queues f for the next request.
func (f *Faults) FailNext(x Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, x)
}

// Down drops every request's connection until Up.
func (f *Faults) Down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = true
}

// Up ends Down.
func (f *Faults) Up() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = false
}

// Close releases delayed responses, so the server can shut down.
func (f *Faults) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed == nil {
		f.closed = make(chan struct{})
	}
	select {
	case <-f.closed:
	default:
		close(f.closed)
	}
}

func (f *Faults) closedChan() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed == nil {
		f.closed = make(chan struct{})
	}
	return f.closed
}

// Wrap answers a request with the next queued failure, or drops it while
// down, and passes it to next otherwise.
func (f *Faults) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		down := f.down
		var x *Failure
		if !down && len(f.queue) > 0 {
			x = &f.queue[0]
			f.queue = f.queue[1:]
		} else if !down && f.flaky != nil {
			if fl, ok := f.flaky.next(); ok {
				x = &fl
			}
		}
		f.mu.Unlock()
		if down || (x != nil && x.Status == -1) {
			// Closes the connection without a response: the client
			// sees a network error.
			panic(http.ErrAbortHandler)
		}
		if x == nil {
			next.ServeHTTP(w, r)
			return
		}
		if x.Delay > 0 {
			t := time.NewTimer(x.Delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				// Returning would answer an implicit 200: drop the
				// connection, as a server that never answered.
				panic(http.ErrAbortHandler)
			case <-f.closedChan():
				panic(http.ErrAbortHandler)
			}
		}
		if x.RetryAfter != "" {
			w.Header().Set("Retry-After", x.RetryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		status := x.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		body := x.Body
		if body == "" {
			body = fmt.Sprintf(`{"message":%q}`, http.StatusText(status))
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
}

// startTLS starts an httptest TLS server whose connection-level errors
// (handshakes aborted by a test) are not printed.
func startTLS(h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	return srv
}

// NewNotifier returns a fresh notifier and the server it talks to.
type NewNotifier func(t *testing.T) (notify.Notifier, ServerControl)

// Conformance runs the checks every notifier must pass. Each check gets a
// fresh notifier and server from newNotifier.
func Conformance(t *testing.T, newNotifier NewNotifier) {
	t.Run("delivers", func(t *testing.T) {
		n, _ := newNotifier(t)
		require.NotEmpty(t, n.Name())
		_, err := notifyOnce(t.Context(), n, SampleMessage(notify.EventOpen))
		require.NoError(t, err)
	})

	t.Run("status codes", func(t *testing.T) {
		for _, tc := range []struct {
			status     int
			retryAfter string
			retryable  bool
			after      time.Duration
		}{
			{status: 429, retryAfter: "7", retryable: true, after: 7 * time.Second},
			{status: 429, retryable: true},
			{status: 500, retryable: true},
			{status: 503, retryAfter: "3", retryable: true, after: 3 * time.Second},
			{status: 400},
			{status: 401},
			{status: 403},
		} {
			t.Run(fmt.Sprintf("%d retry-after %q", tc.status, tc.retryAfter), func(t *testing.T) {
				n, srv := newNotifier(t)
				srv.FailNext(Failure{Status: tc.status, RetryAfter: tc.retryAfter, Body: `{"message":"injected failure","took":0.001,"requestId":"conformance"}`})
				_, err := notifyOnce(t.Context(), n, SampleMessage(notify.EventOpen))
				require.Error(t, err)
				retry, after := notify.IsRetryable(err)
				require.Equal(t, tc.retryable, retry, "retryable: %v", err)
				require.Equal(t, tc.after, after, "retry after: %v", err)
				RequireNoSecrets(t, err, srv.Secrets())
			})
		}
	})

	t.Run("secrets absent from errors", func(t *testing.T) {
		for _, status := range []int{500, 401, 400} {
			t.Run(fmt.Sprint(status), func(t *testing.T) {
				n, srv := newNotifier(t)
				echo := strings.Join(srv.Secrets(), " ")
				srv.FailNext(Failure{Status: status, Body: fmt.Sprintf(`{"message":"bad request from %s","took":0.001,"requestId":"echo","errors":{"key":%q}}`, echo, echo)})
				_, err := notifyOnce(t.Context(), n, SampleMessage(notify.EventOpen))
				require.Error(t, err)
				RequireNoSecrets(t, err, srv.Secrets())
			})
		}
	})

	t.Run("down then up", func(t *testing.T) {
		n, srv := newNotifier(t)
		srv.Down()
		_, err := notifyOnce(t.Context(), n, SampleMessage(notify.EventOpen))
		require.Error(t, err)
		retry, _ := notify.IsRetryable(err)
		require.True(t, retry, "network failure must be retryable: %v", err)
		RequireNoSecrets(t, err, srv.Secrets())
		srv.Up()
		_, err = notifyOnce(t.Context(), n, SampleMessage(notify.EventOpen))
		require.NoError(t, err)
	})

	t.Run("context cancelled while hanging", func(t *testing.T) {
		n, srv := newNotifier(t)
		srv.FailNext(Failure{Status: 500, Delay: time.Minute})
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := notifyOnce(ctx, n, SampleMessage(notify.EventOpen))
		require.Error(t, err)
		require.Less(t, time.Since(start), 3*time.Second, "Notify must return promptly when ctx is done")
		require.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled), "want a context error, got %v", err)
		retry, _ := notify.IsRetryable(err)
		require.True(t, retry, "an interrupted delivery must be retryable: %v", err)
		RequireNoSecrets(t, err, srv.Secrets())
	})

	t.Run("context already cancelled", func(t *testing.T) {
		n, srv := newNotifier(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		start := time.Now()
		_, err := notifyOnce(ctx, n, SampleMessage(notify.EventOpen))
		require.Error(t, err)
		require.Less(t, time.Since(start), time.Second)
		require.ErrorIs(t, err, context.Canceled)
		retry, _ := notify.IsRetryable(err)
		require.True(t, retry, "a delivery that never started must be retryable: %v", err)
		RequireNoSecrets(t, err, srv.Secrets())
		if rs, ok := srv.(RecordingServer); ok {
			require.Empty(t, rs.Requests(), "nothing is sent once ctx is done")
		}
	})

	t.Run("every event", func(t *testing.T) {
		n, _ := newNotifier(t)
		var state []byte
		for _, ev := range []notify.Event{notify.EventOpen, notify.EventUpdate, notify.EventRemediation, notify.EventRenotify, notify.EventResolve} {
			var err error
			state, err = n.Notify(t.Context(), SampleMessage(ev), state, func(b []byte) error { state = b; return nil })
			require.NoError(t, err, "event %s", ev)
		}
	})
}

func notifyOnce(ctx context.Context, n notify.Notifier, m notify.Message) ([]byte, error) {
	return n.Notify(ctx, m, nil, func([]byte) error { return nil })
}

// CaptureLogger returns a debug-level logger and a function returning
// everything logged so far, to search for secrets.
func CaptureLogger() (*slog.Logger, func() string) {
	b := &conformanceLogBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b.String
}

type conformanceLogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *conformanceLogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *conformanceLogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Canary returns a unique secret-looking value ("canary-<what>-<hex>") to
// search for in errors and logs.
func Canary(what string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "canary-" + what + "-" + hex.EncodeToString(b)
}

// RequireNoSecrets fails if any secret appears in err's message, its
// %+v form, or the message of any error in its chain.
func RequireNoSecrets(t testing.TB, err error, secrets []string) {
	t.Helper()
	if err == nil {
		return
	}
	texts := []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
	var walk func(error)
	walk = func(e error) {
		for e != nil {
			texts = append(texts, e.Error())
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				for _, x := range j.Unwrap() {
					walk(x)
				}
				return
			}
			e = errors.Unwrap(e)
		}
	}
	walk(err)
	RequireNoSecretsIn(t, strings.Join(texts, "\n"), secrets)
}

// RequireNoSecretsIn fails if any secret appears in s.
func RequireNoSecretsIn(t testing.TB, s string, secrets []string) {
	t.Helper()
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		require.NotContains(t, s, sec, "secret leaked")
	}
}

// Errored is m as an errored incident's message: no findings, the error
// err.
func Errored(m notify.Message, err string) notify.Message {
	m.Incident.Class, m.Incident.Error = notify.ClassErrored, err
	m.Incident.Findings, m.Incident.Counts = nil, drift.Counts{}
	return m
}

// Forbidden is m as a forbidden incident's message, its findings fs.
func Forbidden(m notify.Message, fs ...drift.Finding) notify.Message {
	m.Incident.Class, m.Incident.Findings, m.Incident.Counts = notify.ClassForbidden, fs, drift.CountFindings(fs)
	return m
}

// InitFailed is the error of an errored incident whose init failed, as
// the OpsGenie and JSM alert tests give it (RequireInitFailedAlert).
const InitFailed = "terraform init:\n  provider registry unreachable"

// RequireInitFailedAlert checks the alert OpsGenie and JSM make (the
// mapping of package genie) of Errored(m, InitFailed) with no team and no
// labels: the error on one line in its message, description and details,
// no findings, no responders (len responders), the tags of its class.
func RequireInitFailedAlert(t testing.TB, message, description string, details map[string]string, responders int, tags []string) {
	t.Helper()
	require.Equal(t, "Drift checks failing for prod/network: terraform init: provider registry unreachable", message)
	require.Contains(t, description, "Error: terraform init: provider registry unreachable")
	require.NotContains(t, description, "Findings")
	require.Equal(t, "terraform init: provider registry unreachable", details["error"])
	require.Zero(t, responders)
	require.Equal(t, []string{"driftwatch", "errored", "prod/network"}, tags)
}

// SampleKey is SampleMessage's incident key.
const SampleKey = "drift-prod-network-3f9a2c"

// SampleMessage is a realistic message for event: a drift incident with
// findings (a delta for updates, a failed apply for remediations). Its
// Key is usable as an alias.
func SampleMessage(event notify.Event) notify.Message {
	since := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	fs := []drift.Finding{
		{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update", Attributes: []string{"ingress", "tags.Name"}},
		{Kind: drift.KindPending, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "create"},
	}
	m := notify.Message{
		ID:    "msg-" + string(event) + "-0001",
		Event: event,
		Incident: notify.Incident{
			Key:       SampleKey,
			Workspace: "prod/network",
			Class:     notify.ClassDrift,
			Severity:  notify.SeverityHigh,
			Owner:     "network-team",
			Team:      "platform",
			Labels:    map[string]string{"env": "prod", "tier": "core"},
			Since:     since,
			Findings:  fs,
			Counts:    drift.CountFindings(fs),
			RunID:     "run-0042",
			URL:       "https://driftwatch.example.com/workspaces/prod%2Fnetwork",
		},
		At: since.Add(time.Hour),
	}
	switch event {
	case notify.EventUpdate:
		m.Delta = &notify.Delta{Added: fs[1:]}
	case notify.EventRemediation:
		// A failed apply: the incident's severity is raised one step.
		m.Incident.Severity, m.Incident.Escalated = notify.SeverityCritical, 1
		m.Remediation = &notify.Remediation{
			ID: "rem-0007", Mode: "auto", Result: notify.RemediationFailed,
			Reason:    "apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)",
			Resources: 1, ApplyRunID: "run-0043", URL: "https://driftwatch.example.com/runs/run-0043",
		}
	}
	return m
}

// AwaitingApproval is SampleMessage's remediation proposed in mode and
// awaiting approval until a day after the message (2026-11-04 10:00
// UTC): nothing applied yet, so no reason, apply run or run link, and the
// incident's severity not raised.
func AwaitingApproval(mode string) notify.Message {
	m := SampleMessage(notify.EventRemediation)
	m.Incident.Severity, m.Incident.Escalated = notify.SeverityHigh, 0
	r := m.Remediation
	r.Mode, r.Result, r.Reason, r.ApplyRunID, r.URL = mode, notify.RemediationAwaitingApproval, "", "", ""
	r.ExpiresAt = m.At.Add(24 * time.Hour)
	return m
}

// Attributed is m with its findings attributed: the drift finding changed
// by carol@example.com (its attribution command's answer), the pending one
// last changed in a commit by Ann. Provenance lists the lines notifiers
// show for them.
func Attributed(m notify.Message) notify.Message {
	at := time.Date(2026, 11, 3, 8, 30, 0, 0, time.UTC)
	fs := make([]drift.Finding, len(m.Incident.Findings))
	for i, f := range m.Incident.Findings {
		switch f.Kind {
		case drift.KindDrift:
			f.Window = &drift.Window{From: at.Add(-time.Hour), To: at.Add(time.Hour)}
			f.Attribution = &drift.Attribution{Actor: "carol@example.com", Time: at, Source: "test-trail", EventID: "ev-42"}
		case drift.KindPending:
			f.Commit = &drift.Commit{Hash: "0123456789abcdef0123456789abcdef01234567", Author: "Ann", Time: at, Subject: "add the bucket"}
		}
		fs[i] = f
	}
	m.Incident.Findings = fs
	return m
}

// Provenance are the lines Attributed's findings show (notify.Provenance).
var Provenance = []string{"changed by carol@example.com at 2026-11-03 08:30 UTC (test-trail)", "last changed in 0123456789ab by Ann"}

// RequireProvenance checks that s, what a notifier sent for Attributed's
// message, shows both Provenance lines.
func RequireProvenance(t testing.TB, s string) {
	t.Helper()
	for _, p := range Provenance {
		require.Contains(t, s, p)
	}
}
