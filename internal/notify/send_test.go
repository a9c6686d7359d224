package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testSender sends to srv with the secret "s3cret" (in the URL's path).
func testSender(srv *httptest.Server) (Sender, string) {
	s := Sender{Prefix: "vendor pager", Client: NoRedirectClient(srv.Client()), Timeout: 2 * time.Second,
		Redact: func(s string) string { return Redact(s, "s3cret") },
		Now:    func() time.Time { return time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC) }}
	return s, srv.URL + "/hook/s3cret"
}

// Send classifies an answer as the outbox needs it: 2xx delivered, 408,
// 429 and 5xx retryable after Retry-After, 3xx and other statuses
// permanent, described by Describe.
func TestSenderStatuses(t *testing.T) {
	for _, tc := range []struct {
		code      int
		header    string
		retryable bool
		after     time.Duration
		want      string
	}{
		{code: 202},
		{code: 429, header: "7", retryable: true, after: 7 * time.Second, want: "vendor pager: create: status 429: busy"},
		{code: 503, header: "Tue, 03 Nov 2026 09:01:00 GMT", retryable: true, after: time.Minute, want: "vendor pager: create: status 503: busy"},
		{code: 408, retryable: true, want: "vendor pager: create: status 408: busy"},
		{code: 302, want: "vendor pager: create: status 302: redirects are not followed"},
		{code: 400, want: "vendor pager: create: status 400: busy"},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				code := tc.code
				if r.Header.Get("X-Test") != "yes" {
					code = http.StatusTeapot // the request's headers were lost
				}
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				if tc.code == 302 {
					w.Header().Set("Location", "https://elsewhere.example/")
				}
				w.WriteHeader(code)
				_, _ = w.Write([]byte("busy"))
			}))
			defer srv.Close()
			s, u := testSender(srv)
			code, body, err := s.Send(t.Context(), Request{Op: "create", URL: u, Header: http.Header{"X-Test": {"yes"}},
				Describe: func(code int, body []byte) error { return fmt.Errorf("status %d: %s", code, body) }})
			require.Equal(t, tc.code, code)
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, "busy", string(body))
				return
			}
			require.EqualError(t, err, tc.want)
			retryable, after := IsRetryable(err)
			require.Equal(t, tc.retryable, retryable)
			require.Equal(t, tc.after, after)
		})
	}
}

// A failure without an answer is retryable and quotes neither the URL
// nor the secret in it; a timeout says so; a done context is retryable
// with its cause, and so is an answer that races the deadline.
func TestSenderFailures(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	s, u := testSender(srv)

	s.Timeout = 50 * time.Millisecond
	_, _, err := s.Send(t.Context(), Request{Op: "create", URL: u})
	require.EqualError(t, err, "vendor pager: create: timeout after 50ms")
	retryable, _ := IsRetryable(err)
	require.True(t, retryable)

	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("shutting down"))
	_, _, err = s.Send(ctx, Request{Op: "create", URL: u})
	require.EqualError(t, err, "vendor pager: create: shutting down")
	retryable, _ = IsRetryable(err)
	require.True(t, retryable)

	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/hook/s3cret"
	closed.Close()
	_, _, err = s.Send(t.Context(), Request{Op: "create", URL: closedURL})
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "vendor pager: create: "), err.Error())
	require.NotContains(t, err.Error(), "s3cret")
	require.NotContains(t, err.Error(), "/hook")
	retryable, _ = IsRetryable(err)
	require.True(t, retryable)

	_, _, err = s.Send(t.Context(), Request{Op: "create", URL: "http://[::1]:namedport/s3cret"})
	require.ErrorContains(t, err, "vendor pager: create: build request: ")
	require.NotContains(t, err.Error(), "s3cret")
	retryable, _ = IsRetryable(err)
	require.False(t, retryable, "a request that cannot be built never will be")
}

// An answer handed over as the caller's context ends is not trusted.
func TestSenderAnswerRacingTheContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	s := Sender{Prefix: "vendor pager", Timeout: time.Second, Redact: func(s string) string { return s }, Now: time.Now,
		Client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			cancel(errors.New("stopped"))
			return &http.Response{StatusCode: 202, Body: http.NoBody, Header: http.Header{}}, nil
		})}}
	_, _, err := s.Send(ctx, Request{Op: "create", URL: "https://vendor.example/"})
	require.EqualError(t, err, "vendor pager: create: stopped")
	retryable, _ := IsRetryable(err)
	require.True(t, retryable)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An APIError reads status, code, message, errors and hint, each only
// when set.
func TestAPIError(t *testing.T) {
	require.EqualError(t, &APIError{StatusCode: 404}, "status 404")
	require.EqualError(t, &APIError{StatusCode: 400, Code: "invalid event", Message: "Event object is invalid",
		Errors: []string{"a", "b"}, Hint: "fix it"}, "status 400 (invalid event): Event object is invalid: a; b [fix it]")
	require.EqualError(t, &APIError{StatusCode: 422, Message: "Validation Failed", Errors: []string{"a", "b"}, Hint: "fix it", ParenHint: true},
		"status 422: Validation Failed: a; b (fix it)")
	require.EqualError(t, &APIError{StatusCode: 422, Message: "not processable", Errors: []string{"a", "b"}, ParenErrors: true},
		"status 422: not processable (a; b)")
	require.EqualError(t, &APIError{StatusCode: 401, Hint: "fix it", ParenHint: true}, "status 401 (fix it)")
}

// Interrupted is nil while ctx is live, and once it is done a retryable
// error naming ctx's cause.
func TestInterrupted(t *testing.T) {
	require.NoError(t, Interrupted(t.Context(), "vendor pager: create"))
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	err := Interrupted(ctx, "vendor pager: create")
	require.EqualError(t, err, "vendor pager: create: shutting down")
	require.ErrorIs(t, err, cause)
	retryable, after := IsRetryable(err)
	require.True(t, retryable)
	require.Zero(t, after)
}

// Answer reads a JSON answer; an unreadable one is the zero value.
func TestAnswer(t *testing.T) {
	type answer struct {
		Message string `json:"message"`
	}
	require.Equal(t, answer{Message: "invalid event"}, Answer[answer]([]byte(`{"message":"invalid event","status":"x"}`)))
	require.Equal(t, answer{}, Answer[answer]([]byte(`<html>bad gateway</html>`)))
	require.Equal(t, answer{}, Answer[answer](nil))
}
