package remote

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Poster delivers a Result to the Receiver, retrying what may be transient.
// The zero value is ready to use.
type Poster struct {
	// Client sends the requests (default: 30 s timeout per attempt).
	Client *http.Client
	// MinBackoff and MaxBackoff bound the wait between attempts
	// (default 500 ms and 15 s); the wait doubles, with jitter.
	MinBackoff, MaxBackoff time.Duration
}

// StatusError is a delivery the Receiver refused for good.
type StatusError struct {
	Code int
	Body string // first line of the response, for the pod's log
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("result refused: %d %s", e.Code, http.StatusText(e.Code))
	}
	return fmt.Sprintf("result refused: %d %s: %s", e.Code, http.StatusText(e.Code), e.Body)
}

// ConflictError is a delivery the Receiver answered 409: it holds a
// different result for this run, posted with the run's token by someone
// else first. That is suspicious (the token leaked, and a forged result may
// have been accepted): the daemon marks the run errored, and the reporter
// exits non-zero so the pod fails too. An identical re-post (a retry after
// a lost response) is answered 204, never 409.
type ConflictError struct {
	Attempt int    // 1: the very first post was refused
	Body    string // first line of the response
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("suspicious: the daemon already holds a different result for this run "+
		"(409 Conflict on attempt %d: %s): someone else posted with this run's token; possible forgery", e.Attempt, e.Body)
}

// Post delivers res to url with token, using a zero Poster.
func Post(ctx context.Context, url, token string, res Result) error {
	var p Poster
	return p.Post(ctx, url, token, res)
}

// Post delivers res, gzip-compressed, until it is accepted, refused for good
// or ctx ends. 2xx is success, also for a retry of an attempt whose
// response was lost (the Receiver answers an identical re-post 204). 409
// is a *ConflictError at once: the Receiver holds a different result. 403
// (an unknown run or a wrong token: the Receiver does not say which, and a
// restarting daemon does not know the run until it re-arms it), 404 (the
// same from an older daemon), 408, 425, 429, 5xx and transport errors are
// retried, honouring Retry-After; any other status is a *StatusError at
// once.
func (p *Poster) Post(ctx context.Context, url, token string, res Result) error {
	body, err := encodeGzip(res)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	attempt, err := p.send(ctx, "deliver result", url, token, body)
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusConflict {
		return &ConflictError{Attempt: attempt, Body: se.Body}
	}
	return err
}

// send posts body (gzip JSON) until it is accepted, refused for good (a
// *StatusError: a status retryable does not list) or ctx ends (an error
// that begins with what), as Post describes; it returns the number of
// attempts made.
func (p *Poster) send(ctx context.Context, what, url, token string, body []byte) (int, error) {
	client, lo, hi := p.settings()
	wait := lo
	var last error
	for attempt := 1; ; attempt++ {
		retryAfter, err := p.attempt(ctx, client, url, token, body)
		if err == nil {
			return attempt, nil
		}
		var se *StatusError
		if errors.As(err, &se) && !retryable(se.Code) {
			return attempt, err
		}
		if ctx.Err() != nil && last != nil {
			// This attempt was cut short by ctx: the previous answer says
			// more about why delivery failed.
			err = last
		}
		last = err
		d := wait/2 + rand.N(wait/2+1) // jitter in [wait/2, wait]
		if retryAfter > 0 {
			d = min(retryAfter, hi)
		}
		select {
		case <-ctx.Done():
			return attempt, fmt.Errorf("%s: gave up after %d attempts: %w (last: %w)", what, attempt, context.Cause(ctx), last)
		case <-time.After(d):
		}
		wait = min(2*wait, hi)
	}
}

// settings are p's client and backoff bounds, defaults filled in.
func (p *Poster) settings() (client *http.Client, lo, hi time.Duration) {
	client = p.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	lo, hi = p.MinBackoff, p.MaxBackoff
	if lo <= 0 {
		lo = 500 * time.Millisecond
	}
	if hi < lo {
		hi = max(lo, 15*time.Second)
	}
	return client, lo, hi
}

func (p *Poster) attempt(ctx context.Context, client *http.Client, url, token string, body []byte) (retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, &StatusError{Code: http.StatusBadRequest, Body: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return 0, nil
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(msg)), "\n")
	return parseRetryAfter(resp.Header.Get("Retry-After")), &StatusError{Code: resp.StatusCode, Body: line}
}

// retryable tells whether a refusal may go away by itself: 403 and 404
// are what a daemon answers for a run it has not re-armed yet (after a
// restart or a leader handover).
func retryable(code int) bool {
	switch code {
	case http.StatusForbidden, http.StatusNotFound, http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// encodeGzip is v as gzip-compressed JSON (a request body).
func encodeGzip(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
