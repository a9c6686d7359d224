package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestGroupMetrics(t *testing.T) {
	const throttled, held = "driftwatch_concurrency_group_throttled_total", "driftwatch_concurrency_group_hold_seconds"
	reg := prometheus.NewRegistry()
	m := New(reg, nil)
	m.GroupThrottled("account=111")
	m.GroupThrottled("account=111")
	m.SetGroupHolds(map[string]time.Duration{"account=111": 90 * time.Second, "region=eu": time.Second})
	want := `
# HELP driftwatch_concurrency_group_hold_seconds Seconds left of a throttled concurrency group's hold, by group; absent when not held.
# TYPE driftwatch_concurrency_group_hold_seconds gauge
driftwatch_concurrency_group_hold_seconds{group="account=111"} 90
driftwatch_concurrency_group_hold_seconds{group="region=eu"} 1
# HELP driftwatch_concurrency_group_throttled_total Plans throttled by the cloud API, by concurrency group (LABEL=VALUE); each holds its group.
# TYPE driftwatch_concurrency_group_throttled_total counter
driftwatch_concurrency_group_throttled_total{group="account=111"} 2
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), throttled, held))

	// A hold that ended has no series.
	m.SetGroupHolds(map[string]time.Duration{"account=111": 30 * time.Second})
	want = `
# HELP driftwatch_concurrency_group_hold_seconds Seconds left of a throttled concurrency group's hold, by group; absent when not held.
# TYPE driftwatch_concurrency_group_hold_seconds gauge
driftwatch_concurrency_group_hold_seconds{group="account=111"} 30
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), held))
	problems, err := testutil.GatherAndLint(reg, throttled, held)
	require.NoError(t, err)
	require.Empty(t, problems)
}
