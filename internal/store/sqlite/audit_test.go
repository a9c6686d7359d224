package sqlite_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

var auditT0 = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

// auditEntries are four actions over two hours: alice triggers and
// cancels, ci's token is refused a trigger, a Slack user approves.
func auditEntries() []store.AuditEntry {
	return []store.AuditEntry{
		{At: auditT0, Actor: "alice", Method: "proxy", Roles: []string{"operator"}, Action: "run.trigger",
			Target: "net", Result: store.AuditOK, Status: 202, Source: store.AuditSourcePage},
		{At: auditT0.Add(time.Hour), Actor: "token:ci", Method: "token:ci", Roles: []string{"viewer"}, Action: "run.trigger",
			Target: "net", Result: store.AuditDenied, Status: 403, Detail: "needs the operator role", Source: store.AuditSourceAPI},
		{At: auditT0.Add(time.Hour), Actor: "alice", Method: "proxy", Roles: []string{"operator"}, Action: "run.cancel",
			Target: "run-7", Result: store.AuditError, Status: 409, Detail: "conflict", Source: store.AuditSourcePage},
		{At: auditT0.Add(2 * time.Hour), Actor: "slack:U123 (bob)", Method: "slack", Action: "remediation.approve",
			Target: "rem-1", Result: store.AuditOK, Source: store.AuditSourceSlack},
	}
}

func recordAll(t *testing.T, s *sqlite.Store, es []store.AuditEntry) {
	t.Helper()
	for _, e := range es {
		require.NoError(t, s.RecordAudit(t.Context(), e))
	}
}

// summary is an entry as "actor action target result", for comparing
// orders.
func summary(es []store.AuditEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Actor + " " + e.Action + " " + e.Target + " " + e.Result
	}
	return out
}

// Entries come back as recorded, newest first (the later of two at the
// same time first), after a restart too.
func TestAuditRoundTripAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	s, err := sqlite.Open(t.Context(), path, testLogger(t))
	require.NoError(t, err)
	recordAll(t, s, auditEntries())
	require.NoError(t, s.Close())

	s = openStore(t, path)
	got, err := s.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{
		"slack:U123 (bob) remediation.approve rem-1 ok",
		"alice run.cancel run-7 error",
		"token:ci run.trigger net denied",
		"alice run.trigger net ok",
	}, summary(got))
	want := auditEntries()
	for i, e := range got {
		w := want[len(want)-1-i]
		require.True(t, e.At.Equal(w.At), "time round-trips exactly: %s", e.At)
		e.At, w.At = time.Time{}, time.Time{}
		require.NotZero(t, e.ID)
		w.ID = e.ID
		if w.Roles == nil {
			w.Roles = []string{}
		}
		w.Count = 1
		require.Equal(t, w, e)
	}
	require.Greater(t, got[0].ID, got[1].ID, "IDs grow")
}

func TestAuditFilters(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	recordAll(t, s, auditEntries())
	for name, c := range map[string]struct {
		f    store.AuditFilter
		want []string
	}{
		"since": {store.AuditFilter{Since: auditT0.Add(time.Hour)}, []string{
			"slack:U123 (bob) remediation.approve rem-1 ok", "alice run.cancel run-7 error", "token:ci run.trigger net denied"}},
		"actor":  {store.AuditFilter{Actor: "alice"}, []string{"alice run.cancel run-7 error", "alice run.trigger net ok"}},
		"action": {store.AuditFilter{Action: "run.trigger"}, []string{"token:ci run.trigger net denied", "alice run.trigger net ok"}},
		"target": {store.AuditFilter{Target: "rem-1"}, []string{"slack:U123 (bob) remediation.approve rem-1 ok"}},
		"all of them": {store.AuditFilter{Since: auditT0.Add(time.Minute), Actor: "alice", Action: "run.cancel", Target: "run-7"},
			[]string{"alice run.cancel run-7 error"}},
		"limit":       {store.AuditFilter{Limit: 2}, []string{"slack:U123 (bob) remediation.approve rem-1 ok", "alice run.cancel run-7 error"}},
		"no match":    {store.AuditFilter{Actor: "mallory"}, []string{}},
		"actor exact": {store.AuditFilter{Actor: "alic"}, []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := s.AuditEntries(t.Context(), c.f)
			require.NoError(t, err)
			require.Equal(t, c.want, summary(got))
		})
	}
	_, err := s.AuditEntries(t.Context(), store.AuditFilter{Limit: -1})
	require.ErrorContains(t, err, "negative limit")
}

