package pages

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Every kind and status the pages badge has a colour in the stylesheet:
// the badge's text is white, so a class without a background shows an
// empty badge.
func TestEveryBadgeHasAColour(t *testing.T) {
	css, err := assets.ReadFile("assets/style.css")
	require.NoError(t, err)
	var names []string
	for _, k := range []drift.Kind{drift.KindDrift, drift.KindPending, drift.KindForbidden, drift.KindNoise, drift.KindBackend, drift.KindCheck} {
		names = append(names, string(k))
	}
	for _, st := range []drift.Status{drift.StatusClean, drift.StatusPending, drift.StatusValidation, drift.StatusDrift, drift.StatusForbidden, drift.StatusErrored} {
		names = append(names, string(st))
	}
	names = append(names, "unknown", "running", "queued", "cancelled", "interrupted", "open", "resolved") // the last two a group incident's
	for _, n := range names {
		require.Regexp(t, `\.s-`+regexp.QuoteMeta(n)+` \{ background: var\(--[a-z]+\); \}`, string(css), "badge class s-%s", n)
	}
}
