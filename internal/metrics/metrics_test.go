package metrics

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

const workspaceHelp = `
# HELP driftwatch_workspace_findings Counted findings of each workspace's latest successful run, by kind (drift, pending, forbidden, check).
# TYPE driftwatch_workspace_findings gauge
# HELP driftwatch_workspace_last_run_timestamp_seconds Unix time the workspace's last finished run started (0 if it never ran).
# TYPE driftwatch_workspace_last_run_timestamp_seconds gauge
# HELP driftwatch_workspace_last_success_timestamp_seconds Unix time the workspace's last non-errored run finished (0 if it never succeeded).
# TYPE driftwatch_workspace_last_success_timestamp_seconds gauge
# HELP driftwatch_workspace_status_since_timestamp_seconds Unix time the workspace's current status began (0 before its first run): drift age is time() minus this while the status is drift.
# TYPE driftwatch_workspace_status_since_timestamp_seconds gauge
# HELP driftwatch_workspace_status Current status of each configured workspace: 1 for its status, 0 for the others (unknown before its first run).
# TYPE driftwatch_workspace_status gauge
`

var workspaceNames = []string{
	"driftwatch_workspace_status",
	"driftwatch_workspace_findings",
	"driftwatch_workspace_last_run_timestamp_seconds",
	"driftwatch_workspace_last_success_timestamp_seconds",
	"driftwatch_workspace_status_since_timestamp_seconds",
}

// snapshots is a concurrency-safe, settable snapshot source.
type snapshots struct {
	mu sync.Mutex
	ws []WorkspaceSnapshot
}

func (s *snapshots) set(ws ...WorkspaceSnapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws = ws
}

func (s *snapshots) get() []WorkspaceSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]WorkspaceSnapshot(nil), s.ws...)
}

func TestWorkspaceGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := &snapshots{}
	New(reg, src.get)
	src.set(
		WorkspaceSnapshot{
			Name:          "net",
			Status:        drift.StatusDrift,
			Counts:        drift.Counts{Drift: 2, Pending: 1, Check: 1, Noise: 7},
			LastRunAt:     time.Unix(1767225600, 0),
			LastSuccessAt: time.Unix(1767225660, 500_000_000),
			StatusSince:   time.Unix(1767200000, 0),
		},
		WorkspaceSnapshot{
			Name:        "db",
			Status:      drift.StatusErrored,
			Counts:      drift.Counts{Forbidden: 3},
			LastRunAt:   time.Unix(1767225700, 0),
			StatusSince: time.Unix(1767225700, 0),
		},
		WorkspaceSnapshot{Name: "new"},
	)

	want := workspaceHelp + `
driftwatch_workspace_findings{kind="check",workspace="db"} 0
driftwatch_workspace_findings{kind="check",workspace="net"} 1
driftwatch_workspace_findings{kind="check",workspace="new"} 0
driftwatch_workspace_findings{kind="drift",workspace="db"} 0
driftwatch_workspace_findings{kind="drift",workspace="net"} 2
driftwatch_workspace_findings{kind="drift",workspace="new"} 0
driftwatch_workspace_findings{kind="forbidden",workspace="db"} 3
driftwatch_workspace_findings{kind="forbidden",workspace="net"} 0
driftwatch_workspace_findings{kind="forbidden",workspace="new"} 0
driftwatch_workspace_findings{kind="pending",workspace="db"} 0
driftwatch_workspace_findings{kind="pending",workspace="net"} 1
driftwatch_workspace_findings{kind="pending",workspace="new"} 0
driftwatch_workspace_last_run_timestamp_seconds{workspace="db"} 1.7672257e+09
driftwatch_workspace_last_run_timestamp_seconds{workspace="net"} 1.7672256e+09
driftwatch_workspace_last_run_timestamp_seconds{workspace="new"} 0
driftwatch_workspace_last_success_timestamp_seconds{workspace="db"} 0
driftwatch_workspace_last_success_timestamp_seconds{workspace="net"} 1.7672256605e+09
driftwatch_workspace_last_success_timestamp_seconds{workspace="new"} 0
driftwatch_workspace_status_since_timestamp_seconds{workspace="db"} 1.7672257e+09
driftwatch_workspace_status_since_timestamp_seconds{workspace="net"} 1.7672e+09
driftwatch_workspace_status_since_timestamp_seconds{workspace="new"} 0
driftwatch_workspace_status{status="clean",workspace="db"} 0
driftwatch_workspace_status{status="clean",workspace="net"} 0
driftwatch_workspace_status{status="clean",workspace="new"} 0
driftwatch_workspace_status{status="drift",workspace="db"} 0
driftwatch_workspace_status{status="drift",workspace="net"} 1
driftwatch_workspace_status{status="drift",workspace="new"} 0
driftwatch_workspace_status{status="errored",workspace="db"} 1
driftwatch_workspace_status{status="errored",workspace="net"} 0
driftwatch_workspace_status{status="errored",workspace="new"} 0
driftwatch_workspace_status{status="forbidden",workspace="db"} 0
driftwatch_workspace_status{status="forbidden",workspace="net"} 0
driftwatch_workspace_status{status="forbidden",workspace="new"} 0
driftwatch_workspace_status{status="pending",workspace="db"} 0
driftwatch_workspace_status{status="pending",workspace="net"} 0
driftwatch_workspace_status{status="pending",workspace="new"} 0
driftwatch_workspace_status{status="unknown",workspace="db"} 0
driftwatch_workspace_status{status="unknown",workspace="net"} 0
driftwatch_workspace_status{status="unknown",workspace="new"} 1
driftwatch_workspace_status{status="validation",workspace="db"} 0
driftwatch_workspace_status{status="validation",workspace="net"} 0
driftwatch_workspace_status{status="validation",workspace="new"} 0
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), workspaceNames...))
}

func TestWorkspaceRemovedLeavesNoSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := &snapshots{}
	New(reg, src.get)
	src.set(WorkspaceSnapshot{Name: "a", Status: drift.StatusClean}, WorkspaceSnapshot{Name: "b", Status: drift.StatusClean})
	n, err := testutil.GatherAndCount(reg, "driftwatch_workspace_status")
	require.NoError(t, err)
	require.Equal(t, 14, n)

	// The config was reloaded without b.
	src.set(WorkspaceSnapshot{Name: "a", Status: drift.StatusPending, Counts: drift.Counts{Pending: 1}})
	want := `
