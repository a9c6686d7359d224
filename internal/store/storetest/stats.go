package storetest

import (
	"cmp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// StatsStore is what StatsConformance tests: a store.Store that is also a
// store.StatsReader.
type StatsStore interface {
	store.Store
	store.StatsReader
}

// StatsConformance runs the store.StatsReader contract's counts of
// findings against stores from open, one fresh store per subtest. open
// must return an empty store and close it when the test ends.
//
// Beyond the interface's comments, the suite pins these choices: an
// empty list of run IDs answers nothing (no error); an ID given twice
// counts once.
func StatsConformance(t *testing.T, open func(t *testing.T) StatsStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s StatsStore)
	}{
		{"a scan run's unmanaged and managed-twice findings are counted", testScanFound},
		{"unmanaged resource types count runs and scans", testUnmanagedTypes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// Scan findings of the suite: two unmanaged buckets, one ignored, one
// queue claimed twice.
var (
	fUnmanagedA = drift.Finding{Kind: drift.KindUnmanaged, Address: `aws_s3_bucket[bucket="a"]`, Type: "aws_s3_bucket", Action: "none"}
	fUnmanagedB = drift.Finding{Kind: drift.KindUnmanaged, Address: `aws_s3_bucket[bucket="b"]`, Type: "aws_s3_bucket", Action: "none"}
	fUnmanagedQ = drift.Finding{Kind: drift.KindUnmanaged, Address: `aws_sqs_queue[name="q"]`, Type: "aws_sqs_queue", Action: "none"}
	fUnmanagedX = drift.Finding{Kind: drift.KindUnmanaged, Address: `aws_s3_bucket[bucket="x"]`, Type: "aws_s3_bucket", Action: "none",
		Ignored: true}
	fTwice = drift.Finding{Kind: drift.KindManagedTwice, Address: `aws_sqs_queue[name="shared"]`, Type: "aws_sqs_queue", Action: "none",
		ManagedBy: []string{"a: aws_sqs_queue.shared", "b: aws_sqs_queue.shared"}}
)

func testScanFound(t *testing.T, s StatsStore) {
	run(t, s, "s1", "buckets", 0, 1, drift.StatusDrift, fUnmanagedA, fUnmanagedB, fUnmanagedX, fTwice)
	run(t, s, "s2", "buckets", 10, 11, drift.StatusDrift, fTwice)
	run(t, s, "s3", "buckets", 20, 21, drift.StatusClean)
	run(t, s, "w1", "app", 0, 1, drift.StatusDrift, fDrift) // a workspace: nothing to count
	got, err := s.ScanFound(t.Context(), []string{"s1", "s2", "s3", "w1", "s1", "unknown"})
	require.NoError(t, err)
	slices.SortFunc(got, func(a, b store.FoundCount) int { return cmp.Compare(a.RunID, b.RunID) })
	equal(t, []store.FoundCount{
		{RunID: "s1", Unmanaged: 2, ManagedTwice: 1},
		{RunID: "s2", ManagedTwice: 1},
	}, got, "s3 found nothing, w1 is a workspace's, an ignored finding is not counted, s1 given twice counts once")

	got, err = s.ScanFound(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

func testUnmanagedTypes(t *testing.T, s StatsStore) {
	run(t, s, "s1", "buckets", 0, 1, drift.StatusDrift, fUnmanagedA, fUnmanagedB, fUnmanagedX, fTwice)
	run(t, s, "s2", "buckets", 10, 11, drift.StatusDrift, fUnmanagedA)
	run(t, s, "q1", "queues", 0, 1, drift.StatusDrift, fUnmanagedA, fUnmanagedQ)
	run(t, s, "q2", "queues", 10, 11, drift.StatusDrift, fUnmanagedQ) // not asked for
	run(t, s, "w1", "app", 0, 1, drift.StatusDrift, fDrift)
	got, err := s.UnmanagedTypes(t.Context(), []string{"s1", "s2", "q1", "w1", "unknown"})
	require.NoError(t, err)
	slices.SortFunc(got, func(a, b store.TypeCount) int { return cmp.Compare(a.Type, b.Type) })
	equal(t, []store.TypeCount{
		{Type: "aws_s3_bucket", Runs: 3, Workspaces: 2}, // two findings in s1 count once; the ignored one never
		{Type: "aws_sqs_queue", Runs: 1, Workspaces: 1}, // managed twice is not unmanaged
	}, got)

	drifted, err := s.DriftedTypes(t.Context(), []string{"s1", "w1"})
	require.NoError(t, err)
	equal(t, []store.TypeCount{{Type: "aws_s3_bucket", Runs: 1, Workspaces: 1}}, drifted, "a scan's findings are not drift")

	got, err = s.UnmanagedTypes(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, got)
}
