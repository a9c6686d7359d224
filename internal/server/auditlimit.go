package server

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/internal/store"
)

// Anyone can make a refused request, so the audit log must not be a
// place where anyone can write at will: anonymous entries
// (store.AuditEntry.Anonymous) are aggregated by the store (one entry
// per peer, action and outcome per minute, with a count) and capped apart
// from identified callers', and, before that, their writes are rate
// limited here, per peer and in all. What the limit drops is counted in
// driftwatch_audit_anonymous_dropped_total and in a log line (at most one
// a minute), never written.
const (
	// anonPeerRate and anonPeerBurst bound the anonymous entries written
	// for one peer: a token bucket, per second.
	anonPeerRate  = 1.0
	anonPeerBurst = 30
	// anonRate and anonBurst bound them for all peers together, so that
	// many peers (a botnet, an IPv6 range) cannot add up to a flood.
	anonRate  = 20.0
	anonBurst = 200
	// maxAnonPeers bounds the peers whose buckets are remembered; beyond
	// it, idle buckets (full again) are forgotten, and a new peer is
	// refused while none is idle.
	maxAnonPeers = 10_000
	// anonLogEvery spaces the log lines that count dropped entries.
	anonLogEvery = time.Minute
)

// AuditLimits configures NewAuditLimiter.
type AuditLimits struct {
	// Logger is required.
	Logger *slog.Logger
	// Registerer, if set, gets driftwatch_audit_anonymous_dropped_total.
	Registerer prometheus.Registerer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// AuditLimiter is an AuditRecorder in front of another: it passes every
// entry on, but anonymous ones only within the rate limits, per peer
// (AuditEntry.Peer) and for all peers together. The daemon puts one in
// front of its store and gives it to the server and to Slack's handler,
// so both share the limits; New puts one in front of an Options.Audit
// that is not one already. Safe for concurrent use.
type AuditLimiter struct {
	next    AuditRecorder
	log     *slog.Logger
	now     func() time.Time
	dropped prometheus.Counter // nil: no metric

	mu       sync.Mutex
	all      tokenBucket
	peers    map[string]*tokenBucket
	unlogged int       // dropped since the last log line
	loggedAt time.Time // of the last log line
}

// NewAuditLimiter returns the limiter in front of next.
func NewAuditLimiter(next AuditRecorder, o AuditLimits) *AuditLimiter {
	l := &AuditLimiter{next: next, log: o.Logger, now: o.Now, peers: map[string]*tokenBucket{}}
	if l.now == nil {
		l.now = time.Now
	}
	if o.Registerer != nil {
		c := prometheus.NewCounter(prometheus.CounterOpts{
			Name: "driftwatch_audit_anonymous_dropped_total",
			Help: "Anonymous refused requests not written to the audit log because their peer, or all peers together, exceeded its rate limit.",
		})
		// A second limiter on the same registry (a server built again)
		// counts into the first one's counter.
		var are prometheus.AlreadyRegisteredError
		if err := o.Registerer.Register(c); errors.As(err, &are) {
			c, _ = are.ExistingCollector.(prometheus.Counter)
		}
		l.dropped = c
	}
	return l
}

// RecordAudit passes e on, unless it is anonymous and over the limits:
// then it is counted and dropped, and the answer is nil.
func (l *AuditLimiter) RecordAudit(ctx context.Context, e store.AuditEntry) error {
	if !e.Anonymous || l.allow(e.Peer) {
		return l.next.RecordAudit(ctx, e)
	}
	return nil
}

// allow takes a token from peer's bucket and from the common one, if both
// have one; else it counts a drop.
func (l *AuditLimiter) allow(peer string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.peers[peer]
	if !ok && len(l.peers) >= maxAnonPeers {
		for p, pb := range l.peers {
			if pb.refill(now, anonPeerRate, anonPeerBurst) >= anonPeerBurst {
				delete(l.peers, p)
			}
		}
	}
	if !ok && len(l.peers) < maxAnonPeers {
		b = &tokenBucket{}
		l.peers[peer] = b
	}
	if b != nil && b.refill(now, anonPeerRate, anonPeerBurst) >= 1 && l.all.refill(now, anonRate, anonBurst) >= 1 {
		b.tokens--
		l.all.tokens--
		return true
	}
	if l.dropped != nil {
		l.dropped.Inc()
	}
	l.unlogged++
	if now.Sub(l.loggedAt) >= anonLogEvery || now.Before(l.loggedAt) {
		l.log.Warn("anonymous refusals not written to the audit log: rate limit exceeded",
			"dropped", l.unlogged, "peer", peer, "metric", "driftwatch_audit_anonymous_dropped_total")
		l.unlogged, l.loggedAt = 0, now
	}
	return false
}

// tokenBucket is a token bucket; a new one is full.
type tokenBucket struct {
	tokens float64
	at     time.Time // of the last refill; zero: new
}

// refill adds the tokens earned since the last refill, up to burst, and
// returns how many there are. A clock that goes back earns nothing.
func (b *tokenBucket) refill(now time.Time, rate, burst float64) float64 {
	switch {
	case b.at.IsZero():
		b.tokens = burst
	case now.After(b.at):
		b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	default:
		return b.tokens
	}
	b.at = now
	return b.tokens
}

// AuditPeer is the peer an anonymous audit entry names
// (store.AuditEntry.Peer), from a request's RemoteAddr: the TCP peer,
// never a header a client or proxy sets, so it cannot be forged. An IPv4
// peer is its address; an IPv6 peer its /64, which one host usually
// holds whole; "unknown" if RemoteAddr is not an address and port.
// Behind a proxy every request has the proxy's.
func AuditPeer(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return "unknown"
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return "unknown"
	}
	return p.String()
}

// AuditFor is the audit recorder of the server (Options.Audit) and of
// Slack's handler both, so that they share the rate limits of anonymous
// entries: st's audit log (store.AuditStore) behind an AuditLimiter; nil
// when st keeps no audit log (nothing is recorded, and GET /api/v1/audit
// answers 501).
func AuditFor(st store.Store, o AuditLimits) AuditRecorder {
	a, ok := st.(store.AuditStore)
	if !ok {
		return nil
	}
	return NewAuditLimiter(a, o)
}
