package auth

import (
	"context"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// The sessions of oidc mode, for admins (GET /api/v1/sessions, DELETE
// /api/v1/users/{subject}/sessions). A person is the provider's subject
// ("sub") at the configured issuer. Session ids are never shown: the
// store holds none.

// LiveSession is a session that has not ended, and when it ends unless
// used: the sooner of its absolute expiry and its last use plus the idle
// timeout.
type LiveSession struct {
	store.Session
	Ends time.Time
}

// LiveSessions lists the sessions not yet ended ("" subject: everyone's),
// the most recently used first.
func (a *OIDC) LiveSessions(ctx context.Context, subject string) ([]LiveSession, error) {
	list, err := a.sessions.Sessions(ctx, store.SessionFilter{Issuer: a.cfg.IssuerURL, Subject: subject})
	if err != nil {
		return nil, err
	}
	now := a.Now()
	out := make([]LiveSession, 0, len(list))
	for _, ses := range list {
		ends := ses.ExpiresAt
		if idle := ses.LastSeenAt.Add(a.idle); idle.Before(ends) {
			ends = idle
		}
		if !now.Before(ends) {
			continue // ended, not yet pruned
		}
		out = append(out, LiveSession{Session: ses, Ends: ends})
	}
	return out, nil
}

// RevokeSessions ends every session of the person, at once (their next
// request is signed out), and says how many there were.
func (a *OIDC) RevokeSessions(ctx context.Context, subject string) (int, error) {
	return a.sessions.DeleteSessions(ctx, store.SessionFilter{Issuer: a.cfg.IssuerURL, Subject: subject})
}

// IdleTimeout ends a session unused that long.
func (a *OIDC) IdleTimeout() time.Duration { return a.idle }

// SessionTTL ends a session whatever its use.
func (a *OIDC) SessionTTL() time.Duration { return a.ttl }
