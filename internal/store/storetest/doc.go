// Package storetest is the behavioural contract of store.Store as a reusable
// test suite: Conformance runs it against any implementation, given a
// function that opens an empty store. It checks state transitions and the
// meaning of Since, errored runs keeping findings, listing order and limits,
// store.ErrNotFound, RecoverRuns, Prune's rules and concurrent use.
// AlertConformance does the same for store.AlertStore: FinishRunWithOutcome's
// single transaction, the outbox's per-incident order, retries and dead
// messages, idempotent delivery, notifier state, OutboxStats, Prune of the
// alert tables and concurrent producers and deliverers.
//
// QueueConformance (store.QueueStore: queued runs started, cancelled,
// deleted, and kept queued across restarts by RecoverRuns), LogConformance
// (store.LogStore), RemediationConformance (store.RemediationStore, with
// its alerts and FinishRunOnly), AcceptanceConformance
// (store.AcceptanceStore), GroupConformance (store.GroupStore: group
// incidents, DecideGroups' checks and messages, their pruning) and
// SessionConformance also restart the store: they take an Opener, which
// opens the store kept in a directory, and open it again on the same
// directory after closing it, to check what survives a restart. Together
// the suites cover every method of store.DaemonStore, all the daemon
// uses, but store.SilenceStore's, which store/sqlite tests itself.
//
// It imports only store, drift and test libraries; implementation-specific
// checks (files, processes, crashes) stay in the implementation's own tests.
package storetest
