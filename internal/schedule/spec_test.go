package schedule_test

import (
	"testing"
	"time"
	_ "time/tzdata" // hermetic zones: the test must not depend on the host's zoneinfo

	"github.com/stretchr/testify/require"
)

// ParseSpec is cronspec.Parse: its cases are in cronspec's tests.

// ref is a Monday, 10:00 UTC.
var ref = time.Date(2026, time.January, 5, 10, 0, 0, 0, time.UTC)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}
