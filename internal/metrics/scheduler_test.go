package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestSchedulerCycle(t *testing.T) {
	const name = "driftwatch_scheduler_last_cycle_timestamp_seconds"
	reg := prometheus.NewRegistry()
	m := New(reg, nil)

	// Before the first cycle (a standby, a scheduler that never started)
	// there is no series, so absent() fires and max() over replicas
	// ignores this one, instead of a 0 that reads as "stuck since 1970".
	n, err := testutil.GatherAndCount(reg, name)
	require.NoError(t, err)
	require.Zero(t, n)

	m.SchedulerCycle(time.Unix(1767225600, 250_000_000))
	m.SchedulerCycle(time.Unix(1767225660, 500_000_000))
	want := `
# HELP driftwatch_scheduler_last_cycle_timestamp_seconds Unix time the scheduler last completed a scheduling cycle (fired due slots and started queued runs); absent until the first one.
# TYPE driftwatch_scheduler_last_cycle_timestamp_seconds gauge
driftwatch_scheduler_last_cycle_timestamp_seconds 1.7672256605e+09
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), name))

	problems, err := testutil.GatherAndLint(reg, name)
	require.NoError(t, err)
	require.Empty(t, problems)

	// Without a Registerer it is a no-op that does not panic.
	New(nil, nil).SchedulerCycle(time.Now())
}
