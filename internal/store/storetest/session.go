package storetest

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

// SessionStore is what SessionConformance tests: a store.Store that is
// also a store.SessionStore.
type SessionStore interface {
	store.Store
	store.SessionStore
}

// SessionConformance runs the store.SessionStore contract against stores
// from open, one fresh directory and store per subtest, restarting the
// store where a case needs it.
//
// Beyond the interface's comments, the suite pins these choices: a
// session reads back exactly as created (times as instants, groups in
// order, nil groups as empty); the store keeps only what it is given (the
// id's hash, never an id); a session expires at ExpiresAt itself and is
// idle strictly before idleBefore; sessions survive a restart.
func SessionConformance(t *testing.T, open Opener[SessionStore]) {
	t.Helper()
	runReopenable(t, open, []reopenTest[SessionStore]{
		{"a session reads back as created", testSessionRoundTrip},
		{"unknown sessions are not found", testSessionNotFound},
		{"create refuses incomplete and duplicate sessions", testSessionCreateRefuses},
		{"touch moves the last use", testSessionTouch},
		{"delete ends one session", testSessionDelete},
		{"delete sessions ends one person's", testSessionDeleteSubject},
		{"sessions are listed by last use", testSessionList},
		{"prune deletes expired and idle sessions", testSessionPrune},
		{"sessions survive a restart", testSessionRestart},
		{"concurrent sign-ins and uses", testSessionConcurrent},
	})
}

// sessionHash is the hash of a session id named id.
func sessionHash(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// newSession is a session of subject made at minute m, for ttl minutes.
func newSession(id, subject string, m, ttl int) store.Session {
	return store.Session{
		IDHash: sessionHash(id), Issuer: "https://login.example.com", Subject: subject,
		Name: subject + ".name", Email: subject + "@example.com", Groups: []string{"sre", "platform"},
		CreatedAt: minutes(m), LastSeenAt: minutes(m), ExpiresAt: minutes(m + ttl),
	}
}

func createSession(t *testing.T, s SessionStore, ses store.Session) store.Session {
	t.Helper()
	require.NoError(t, s.CreateSession(t.Context(), ses))
	return ses
}

func sessionSubjects(ss []store.Session) []string {
	out := make([]string, 0, len(ss))
	for _, x := range ss {
		out = append(out, x.Subject+"/"+x.Name)
	}
	return out
}

func testSessionRoundTrip(t *testing.T, s SessionStore, _ func() SessionStore) {
	ctx := t.Context()
	want := createSession(t, s, newSession("a", "jane", 0, 60))
	got, err := s.Session(ctx, sessionHash("a"))
	require.NoError(t, err)
	equal(t, want, got)

	bare := newSession("b", "bob", 0, 60)
	bare.Groups, bare.Email, bare.Issuer = nil, "", ""
	createSession(t, s, bare)
	got, err = s.Session(ctx, sessionHash("b"))
	require.NoError(t, err)
	equal(t, bare, got)
	require.NotNil(t, got.Groups, "no groups read back as an empty list")
}

func testSessionNotFound(t *testing.T, s SessionStore, _ func() SessionStore) {
	ctx := t.Context()
	_, err := s.Session(ctx, sessionHash("nope"))
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, s.TouchSession(ctx, sessionHash("nope"), minutes(1)), store.ErrNotFound)
	require.NoError(t, s.DeleteSession(ctx, sessionHash("nope")), "deleting an unknown session is no error")
	n, err := s.DeleteSessions(ctx, store.SessionFilter{Subject: "nobody"})
	require.NoError(t, err)
	require.Zero(t, n)
	list, err := s.Sessions(ctx, store.SessionFilter{})
	require.NoError(t, err)
	require.Empty(t, list)
}

func testSessionCreateRefuses(t *testing.T, s SessionStore, _ func() SessionStore) {
	ctx := t.Context()
	for name, edit := range map[string]func(*store.Session){
		"no id hash":     func(x *store.Session) { x.IDHash = nil },
		"a short hash":   func(x *store.Session) { x.IDHash = []byte("plain-session-id") },
		"no subject":     func(x *store.Session) { x.Subject = "" },
		"no expiry":      func(x *store.Session) { x.ExpiresAt = time.Time{} },
		"no last use":    func(x *store.Session) { x.LastSeenAt = time.Time{} },
		"no create time": func(x *store.Session) { x.CreatedAt = time.Time{} },
	} {
		ses := newSession("x", "jane", 0, 60)
		edit(&ses)
		require.Error(t, s.CreateSession(ctx, ses), name)
	}
	list, err := s.Sessions(ctx, store.SessionFilter{})
	require.NoError(t, err)
	require.Empty(t, list, "nothing stored by a refused create")

	createSession(t, s, newSession("x", "jane", 0, 60))
	require.Error(t, s.CreateSession(ctx, newSession("x", "mallory", 5, 60)), "a duplicate id")
	got, err := s.Session(ctx, sessionHash("x"))
	require.NoError(t, err)
	require.Equal(t, "jane", got.Subject, "the first session stands")
}

func testSessionTouch(t *testing.T, s SessionStore, _ func() SessionStore) {
	ctx := t.Context()
	want := createSession(t, s, newSession("a", "jane", 0, 60))
	createSession(t, s, newSession("b", "jane", 0, 60))
	require.NoError(t, s.TouchSession(ctx, sessionHash("a"), minutes(30)))
	want.LastSeenAt = minutes(30)
	got, err := s.Session(ctx, sessionHash("a"))
	require.NoError(t, err)
	equal(t, want, got, "only the last use moves")
	other, err := s.Session(ctx, sessionHash("b"))
	require.NoError(t, err)
	require.True(t, other.LastSeenAt.Equal(minutes(0)), "another session is untouched")
}