# HELP driftwatch_workspace_status Current status of each configured workspace: 1 for its status, 0 for the others (unknown before its first run).
# TYPE driftwatch_workspace_status gauge
driftwatch_workspace_status{status="clean",workspace="a"} 0
driftwatch_workspace_status{status="drift",workspace="a"} 0
driftwatch_workspace_status{status="errored",workspace="a"} 0
driftwatch_workspace_status{status="forbidden",workspace="a"} 0
driftwatch_workspace_status{status="pending",workspace="a"} 1
driftwatch_workspace_status{status="unknown",workspace="a"} 0
driftwatch_workspace_status{status="validation",workspace="a"} 0
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "driftwatch_workspace_status"))

	src.set()
	n, err = testutil.GatherAndCount(reg, workspaceNames...)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestStatusNotAVerdictIsUnknown(t *testing.T) {
	for _, s := range []drift.Status{"", "running", "interrupted", "bogus"} {
		t.Run(string(s), func(t *testing.T) {
			require.Equal(t, StatusUnknown, exportedStatus(s))
		})
	}
	for _, s := range statuses[:5] {
		t.Run(string(s), func(t *testing.T) {
			require.Equal(t, s, exportedStatus(s))
		})
	}
}

func TestRunFinished(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, nil)
	m.RunFinished(drift.StatusDrift, []drift.Phase{
		{Name: "source", Duration: 50 * time.Millisecond},
		{Name: "init", Duration: 2 * time.Second},
		{Name: "plan", Duration: 40 * time.Second},
		{Name: "show", Duration: 700 * time.Millisecond},
		{Name: "classify", Duration: 250 * time.Millisecond},
	})
	// An errored run that failed in init: only the phases it reached.
	m.RunFinished(drift.StatusErrored, []drift.Phase{
		{Name: "source", Duration: 200 * time.Millisecond},
		{Name: "init", Duration: 31 * time.Minute},
	})

	want := `
# HELP driftwatch_runs_total Finished workspace runs, by result (clean, pending, validation, drift, forbidden, errored).
# TYPE driftwatch_runs_total counter
driftwatch_runs_total{result="clean"} 0
driftwatch_runs_total{result="drift"} 1
driftwatch_runs_total{result="errored"} 1
driftwatch_runs_total{result="forbidden"} 0
driftwatch_runs_total{result="pending"} 0
driftwatch_runs_total{result="validation"} 0
# HELP driftwatch_run_duration_seconds Duration of finished runs, by phase (source, init, plan, show, classify) and in total.
# TYPE driftwatch_run_duration_seconds histogram
` + histogram("classify", 0.25, 1, 0.25) +
		histogram("init", 1862, 2, 2, 1860) +
		histogram("plan", 40, 1, 40) +
		histogram("show", 0.7, 1, 0.7) +
		histogram("source", 0.25, 2, 0.05, 0.2) +
		histogram("total", 1903.2, 2, 43, 1860.2)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"driftwatch_runs_total", "driftwatch_run_duration_seconds"))
}

