package refusal_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
)

// A Kind keeps its own text and is its own sentinel, and matches its kind
// (through wrapping too) and no other.
func TestKind(t *testing.T) {
	a := refusal.Kind("job is already queued or running", refusal.ErrBusy)
	b := refusal.Kind("job is already queued or running", refusal.ErrBusy)
	require.EqualError(t, a, "job is already queued or running")
	require.ErrorIs(t, a, refusal.ErrBusy)
	require.NotErrorIs(t, a, b, "each Kind is a sentinel of its own")
	wrapped := fmt.Errorf("job %q: %w", "net", a)
	require.ErrorIs(t, wrapped, a)
	require.ErrorIs(t, wrapped, refusal.ErrBusy)
	require.NotErrorIs(t, wrapped, refusal.ErrUnavailable)
	require.NotErrorIs(t, wrapped, refusal.ErrUnknownWorkspace)
}

// A BusyError is an ErrBusy whatever its cause, says its cause's text, or
// names the run when it has none.
func TestBusyError(t *testing.T) {
	cause := errors.New("job \"net\": job is already queued or running")
	var err error = &refusal.BusyError{RunID: "r1", Err: cause}
	require.ErrorIs(t, err, refusal.ErrBusy)
	require.ErrorIs(t, err, cause)
	require.EqualError(t, err, cause.Error())
	require.EqualError(t, &refusal.BusyError{RunID: "r1"}, "a run of this workspace is already queued or running: run r1")
	require.EqualError(t, &refusal.BusyError{}, "a run of this workspace is already queued or running")
	require.NotErrorIs(t, err, refusal.ErrUnavailable)
}
