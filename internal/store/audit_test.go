package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

type plainStore struct{ store.Store }

type replayingStore struct{ store.Store }

func (replayingStore) RememberSignature(context.Context, string, time.Time, time.Time) (bool, error) {
	return false, nil
}

// ReplayOf is the store's signature memory when it has one.
func TestReplayOf(t *testing.T) {
	require.Nil(t, store.ReplayOf(plainStore{}))
	r := replayingStore{}
	require.Equal(t, r, store.ReplayOf(r))
}
