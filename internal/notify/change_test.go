package notify

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChangeHint(t *testing.T) {
	hints := map[int]string{403: "the token lacks pull-request write"}
	answer := func(code int) (*APIError, error) {
		ae := &APIError{StatusCode: code, Message: "Forbidden", Hint: "generic", ParenHint: true}
		return ae, fmt.Errorf("github x: open pull request: %w", ae)
	}

	ae, err := answer(403)
	got := ChangeHint(err, hints)
	require.EqualError(t, got, "github x: open pull request: status 403: Forbidden (the token lacks pull-request write)")
	require.ErrorIs(t, got, err)
	var as *APIError
	require.ErrorAs(t, got, &as)
	require.Same(t, ae, as)

	// No hint for the status, a retryable answer, no answer: unchanged.
	_, err = answer(404)
	require.Equal(t, err, ChangeHint(err, hints))
	_, err = answer(403)
	retry := Retryable(err, 0)
	require.Equal(t, retry, ChangeHint(retry, hints))
	plain := errors.New("github x: open pull request: connection refused")
	require.Equal(t, plain, ChangeHint(plain, hints))
}
