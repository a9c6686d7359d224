package drift_test

import (
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// format is the id format the scheduler's, the API's and the end-to-end
// tests expect (schedule.NewRunID's until now).
var format = regexp.MustCompile(`^[0-9a-f]{16}$`)

func TestNewRunIDFormat(t *testing.T) {
	for range 1000 {
		id := drift.NewRunID()
		require.Regexp(t, format, id)
		require.Len(t, id, drift.RunIDLen)
	}
}

// Ids minted at once, from many goroutines, never repeat.
func TestNewRunIDUnique(t *testing.T) {
	const (
		workers = 8
		each    = 5000
	)
	minted := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				minted[w] = append(minted[w], drift.NewRunID())
			}
		})
	}
	wg.Wait()
	seen := make(map[string]bool, workers*each)
	for _, ids := range minted {
		for _, id := range ids {
			require.False(t, seen[id], "id %s minted twice", id)
			seen[id] = true
		}
	}
	require.Len(t, seen, workers*each)
}
