package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// The regression test for issue 28 finding 3: 5,000 refused anonymous
// requests (no credential or a wrong one, random workspaces, over about
// eight minutes) leave a handful of counted entries, rate limited, and
// every entry of an identified caller, before and after, survives.
func TestAuditFloodOfAnonymousRefusals(t *testing.T) {
	h, _, o := roleOptions(t)
	var (
		mu    sync.Mutex
		clock = testNow
	)
	o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	tick := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	full, base, st := serveAudit(t, o)

	send(t, http.MethodPost, full+"/api/v1/workspaces/prod-network/runs", bearerAuth(roleTokens[auth.RoleOperator]), "")
	send(t, http.MethodPost, full+"/api/v1/runs/run-net-3/cancel", bearerAuth(roleTokens[auth.RoleViewer]), "")
	const flood = 5000
	for i := range flood {
		hdr := map[string]string(nil)
		if i%2 == 1 {
			hdr = bearerAuth("not-a-token")
		}
		code, _, _ := send(t, http.MethodPost, fmt.Sprintf("%s/api/v1/workspaces/ws-%d/runs", full, i), hdr, "")
		require.Equal(t, http.StatusUnauthorized, code)
		tick(100 * time.Millisecond)
	}
	send(t, http.MethodPost, full+"/api/v1/remediations/rem-pend/approve", bearerAuth(roleTokens[auth.RoleApprover]), "{}")

	es, err := st.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	var (
		identified []string
		anonymous  int
		counted    int
	)
	for _, e := range es {
		if !e.Anonymous {
			identified = append(identified, fmt.Sprintf("%s %s %s %s", e.Actor, e.Action, e.Target, e.Result))
			continue
		}
		anonymous++
		counted += e.Count
		require.Equal(t, "127.0.0.1", e.Peer)
		require.Empty(t, e.Target)
	}
	require.Equal(t, []string{
		"token:approver-bot remediation.approve rem-pend ok",
		"token:viewer-bot run.cancel run-net-3 denied",
		"token:operator-bot run.trigger prod-network ok",
	}, identified, "every identified caller's entry survives")
	// 500 s of flood: 9 minutes, 2 outcomes (no credential, invalid one).
	require.LessOrEqual(t, anonymous, 2*10, "one entry per peer, action, outcome and minute")
	// The peer's bucket: its burst, then a write a second.
	require.InDelta(t, anonPeerBurst+flood/10, counted, 2, "written within the rate limit")
	require.Contains(t, h.logs.String(), "anonymous refusals not written to the audit log: rate limit exceeded")

	// The API and the page show the count.
	viewer := bearerAuth(roleTokens[auth.RoleViewer])
	a := getAudit(t, base+"/api/v1/audit?actor=anonymous&limit=1", viewer)
	require.Len(t, a.Entries, 1)
	require.True(t, a.Entries[0].Anonymous)
	require.Equal(t, "127.0.0.1", a.Entries[0].Peer)
	require.Greater(t, a.Entries[0].Count, 1)
	require.Equal(t, 1, getAudit(t, base+"/api/v1/audit?actor=token:operator-bot", viewer).Entries[0].Count)
	code, _, body := do(t, http.MethodGet, base+"/audit?actor=anonymous&limit=1", viewer)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, fmt.Sprintf(`requests within this minute">×%d</strong>`, a.Entries[0].Count))
	require.Contains(t, body, "from 127.0.0.1")
}

// The limiter: a peer gets its burst, then its rate; other peers are not
// held back by it; all peers together are bounded; an IPv6 peer is its
// /64; drops are counted in the metric; identified entries always pass.
func TestAuditLimiter(t *testing.T) {
	now := testNow
	rec := &memAudit{}
	reg := prometheus.NewRegistry()
	var logs strings.Builder
	l := NewAuditLimiter(rec, AuditLimits{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Registerer: reg,
		Now: func() time.Time { return now }})
	anon := func(peer string) store.AuditEntry {
		return store.AuditEntry{At: now, Action: "run.trigger", Anonymous: true, Peer: peer}
	}
	record := func(e store.AuditEntry, n int) int {
		for range n {
			require.NoError(t, l.RecordAudit(t.Context(), e))
		}
		return len(rec.take())
	}
	dropped := func() float64 {
		return testutil.ToFloat64(l.dropped)
	}
	require.Equal(t, anonPeerBurst, record(anon("192.0.2.1"), 100), "the burst")
	require.InDelta(t, 70, dropped(), 0)
	require.Equal(t, 5, record(store.AuditEntry{At: now, Action: "run.trigger", Actor: "alice"}, 5), "identified: never limited")
	require.Equal(t, anonPeerBurst, record(anon("192.0.2.2"), 100), "another peer has its own bucket")
	now = now.Add(10 * time.Second)
	require.Equal(t, 10, record(anon("192.0.2.1"), 100), "then a second's worth each second")

	// An IPv6 host's addresses share its /64.
	require.Equal(t, "2001:db8:1:2::/64", AuditPeer("[2001:db8:1:2:aaaa::1]:443"))
	require.Equal(t, "2001:db8:1:2::/64", AuditPeer("[2001:db8:1:2:bbbb::9%eth0]:80"))
	require.Equal(t, "192.0.2.1", AuditPeer("[::ffff:192.0.2.1]:80"))
	require.Equal(t, "unknown", AuditPeer("@"))

	// Many peers together stop at the common bucket.
	now = now.Add(time.Hour)
	n := 0
	for i := range 1000 {
		n += record(anon(fmt.Sprintf("198.51.100.%d", i%250)), 1)
	}
	require.Equal(t, anonBurst, n)
	require.Contains(t, logs.String(), "rate limit exceeded")
	require.Equal(t, 2, strings.Count(logs.String(), "rate limit exceeded"), "at most a line a minute: 800 drops, an hour apart")
}

// AuditFor records in the store's audit log behind the limiter, and is nil
// for a store that keeps none.
func TestAuditFor(t *testing.T) {
	o := AuditLimits{Logger: slog.New(slog.DiscardHandler)}
	require.Nil(t, AuditFor(newFakeStore(), o))
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	rec := AuditFor(st, o)
	require.IsType(t, &AuditLimiter{}, rec)
	require.NoError(t, rec.RecordAudit(t.Context(), store.AuditEntry{At: testNow, Actor: "token:ci", Method: "token:ci", Action: "run.trigger", Result: store.AuditOK}))
	es, err := st.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, es, 1, "recorded in the store")
	require.Equal(t, "token:ci", es[0].Actor)
}