func testSessionDelete(t *testing.T, s SessionStore, _ func() SessionStore) {
	ctx := t.Context()
	createSession(t, s, newSession("a", "jane", 0, 60))
	createSession(t, s, newSession("b", "jane", 1, 60))
	require.NoError(t, s.DeleteSession(ctx, sessionHash("a")))
	_, err := s.Session(ctx, sessionHash("a"))
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.Session(ctx, sessionHash("b"))
	require.NoError(t, err, "the person's other session stays")
}

func testSessionDeleteSubject(t *testing.T, s SessionStore, _ func() SessionStore) {
	ctx := t.Context()
	createSession(t, s, newSession("a", "jane", 0, 60))
	createSession(t, s, newSession("b", "jane", 1, 60))
	createSession(t, s, newSession("c", "bob", 2, 60))
	otherIssuer := newSession("d", "jane", 3, 60)
	otherIssuer.Issuer = "https://other.example.com"
	createSession(t, s, otherIssuer)

	n, err := s.DeleteSessions(ctx, store.SessionFilter{Issuer: "https://login.example.com", Subject: "jane"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, id := range []string{"a", "b"} {
		_, err := s.Session(ctx, sessionHash(id))
		require.ErrorIs(t, err, store.ErrNotFound, id)
	}
	for _, id := range []string{"c", "d"} {
		_, err := s.Session(ctx, sessionHash(id))
		require.NoError(t, err, "%s: another person, or the same subject at another issuer", id)
	}
	n, err = s.DeleteSessions(ctx, store.SessionFilter{Subject: "jane"})
	require.NoError(t, err)
	require.Equal(t, 1, n, "a subject at any issuer")
}

func testSessionList(t *testing.T, s SessionStore, _ func() SessionStore) {
	ctx := t.Context()
	createSession(t, s, newSession("a", "jane", 0, 600))
	createSession(t, s, newSession("b", "bob", 1, 600))
	createSession(t, s, newSession("c", "jane", 2, 600))
	require.NoError(t, s.TouchSession(ctx, sessionHash("a"), minutes(10)))

	all, err := s.Sessions(ctx, store.SessionFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{"jane/jane.name", "jane/jane.name", "bob/bob.name"}, sessionSubjects(all))
	require.Equal(t, sessionHash("a"), all[0].IDHash, "the most recently used first")
	require.Equal(t, sessionHash("c"), all[1].IDHash)

	jane, err := s.Sessions(ctx, store.SessionFilter{Subject: "jane"})
	require.NoError(t, err)
	require.Len(t, jane, 2)
	none, err := s.Sessions(ctx, store.SessionFilter{Issuer: "https://other.example.com"})
	require.NoError(t, err)
	require.Empty(t, none)
}

func testSessionPrune(t *testing.T, s SessionStore, _ func() SessionStore) {
	ctx := t.Context()
	createSession(t, s, newSession("expired", "a", 0, 10))     // expires at minute 10
	createSession(t, s, newSession("expires-now", "b", 0, 20)) // at 20: expired at 20
	createSession(t, s, newSession("idle", "c", 0, 600))       // last used at 0
	createSession(t, s, newSession("idle-edge", "d", 5, 600))  // last used at 5: not before 5
	createSession(t, s, newSession("alive", "e", 0, 600))      // used at 18 below
	require.NoError(t, s.TouchSession(ctx, sessionHash("alive"), minutes(18)))

	n, err := s.PruneSessions(ctx, minutes(20), time.Time{})
	require.NoError(t, err)
	require.Equal(t, 2, n, "without an idle cut, only the expired")
	n, err = s.PruneSessions(ctx, minutes(20), minutes(5))
	require.NoError(t, err)
	require.Equal(t, 1, n, "idle before minute 5")
	left, err := s.Sessions(ctx, store.SessionFilter{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"d/d.name", "e/e.name"}, sessionSubjects(left))
	n, err = s.PruneSessions(ctx, minutes(20), minutes(5))
	require.NoError(t, err)
	require.Zero(t, n, "pruning again deletes nothing")
}

func testSessionRestart(t *testing.T, s SessionStore, reopen func() SessionStore) {
	want := createSession(t, s, newSession("a", "jane", 0, 60))
	s = reopen()
	got, err := s.Session(t.Context(), sessionHash("a"))
	require.NoError(t, err)
	equal(t, want, got)
}

func testSessionConcurrent(t *testing.T, s SessionStore, _ func() SessionStore) {
	ctx := t.Context()
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("s%d", i)
			errs <- s.CreateSession(ctx, newSession(id, fmt.Sprintf("p%d", i%4), i, 60))
			_, err := s.Session(ctx, sessionHash(id))
			errs <- err
			errs <- s.TouchSession(ctx, sessionHash(id), minutes(i+1))
			_, err = s.Sessions(ctx, store.SessionFilter{Subject: "p0"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	all, err := s.Sessions(ctx, store.SessionFilter{})
	require.NoError(t, err)
	require.Len(t, all, n)
	deleted, err := s.DeleteSessions(ctx, store.SessionFilter{Subject: "p0"})
	require.NoError(t, err)
	require.Equal(t, n/4, deleted)
}