// histogram renders the exposition of one phase's histogram with the
// given sum, count and observations (to fill the buckets).
func histogram(phase string, sum float64, count int, obs ...float64) string {
	var b strings.Builder
	for _, le := range DurationBuckets {
		n := 0
		for _, o := range obs {
			if o <= le {
				n++
			}
		}
		b.WriteString("driftwatch_run_duration_seconds_bucket{phase=\"" + phase + "\",le=\"" + formatFloat(le) + "\"} " + formatFloat(float64(n)) + "\n")
	}
	b.WriteString("driftwatch_run_duration_seconds_bucket{phase=\"" + phase + "\",le=\"+Inf\"} " + formatFloat(float64(count)) + "\n")
	b.WriteString("driftwatch_run_duration_seconds_sum{phase=\"" + phase + "\"} " + formatFloat(sum) + "\n")
	b.WriteString("driftwatch_run_duration_seconds_count{phase=\"" + phase + "\"} " + formatFloat(float64(count)) + "\n")
	return b.String()
}

func TestRunFinishedWithoutPhases(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, nil)
	m.RunFinished(drift.StatusErrored, nil)
	require.Equal(t, 1.0, testutil.ToFloat64(m.runs.WithLabelValues("errored"))) //nolint:testifylint // float-compare: a whole-number count, exact in float64
	n, err := testutil.GatherAndCount(reg, "driftwatch_run_duration_seconds")
	require.NoError(t, err)
	require.Zero(t, n, "a run with no phases observes no duration")
}

func TestSkippedAndQueue(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, nil)
	m.Skipped("net")
	m.Skipped("net")
	m.Skipped("db")
	m.SetQueue(5, 2)
	m.SetQueue(3, 4)

	want := `
# HELP driftwatch_active_runs Runs in progress.
# TYPE driftwatch_active_runs gauge
driftwatch_active_runs 4
# HELP driftwatch_queue_depth Runs waiting for a free slot under the concurrency cap.
# TYPE driftwatch_queue_depth gauge
driftwatch_queue_depth 3
# HELP driftwatch_runs_skipped_total Scheduled runs skipped because the workspace's previous run was still going.
# TYPE driftwatch_runs_skipped_total counter
driftwatch_runs_skipped_total{workspace="db"} 1
driftwatch_runs_skipped_total{workspace="net"} 2
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"driftwatch_active_runs", "driftwatch_queue_depth", "driftwatch_runs_skipped_total"))
}

func TestNoRegistererRegistersNothing(t *testing.T) {
	m := New(nil, func() []WorkspaceSnapshot { return []WorkspaceSnapshot{{Name: "a"}} })
	m.RunFinished(drift.StatusClean, []drift.Phase{{Name: "plan", Duration: time.Second}})
	m.Skipped("a")
	m.SetQueue(1, 1)
	m.NotificationResult("slack", NotificationDelivered)
	m.SetNotificationsPending(map[string]int{"slack": 1})
	m.SetNotificationsPending(nil)
	require.Equal(t, 1.0, testutil.ToFloat64(m.runs.WithLabelValues("clean"))) //nolint:testifylint // float-compare: a whole-number count, exact in float64
}

func TestDuplicateRegistrationPanics(t *testing.T) {
	reg := prometheus.NewRegistry()
	New(reg, nil)
	require.Panics(t, func() { New(reg, nil) })
}

func TestLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, func() []WorkspaceSnapshot { return []WorkspaceSnapshot{{Name: "a"}} })
	m.RunFinished(drift.StatusClean, []drift.Phase{{Name: "plan", Duration: time.Second}})
	m.Skipped("a")
	m.SetNotificationsPending(map[string]int{"slack": 2})
	m.NotificationResult("slack", NotificationRetry)
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func TestNotifications(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, nil)
	names := []string{"driftwatch_notifications_total", "driftwatch_notifications_pending"}
	n, err := testutil.GatherAndCount(reg, names...)
	require.NoError(t, err)
	require.Zero(t, n, "no notifier, no series")

	m.SetNotificationsPending(map[string]int{"slack-oncall": 3, "opsgenie": 0})
	m.NotificationResult("slack-oncall", NotificationDelivered)
	m.NotificationResult("slack-oncall", NotificationDelivered)
	m.NotificationResult("slack-oncall", NotificationRetry)
	m.NotificationResult("opsgenie", NotificationFailed)
	// A notifier removed from the config still has messages dying in the
	// outbox: counted, though it has no pending gauge.
	m.NotificationResult("webhook-old", NotificationFailed)
	want := `
