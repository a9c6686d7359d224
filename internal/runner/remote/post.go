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

// Post delivers res to url with token, using a zero Poster.
func Post(ctx context.Context, url, token string, res Result) error {
	var p Poster
	return p.Post(ctx, url, token, res)
}

// Post delivers res, gzip-compressed, until it is accepted, refused for good
// or ctx ends. 204/2xx and 409 (already delivered: an earlier attempt
// succeeded but its response was lost) are success. 404 (the daemon is
// restarting or not yet re-armed), 408, 425, 429 and 5xx and transport
// errors are retried, honouring Retry-After; any other status is a
// *StatusError at once.
func (p *Poster) Post(ctx context.Context, url, token string, res Result) error {
	body, err := encodeGzip(res)
	if err != nil {
		return err
	}
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	lo, hi := p.MinBackoff, p.MaxBackoff
	if lo <= 0 {
		lo = 500 * time.Millisecond
	}
	if hi < lo {
		hi = max(lo, 15*time.Second)
	}
	wait := lo
	var last error
	for attempt := 1; ; attempt++ {
		retryAfter, err := p.attempt(ctx, client, url, token, body)
		if err == nil {
			return nil
		}
		var se *StatusError
		if errors.As(err, &se) && !retryable(se.Code) {
			return err
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
			return fmt.Errorf("deliver result: gave up after %d attempts: %w (last: %w)", attempt, context.Cause(ctx), last)
		case <-time.After(d):
		}
		wait = min(2*wait, hi)
	}
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
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusConflict {
		return 0, nil
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(msg)), "\n")
	return parseRetryAfter(resp.Header.Get("Retry-After")), &StatusError{Code: resp.StatusCode, Body: line}
}

func retryable(code int) bool {
	switch code {
	case http.StatusNotFound, http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
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

func encodeGzip(res Result) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(res); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return buf.Bytes(), nil
}
