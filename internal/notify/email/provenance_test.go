package email

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	s := body(m)
	for _, p := range notifytest.Provenance {
		require.Contains(t, s, p)
	}
	require.NotContains(t, body(notifytest.SampleMessage(notify.EventOpen)), "changed by")
}