// A long detail, actor or target is cut at a character boundary; an
// entry without a time or an action is refused.
func TestAuditCaps(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	long := strings.Repeat("é", store.MaxAuditDetail)
	require.NoError(t, s.RecordAudit(t.Context(), store.AuditEntry{At: auditT0, Action: "run.trigger",
		Actor: long, Target: long, Detail: long}))
	got, err := s.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	for max, v := range map[int][]string{store.MaxAuditName: {got[0].Actor, got[0].Target}, store.MaxAuditDetail: {got[0].Detail}} {
		for _, s := range v {
			require.LessOrEqual(t, len(s), max)
			require.True(t, strings.HasSuffix(s, "é…"), "cut between characters: %q", s[len(s)-8:])
		}
	}
	require.ErrorContains(t, s.RecordAudit(t.Context(), store.AuditEntry{Action: "run.trigger"}), "its time is required")
	require.ErrorContains(t, s.RecordAudit(t.Context(), store.AuditEntry{At: auditT0}), "its action is required")
}

// Prune deletes the entries older than max_age with the runs, and keeps
// the rest; without an age only the count cap applies.
func TestAuditPruneByAge(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	recordAll(t, s, auditEntries())
	_, err := s.Prune(t.Context(), 0, time.Time{})
	require.NoError(t, err)
	got, err := s.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, got, 4, "no age limit: nothing goes")

	_, err = s.Prune(t.Context(), 0, auditT0.Add(90*time.Minute))
	require.NoError(t, err)
	got, err = s.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{"slack:U123 (bob) remediation.approve rem-1 ok"}, summary(got))
}

// Beyond sqlite.KeepAudit entries, Prune deletes the oldest.
func TestAuditPruneByCount(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	const extra = 3
	// Written by one statement: through RecordAudit each entry is a
	// durable commit, and this many would take minutes. Entry i is a
	// second after entry i-1 and targets "ws-<i>".
	db := sqlite.DB(s)
	_, err := db.ExecContext(ctx, `
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
INSERT INTO audit_log (at, actor, method, roles, action, target, result, status, detail, source)
SELECT ?2 + i * 1000000000, 'alice', 'proxy', '[]', 'run.trigger', 'ws-' || i, 'ok', 202, '', 'api' FROM n`,
		sqlite.KeepAudit+extra, auditT0.UnixNano())
	require.NoError(t, err)

	_, err = s.Prune(ctx, 0, time.Time{})
	require.NoError(t, err)
	var (
		n      int
		oldest string
	)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM audit_log`).Scan(&n))
	require.Equal(t, sqlite.KeepAudit, n)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT target FROM audit_log ORDER BY seq LIMIT 1`).Scan(&oldest))
	require.Equal(t, fmt.Sprint("ws-", extra), oldest, "the oldest entries went")
}

// A file from before schema version 8 gets the audit log, keeping its
// runs.
func TestAuditMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	old, err := sqlite.OpenVersion(t.Context(), path, testLogger(t), 7)
	require.NoError(t, err)
	_, err = old.AuditEntries(t.Context(), store.AuditFilter{})
	require.Error(t, err, "no audit log at version 7")
	require.NoError(t, old.StartRun(t.Context(), store.Run{ID: "r1", Workspace: "net", Trigger: "manual", StartedAt: auditT0}))
	require.NoError(t, old.Close())

	s := openStore(t, path)
	v, err := sqlite.Pragma(t.Context(), s, "user_version")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(sqlite.SchemaVersion), v)
	recordAll(t, s, auditEntries()[:1])
	got, err := s.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{"alice run.trigger net ok"}, summary(got))
	_, err = s.Run(t.Context(), "r1")
	require.NoError(t, err)
}

// anonymousEntry is a refused request without a credential from peer, at.
func anonymousEntry(peer string, at time.Time) store.AuditEntry {
	return store.AuditEntry{At: at, Actor: "anonymous", Method: "anonymous", Action: "run.trigger", Target: "net",
		Roles: []string{"viewer"}, Result: store.AuditDenied, Status: 401, Detail: "no credential", Source: store.AuditSourceAPI,
		Anonymous: true, Peer: peer}
}

