package slack

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
	var s string
	for _, f := range m.Incident.Findings {
		s += findingLine(f) + "\n"
	}
	for _, p := range notifytest.Provenance {
		require.Contains(t, s, " — "+p)
	}
}
