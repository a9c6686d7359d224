package store

import (
	"context"
	"time"
)

// Session is one signed-in browser of oidc mode (server.auth.mode: oidc),
// kept on the server: the browser's cookie holds a random session id, the
// store only the id's SHA-256 (IDHash), so a copy of the store signs no
// one in. Signing out deletes the row, and a session is checked against
// its row on every request.
type Session struct {
	// IDHash is the SHA-256 of the session id: the key.
	IDHash []byte
	// Issuer and Subject are who signed in: the provider's issuer and
	// the ID token's "sub", which together name a person for good.
	Issuer, Subject string
	// Name is the name shown (the username claim), Email the email the
	// provider verified ("" without one), Groups the groups claim.
	Name, Email string
	Groups      []string
	CreatedAt   time.Time
	// LastSeenAt is when the session was last used (the server updates
	// it at most every minute); its idle timeout counts from it.
	LastSeenAt time.Time
	// ExpiresAt ends the session whatever its use (session_ttl).
	ExpiresAt time.Time
}

// SessionFilter selects sessions. Zero fields select everything.
type SessionFilter struct {
	// Issuer and Subject must equal the session's.
	Issuer, Subject string
}

// SessionStore keeps oidc mode's sessions. The server finds it on its
// Store with a type assertion (or Options.Sessions); store/sqlite
// implements it.
type SessionStore interface {
	// CreateSession stores s. IDHash, Subject, CreatedAt, LastSeenAt and
	// ExpiresAt are required; an IDHash already stored is an error.
	CreateSession(ctx context.Context, s Session) error
	// Session returns the session of idHash, expired or not (the caller
	// checks its times), or ErrNotFound.
	Session(ctx context.Context, idHash []byte) (Session, error)
	// TouchSession sets the LastSeenAt of idHash's session to at, or
	// returns ErrNotFound.
	TouchSession(ctx context.Context, idHash []byte, at time.Time) error
	// DeleteSession deletes idHash's session (sign-out); an unknown one
	// is not an error.
	DeleteSession(ctx context.Context, idHash []byte) error
	// DeleteSessions deletes every session f selects (sign-out
	// everywhere of one person) and returns how many it deleted.
	DeleteSessions(ctx context.Context, f SessionFilter) (int, error)
	// Sessions returns the sessions f selects, the most recently used
	// first.
	Sessions(ctx context.Context, f SessionFilter) ([]Session, error)
	// PruneSessions deletes the sessions expired at now (ExpiresAt not
	// after it) and those idle since idleBefore (LastSeenAt before it;
	// zero: none for idleness), and returns how many it deleted.
	PruneSessions(ctx context.Context, now, idleBefore time.Time) (int, error)
}