// Anonymous entries are aggregated: one per peer, action and outcome
// per minute, counting the requests, without the target or roles a
// refused caller chose; the count survives a restart.
func TestAuditAnonymousAggregated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	s := openStore(t, path)
	ctx := t.Context()
	for i := range 3 {
		e := anonymousEntry("192.0.2.7", auditT0.Add(time.Duration(i)*time.Second))
		e.Target = fmt.Sprint("ws-", i)
		require.NoError(t, s.RecordAudit(ctx, e))
	}
	many := anonymousEntry("192.0.2.7", auditT0.Add(10*time.Second))
	many.Count = 7
	require.NoError(t, s.RecordAudit(ctx, many))
	require.NoError(t, s.RecordAudit(ctx, anonymousEntry("192.0.2.8", auditT0)), "another peer")
	require.NoError(t, s.RecordAudit(ctx, anonymousEntry("192.0.2.7", auditT0.Add(time.Minute))), "the next minute")
	invalid := anonymousEntry("192.0.2.7", auditT0)
	invalid.Detail = "invalid credential"
	require.NoError(t, s.RecordAudit(ctx, invalid), "another outcome")
	require.NoError(t, s.Close())

	s = openStore(t, path)
	got, err := s.AuditEntries(ctx, store.AuditFilter{Actor: "anonymous"})
	require.NoError(t, err)
	type row struct {
		peer, detail string
		at           time.Time
		count        int
	}
	var rows []row
	for _, e := range got {
		require.True(t, e.Anonymous)
		require.Empty(t, e.Target, "a refused caller's target is not kept")
		require.Empty(t, e.Roles)
		rows = append(rows, row{e.Peer, e.Detail, e.At, e.Count})
	}
	require.Equal(t, []row{
		{"192.0.2.7", "no credential", auditT0.Add(time.Minute), 1},
		{"192.0.2.7", "invalid credential", auditT0, 1},
		{"192.0.2.8", "no credential", auditT0, 1},
		{"192.0.2.7", "no credential", auditT0, 10},
	}, rows)
}

// The regression test for issue 28 finding 3: a flood of anonymous
// entries evicts only older anonymous entries, never an identified
// caller's, and the caps hold as entries are recorded, without Prune.
func TestAuditFloodKeepsIdentifiedEntries(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	sqlite.SetAuditCaps(s, 50, 20)
	recordAll(t, s, auditEntries())
	for i := range 500 { // a new peer each time: no aggregation helps
		require.NoError(t, s.RecordAudit(ctx, anonymousEntry(fmt.Sprintf("198.51.100.%d", i%250), auditT0.Add(time.Duration(i)*time.Minute))))
	}
	var n, anon int
	db := sqlite.DB(s)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(anonymous), 0) FROM audit_log`).Scan(&n, &anon))
	require.Equal(t, 20, anon, "anonymous entries are capped as they are recorded")
	require.Equal(t, 24, n)
	got, err := s.AuditEntries(ctx, store.AuditFilter{})
	require.NoError(t, err)
	var identified []store.AuditEntry
	for _, e := range got {
		if !e.Anonymous {
			identified = append(identified, e)
		}
	}
	require.Equal(t, []string{
		"slack:U123 (bob) remediation.approve rem-1 ok",
		"alice run.cancel run-7 error",
		"token:ci run.trigger net denied",
		"alice run.trigger net ok",
	}, summary(identified), "every identified entry survives the flood")
	newest, err := s.AuditEntries(ctx, store.AuditFilter{Actor: "anonymous", Limit: 1})
	require.NoError(t, err)
	require.True(t, newest[0].At.Equal(auditT0.Add(499*time.Minute)), "the newest anonymous entries are kept")

	// Identified entries have their own cap, also kept as recorded.
	for i := range 60 {
		require.NoError(t, s.RecordAudit(ctx, store.AuditEntry{At: auditT0.Add(time.Duration(i) * time.Second), Actor: "alice",
			Action: "run.trigger", Target: fmt.Sprint("ws-", i), Result: store.AuditOK}))
	}
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(anonymous), 0) FROM audit_log`).Scan(&n, &anon))
	require.Equal(t, [2]int{70, 20}, [2]int{n, anon})
	var oldest string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT target FROM audit_log WHERE anonymous = 0 ORDER BY seq LIMIT 1`).Scan(&oldest))
	require.Equal(t, "ws-10", oldest)
}

// Prune keeps each kind's newest up to its cap: anonymous entries do not
// count against identified callers'.
func TestAuditPruneByCountPerKind(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	db := sqlite.DB(s)
	// Beyond the caps, written directly (RecordAudit would cap them).
	_, err := db.ExecContext(ctx, `
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 30)
INSERT INTO audit_log (at, actor, method, roles, action, target, result, status, detail, source, anonymous, peer, minute)
SELECT ?1 + i * 60000000000, 'anonymous', 'anonymous', '[]', 'run.trigger', '', 'denied', 401, '', 'api', i % 2, 'p', ?1 + i * 60000000000 FROM n`,
		auditT0.UnixNano())
	require.NoError(t, err)
	sqlite.SetAuditCaps(s, 10, 5)
	_, err = s.Prune(ctx, 0, time.Time{})
	require.NoError(t, err)
	var n, anon, counted int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*), sum(anonymous) FROM audit_log`).Scan(&n, &anon))
	require.Equal(t, [2]int{15, 5}, [2]int{n, anon})
	require.NoError(t, db.QueryRowContext(ctx, `SELECT sum(n) FROM audit_counts`).Scan(&counted))
	require.Equal(t, 15, counted, "the counts follow deletions")
}

