package jsm

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	reqs, err := buildRequests(m)
	require.NoError(t, err)
	var all string
	for _, r := range reqs {
		var body map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &body))
		all += body["description"].(string)
	}
	for _, p := range notifytest.Provenance {
		require.Contains(t, all, p)
	}
}
