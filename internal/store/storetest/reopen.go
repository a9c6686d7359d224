package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

// Opener opens the store kept in dir for a suite that also checks what
// survives a restart. dir is an empty directory the first time; after the
// suite has closed that store, it calls the Opener again with the same dir
// and expects everything written before, as a restarted daemon finds it.
// The Opener closes each store it returns when the test ends (t.Cleanup;
// Close after Close must not fail).
type Opener[S store.Store] func(t *testing.T, dir string) S

// reopenTest is one case of a suite with restarts: reopen closes the store
// and returns it opened again on the same data.
type reopenTest[S store.Store] struct {
	name string
	fn   func(t *testing.T, s S, reopen func() S)
}

// runReopenable runs each test in its own subtest, directory and store.
func runReopenable[S store.Store](t *testing.T, open Opener[S], tests []reopenTest[S]) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cur := open(t, dir)
			reopen := func() S {
				t.Helper()
				require.NoError(t, cur.Close(), "close before the restart")
				cur = open(t, dir)
				return cur
			}
			tc.fn(t, cur, reopen)
		})
	}
}