// A file at schema version 8 keeps its entries, counted once each as
// identified callers'.
func TestAuditMigrationKeepsEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	old, err := sqlite.OpenVersion(t.Context(), path, testLogger(t), 8)
	require.NoError(t, err)
	for _, e := range auditEntries() {
		_, err := sqlite.DB(old).ExecContext(t.Context(), `INSERT INTO audit_log (at, actor, method, roles, action, target, result, status, detail, source)
VALUES (?, ?, ?, '[]', ?, ?, ?, ?, ?, ?)`, e.At.UnixNano(), e.Actor, e.Method, e.Action, e.Target, e.Result, e.Status, e.Detail, e.Source)
		require.NoError(t, err)
	}
	require.NoError(t, old.Close())

	s := openStore(t, path)
	got, err := s.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, got, 4)
	for _, e := range got {
		require.Equal(t, 1, e.Count)
		require.False(t, e.Anonymous)
	}
	var n int
	require.NoError(t, sqlite.DB(s).QueryRowContext(t.Context(), `SELECT n FROM audit_counts WHERE anonymous = 0`).Scan(&n))
	require.Equal(t, 4, n)
}

// A Slack signature is remembered across a restart until it expires:
// the low finding of issue 28 (the replay cache was lost on restart).
func TestRememberSignatureAcrossRestart(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	s, err := sqlite.Open(ctx, path, testLogger(t))
	require.NoError(t, err)
	until := auditT0.Add(5 * time.Minute)
	seen, err := s.RememberSignature(ctx, "v0=abc", until, auditT0)
	require.NoError(t, err)
	require.False(t, seen)
	seen, err = s.RememberSignature(ctx, "v0=abc", until, auditT0.Add(time.Second))
	require.NoError(t, err)
	require.True(t, seen, "replayed")
	require.NoError(t, s.Close())

	s = openStore(t, path)
	seen, err = s.RememberSignature(ctx, "v0=abc", until.Add(time.Minute), auditT0.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, seen, "replayed after a restart")
	seen, err = s.RememberSignature(ctx, "v0=def", until, auditT0.Add(time.Minute))
	require.NoError(t, err)
	require.False(t, seen, "another signature")
	seen, err = s.RememberSignature(ctx, "v0=abc", until.Add(10*time.Minute), until)
	require.NoError(t, err)
	require.False(t, seen, "forgotten once expired")
	var n int
	require.NoError(t, sqlite.DB(s).QueryRowContext(ctx, `SELECT count(*) FROM slack_replay`).Scan(&n))
	require.Equal(t, 1, n, "expired signatures are deleted")
}
