package control

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// As keeps the error's text and makes it match both the cause and the
// kind, so the API answers by kind and shows the cause's words.
func TestAs(t *testing.T) {
	cause := errors.New("standby: the leader is pod-a")
	err := As(cause, ErrUnavailable)
	require.EqualError(t, err, cause.Error())
	require.ErrorIs(t, err, cause)
	require.ErrorIs(t, err, ErrUnavailable)
	require.NotErrorIs(t, err, ErrNotRunning)
}
