package webhook

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
	b, err := buildPayload(m)
	require.NoError(t, err)
	var p struct {
		Incident struct {
			Findings []map[string]any `json:"findings"`
		} `json:"incident"`
	}
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "carol@example.com", p.Incident.Findings[0]["attribution"].(map[string]any)["actor"])
	require.Equal(t, "Ann", p.Incident.Findings[1]["commit"].(map[string]any)["author"])
	require.Contains(t, p.Incident.Findings[0], "window")
}
