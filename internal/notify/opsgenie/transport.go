package opsgenie

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// callTransport sits under the SDK's http.Client. For the one SDK call in
// progress (calls are serialised by Notifier.exec) it attaches the
// caller's context to each request, which the SDK drops, and records what
// the SDK's ApiError drops: whether a request went out, and Retry-After.
type callTransport struct {
	base http.RoundTripper

	mu  sync.Mutex
	cur *call
}

// call is the transport's view of one SDK call.
type call struct {
	ctx context.Context

	mu         sync.Mutex
	sent       bool
	retryAfter time.Duration
	releases   []func()
}

func (t *callTransport) set(c *call) {
	t.mu.Lock()
	t.cur = c
	t.mu.Unlock()
}

func (t *callTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	c := t.cur
	t.mu.Unlock()
	if c == nil {
		return t.base.RoundTrip(req)
	}
	// Cancel the request when either its own context (the http.Client's
	// Timeout) or the caller's is done.
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(c.ctx, cancel)
	release := func() { stop(); cancel() }
	c.mu.Lock()
	c.sent = true
	c.releases = append(c.releases, release)
	c.mu.Unlock()

	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	ra := notify.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	c.mu.Lock()
	c.retryAfter = ra
	c.mu.Unlock()
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// done releases the call's contexts once the SDK has returned (and so has
// read and closed every body).
func (c *call) done() (sent bool, retryAfter time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.releases {
		r()
	}
	c.releases = nil
	return c.sent, c.retryAfter
}

type releaseBody struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
