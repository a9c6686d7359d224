package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// StatusUnknown is the status of a workspace that has never finished a run.
const StatusUnknown drift.Status = "unknown"

// TotalPhase is the phase label of a run's total duration (the sum of its
// phases) in driftwatch_run_duration_seconds.
const TotalPhase = "total"

// statuses is every value of the status label of
// driftwatch_workspace_status, in severity order.
var statuses = []drift.Status{
	drift.StatusClean, drift.StatusPending, drift.StatusValidation, drift.StatusDrift,
	drift.StatusForbidden, drift.StatusErrored, StatusUnknown,
}

// DurationBuckets are the buckets of driftwatch_run_duration_seconds, from
// 0.1 s (a cached source phase) to 30 min (a large plan hitting its
// timeout).
var DurationBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800}

// WorkspaceSnapshot is the state of one configured workspace at scrape
// time.
type WorkspaceSnapshot struct {
	Name string
	// Status is the workspace's current status; empty (or any value that is
	// not a drift status) when it has never finished a run, exported as
	// "unknown".
	Status        drift.Status
	Counts        drift.Counts
	LastRunAt     time.Time // zero: never ran
	LastSuccessAt time.Time // zero: never succeeded
	StatusSince   time.Time // when Status began; zero: never ran
}

// Metrics holds driftwatch's counters, histograms and gauges. The zero
// value is not usable; call New. Every method is safe for concurrent use.
type Metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	skipped  *prometheus.CounterVec
	queued   prometheus.Gauge
	active   prometheus.Gauge
	// lastCycle has no labels; it is a vector so that the series only
	// exists once a scheduling cycle completed: a standby (leader
	// election) or a daemon whose scheduler never ran exports nothing
	// rather than a 0 that reads as "stuck since 1970".
	lastCycle *prometheus.GaugeVec

	notifications *prometheus.CounterVec
	// pending and held keep exactly the series they are given (series.go):
	// a scrape between a Reset and the Sets would see every series vanish.
	pending *series

	// throttled and held are the concurrency groups' (groups.go).
	throttled *prometheus.CounterVec
	held      *series
}

// Notification results, the result label of driftwatch_notifications_total.
const (
	NotificationDelivered = "delivered" // the notifier accepted the message
	NotificationRetry     = "retry"     // a transient failure; it will be retried
	NotificationFailed    = "failed"    // a permanent failure; the message is dead
)

var notificationResults = []string{NotificationDelivered, NotificationRetry, NotificationFailed}

// New registers driftwatch's metrics on reg. snapshot is called on every
// scrape to produce the per-workspace gauges; it must be safe for
// concurrent use and fast (it should read memory, not the database on
// every call if that is slow). A nil snapshot exports no workspace gauges.
// A nil reg registers nothing (useful when metrics are not wanted). New
// panics if reg already has metrics with the same names, like promauto.
func New(reg prometheus.Registerer, snapshot func() []WorkspaceSnapshot) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		runs: f.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_runs_total",
			Help: "Finished workspace runs, by result (clean, pending, validation, drift, forbidden, errored).",
		}, []string{"result"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "driftwatch_run_duration_seconds",
			Help:    "Duration of finished runs, by phase (source, init, plan, show, classify) and in total.",
			Buckets: DurationBuckets,
		}, []string{"phase"}),
		skipped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_runs_skipped_total",
			Help: "Scheduled runs skipped because the workspace's previous run was still going.",
		}, []string{"workspace"}),
		queued: f.NewGauge(prometheus.GaugeOpts{
			Name: "driftwatch_queue_depth",
			Help: "Runs waiting for a free slot under the concurrency cap.",
		}),
		active: f.NewGauge(prometheus.GaugeOpts{
			Name: "driftwatch_active_runs",
			Help: "Runs in progress.",
		}),
		lastCycle: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_scheduler_last_cycle_timestamp_seconds",
			Help: "Unix time the scheduler last completed a scheduling cycle (fired due slots and started queued runs); absent until the first one.",
		}, nil),
		notifications: f.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_notifications_total",
			Help: "Notification delivery attempts, by notifier and result (delivered, retry, failed).",
		}, []string{"notifier", "result"}),
		pending: newSeries(f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_notifications_pending",
			Help: "Notifications in the outbox not yet delivered (and not given up on), by notifier.",
		}, []string{"notifier"})),
		throttled: f.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_concurrency_group_throttled_total",
			Help: "Plans throttled by the cloud API, by concurrency group (LABEL=VALUE); each holds its group.",
		}, []string{"group"}),
		held: newSeries(f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "driftwatch_concurrency_group_hold_seconds",
			Help: "Seconds left of a throttled concurrency group's hold, by group; absent when not held.",
		}, []string{"group"})),
	}
	// Every result starts at zero so that rate() and increase() see the
	// first run of each kind.
	for _, s := range statuses[:len(statuses)-1] {
		m.runs.WithLabelValues(string(s))
	}
	if reg != nil && snapshot != nil {
		reg.MustRegister(&workspaceCollector{snapshot: snapshot})
	}
	return m
}

// RunFinished counts a finished run with its result and observes the
// duration of each phase and of the whole run (the sum of the phases).
func (m *Metrics) RunFinished(status drift.Status, phases []drift.Phase) {
	m.runs.WithLabelValues(string(status)).Inc()
	var total time.Duration
	for _, p := range phases {
		if p.Name == "" || p.Name == TotalPhase {
			continue
		}
		m.duration.WithLabelValues(p.Name).Observe(p.Duration.Seconds())
		total += p.Duration
	}
	if len(phases) > 0 {
		m.duration.WithLabelValues(TotalPhase).Observe(total.Seconds())
	}
}

// Skipped counts a scheduled run of workspace that was skipped because the
// previous one had not finished.
func (m *Metrics) Skipped(workspace string) {
	m.skipped.WithLabelValues(workspace).Inc()
}

// SetQueue sets the number of queued and active runs.
func (m *Metrics) SetQueue(queued, active int) {
	m.queued.Set(float64(queued))
	m.active.Set(float64(active))
}

// SchedulerCycle records that the scheduler completed a scheduling cycle
// at now: it handled the due slots and started the queued runs it had room
// for. The scheduler's loop wakes at least once a minute, so a value
// minutes old means it is stuck or not running (the chart's dead man's
// switch alerts on it).
func (m *Metrics) SchedulerCycle(now time.Time) {
	m.lastCycle.WithLabelValues().Set(unixSeconds(now))
}

// NotificationResult counts one delivery attempt of notifier with its result:
// NotificationDelivered, NotificationRetry or NotificationFailed.
func (m *Metrics) NotificationResult(notifier, result string) {
	m.notifications.WithLabelValues(notifier, result).Inc()
}

// SetNotificationsPending sets the number of undelivered outbox messages per
// notifier. Notifiers absent from pending lose their series (a notifier
// removed from the config disappears); list configured notifiers with 0 to
// keep theirs. Every listed notifier's result counters are created at 0, so
// that rate() and increase() see its first delivery.
func (m *Metrics) SetNotificationsPending(pending map[string]int) {
	values := make(map[string]float64, len(pending))
	for name, n := range pending {
		values[name] = float64(n)
	}
	m.pending.set(values, func(name string) {
		for _, r := range notificationResults {
			m.notifications.WithLabelValues(name, r)
		}
	})
}
