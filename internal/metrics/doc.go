// Package metrics holds driftwatch's Prometheus metrics.
//
// Per-workspace gauges (status, findings, last run and last success) are
// produced by a custom collector that asks for a snapshot of every
// configured workspace at scrape time, so a workspace removed from the
// config disappears from the next scrape instead of lingering as a stale
// series. Run counters, run-phase histograms and queue gauges are updated
// by the scheduler and the audit pipeline through methods on Metrics, as
// is the time of the scheduler's last completed cycle (SchedulerCycle);
// notification counters and the outbox's pending gauge by the outbox
// dispatcher (NotificationResult, SetNotificationsPending).
//
// Nothing here is package-level state: New registers on the Registerer it
// is given, so tests use a fresh prometheus.NewRegistry each; the
// daemon's is NewRegistry (with the Go runtime's and the process's
// collectors).
package metrics
