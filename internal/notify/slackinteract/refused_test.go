package slackinteract

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/slack"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// refusals collects what OnRefused is told.
type refusals struct {
	mu  sync.Mutex
	got []Refusal
}

func (r *refusals) note(_ context.Context, x Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, x)
}

func (r *refusals) take() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// The low finding of issue 28: a request refused before it is
// authenticated (a bad or no signature, a stale timestamp, a replay, a
// body too large) is told to OnRefused, with its peer and the reason;
// nothing from its payload (the user it claims) is.
func TestOnRefused(t *testing.T) {
	rs := &refusals{}
	f := newFixture(t)
	f.h.o.OnRefused = rs.note
	forger := f.signer
	forger.Secret = "forged-secret"
	p := f.payload(slack.ActionApprove)
	send := func(req *http.Request) int {
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		return rec.Code
	}
	unsigned := f.signer.Request(target, p.Body(), now)
	unsigned.Header.Del("X-Slack-Signature")
	big := f.signer.Request(target, append(p.Body(), make([]byte, MaxBody)...), now)
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		reason string
	}{
		{"forged", forger.Request(target, p.Body(), now), http.StatusUnauthorized, "bad signature"},
		{"stale", f.signer.Request(target, p.Body(), now.Add(-time.Hour)), http.StatusUnauthorized, "stale timestamp"},
		{"unsigned", unsigned, http.StatusUnauthorized, "missing signature headers"},
		{"too large", big, http.StatusRequestEntityTooLarge, "body too large"},
		{"genuine", f.signer.Request(target, p.Body(), now), http.StatusOK, ""},
		{"replayed", f.signer.Request(target, p.Body(), now), http.StatusUnauthorized, "replayed signature"},
	} {
		require.Equal(t, c.status, send(c.req), c.name)
		got := rs.take()
		if c.reason == "" {
			require.Empty(t, got, "%s: an authenticated request is not a refusal", c.name)
			continue
		}
		require.Equal(t, []Refusal{{At: now, RemoteAddr: "192.0.2.1:1234", Status: c.status, Reason: c.reason}}, got, c.name)
	}
	require.Len(t, f.dec.Calls(), 1, "decided once")
}

// The other half of the low finding: with Options.Replay, the signatures
// seen survive a restart, so a request replayed after one (a new
// Handler on the reopened store) is refused.
func TestReplayRefusedAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	open := func() *sqlite.Store {
		st, err := sqlite.Open(t.Context(), path, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		return st
	}
	f := newFixture(t)
	body := f.payload(slack.ActionApprove).Body()
	send := func() int {
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, f.signer.Request(target, body, now.Add(-time.Minute)))
		return rec.Code
	}

	st := open()
	f.h.o.Replay = st
	require.Equal(t, http.StatusOK, send())
	require.NoError(t, st.Close())

	st = open()
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	o := f.h.o // the same notifiers and Decider, a new Handler
	o.Replay = st
	h, err := New(o)
	require.NoError(t, err)
	f.h = h
	require.Equal(t, http.StatusUnauthorized, send(), "replayed after the restart")
	require.Contains(t, f.logs(), `reason="replayed signature"`)
	require.Len(t, f.dec.Calls(), 1, "decided once")
}

type brokenReplay struct{}

func (brokenReplay) RememberSignature(context.Context, string, time.Time, time.Time) (bool, error) {
	return false, errors.New("disk I/O error")
}

// A replay cache that fails refuses the request (503) rather than let a
// possible replay through.
func TestReplayCacheUnavailable(t *testing.T) {
	f := newFixture(t)
	f.h.o.Replay = brokenReplay{}
	require.Equal(t, http.StatusServiceUnavailable, f.serve(t, f.signer, f.payload(slack.ActionApprove), now))
	require.Empty(t, f.dec.Calls())
	require.Contains(t, f.logs(), `reason="replay cache unavailable"`)
	require.Contains(t, f.logs(), `err="disk I/O error"`)
}
