// Package sqlite implements store.DaemonStore: store.Store,
// store.QueueStore (queued runs), store.AlertStore (incidents, the
// notification outbox, notifiers' per-incident state), store.LogStore,
// store.RemediationStore, store.SilenceStore, store.AcceptanceStore and
// store.GroupStore (group incidents, group.go), plus store.StatsReader (trends from run
// history), store.AuditStore (the audit log) and store.ReplayStore (the
// Slack signatures seen), with one body of SQL on two databases: an
// embedded SQLite file through the pure-Go driver modernc.org/sqlite (no
// cgo: the binary stays static), the default, or a PostgreSQL database
// through github.com/jackc/pgx/v5 (OpenPostgres), which several replicas
// share. What differs between them (placeholders, schema words, the
// schema version, JSON functions, error codes) is the dialect
// (dialect.go); the migrations are one list. CopyTo copies one store into
// another (driftwatch migrate --to postgres). docs/architecture/store.md
// has the design. Its tests run every storetest suite against both.
//
// With SQLite it owns the file's life cycle: creating it (directory 0700, file 0600),
// refusing files it must not touch (not SQLite, another program's database,
// a schema from a newer driftwatch) without writing a byte to them, the
// versioned schema migrations, and the durability settings. The database
// runs in WAL mode with synchronous=FULL: a write is on disk when the method
// returns, so neither kill -9 nor a node losing power can take back a
// committed run; at most the run in flight is lost, and RecoverRuns
// finds it at the next start.
//
// All writes go through a single connection (on PostgreSQL also under
// an advisory lock shared by every replica), so FinishRun's
// read-modify-write of a workspace's state (and FinishRunWithOutcome's of
// its incidents) is serialised without retry loops; reads use a separate
// read-only pool and, thanks to WAL, never wait for a write. Other processes may open the same file (busy_timeout and
// BEGIN IMMEDIATE serialise them), but one process should hold one Store per
// file: Open reads the file's header with a plain descriptor, and closing a
// descriptor drops every POSIX lock the process holds on that file.
//
// A write the storage refuses (a full disk, a read-only or failing file
// system, a PostgreSQL server out of disk or gone) fails with an error matching store.ErrUnavailable, so callers
// keep what they meant to write and try again; WriteHealth counts such
// failures and says whether writes are failing now (the daemon exports it
// as metrics), and the store logs when writes start failing and when they
// recover. Reads go on meanwhile.
//
// On PostgreSQL, Lead makes one replica the leader (a session advisory
// lock), and LeadHeld checks at the server that it still is (the outbox's
// fence before each attempt).
//
// It must not import audit, notify or runner. The daemon (app) opens it
// as configured (OpenConfigured); tests everywhere open it directly.
package sqlite