# HELP driftwatch_notifications_pending Notifications in the outbox not yet delivered (and not given up on), by notifier.
# TYPE driftwatch_notifications_pending gauge
driftwatch_notifications_pending{notifier="opsgenie"} 0
driftwatch_notifications_pending{notifier="slack-oncall"} 3
# HELP driftwatch_notifications_total Notification delivery attempts, by notifier and result (delivered, retry, failed).
# TYPE driftwatch_notifications_total counter
driftwatch_notifications_total{notifier="opsgenie",result="delivered"} 0
driftwatch_notifications_total{notifier="opsgenie",result="failed"} 1
driftwatch_notifications_total{notifier="opsgenie",result="retry"} 0
driftwatch_notifications_total{notifier="slack-oncall",result="delivered"} 2
driftwatch_notifications_total{notifier="slack-oncall",result="failed"} 0
driftwatch_notifications_total{notifier="slack-oncall",result="retry"} 1
driftwatch_notifications_total{notifier="webhook-old",result="failed"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), names...))

	// opsgenie was removed from the config: its gauge goes, its counters stay.
	m.SetNotificationsPending(map[string]int{"slack-oncall": 1})
	want = `
# HELP driftwatch_notifications_pending Notifications in the outbox not yet delivered (and not given up on), by notifier.
# TYPE driftwatch_notifications_pending gauge
driftwatch_notifications_pending{notifier="slack-oncall"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "driftwatch_notifications_pending"))

	m.SetNotificationsPending(nil)
	n, err = testutil.GatherAndCount(reg, "driftwatch_notifications_pending")
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestNotificationsConcurrent(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				m.NotificationResult("slack", NotificationDelivered)
				m.SetNotificationsPending(map[string]int{"slack": j, strconv.Itoa(i % 2): 1})
			}
		})
	}
	wg.Wait()
	require.Equal(t, 800.0, testutil.ToFloat64(m.notifications.WithLabelValues("slack", NotificationDelivered))) //nolint:testifylint // float-compare: a whole-number count, exact in float64
}

func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func TestStoreHealth(t *testing.T) {
	reg := prometheus.NewRegistry()
	var errs uint64
	var failing bool
	RegisterStoreHealth(reg, func() (uint64, bool) { return errs, failing })
	errs, failing = 3, true
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP driftwatch_store_write_errors_total Store writes that failed because of the storage (disk full, read-only or failing file system).
# TYPE driftwatch_store_write_errors_total counter
driftwatch_store_write_errors_total 3
# HELP driftwatch_store_write_failing 1 while the store's last write failed because of the storage, else 0.
# TYPE driftwatch_store_write_failing gauge
driftwatch_store_write_failing 1
`)))
	failing = false
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP driftwatch_store_write_failing 1 while the store's last write failed because of the storage, else 0.
# TYPE driftwatch_store_write_failing gauge
driftwatch_store_write_failing 0
`), "driftwatch_store_write_failing"))
}
