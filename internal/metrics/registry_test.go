package metrics

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The daemon's registry exports the Go runtime's and the process's
// metrics beside driftwatch's.
func TestNewRegistry(t *testing.T) {
	reg := NewRegistry()
	RegisterStoreHealth(reg, func() (uint64, bool) { return 2, true })
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var goroutines, store bool
	for _, mf := range mfs {
		goroutines = goroutines || mf.GetName() == "go_goroutines"
		store = store || strings.HasPrefix(mf.GetName(), "driftwatch_store_write_")
	}
	require.True(t, goroutines, "the Go collector")
	require.True(t, store, "driftwatch's")
}
