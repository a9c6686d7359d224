package apitypes

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Time is written as RFC 3339 in UTC to the second, or null when zero,
// and read back from either.
func TestTime(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	for name, c := range map[string]struct {
		t    time.Time
		want string
	}{
		"zero":          {time.Time{}, `{"at":null}`},
		"utc":           {time.Date(2026, 3, 14, 3, 0, 0, 0, time.UTC), `{"at":"2026-03-14T03:00:00Z"}`},
		"another zone":  {time.Date(2026, 3, 14, 4, 0, 0, 0, paris), `{"at":"2026-03-14T03:00:00Z"}`},
		"to the second": {time.Date(2026, 3, 14, 3, 0, 0, 999_999_999, time.UTC), `{"at":"2026-03-14T03:00:00Z"}`},
		"before 1970":   {time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC), `{"at":"1969-12-31T23:59:59Z"}`},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(struct {
				At Time `json:"at"`
			}{Time{Time: c.t}})
			require.NoError(t, err)
			require.Equal(t, c.want, string(b))
			var back struct {
				At Time `json:"at"`
			}
			require.NoError(t, json.Unmarshal(b, &back))
			require.True(t, back.At.Equal(c.t.Truncate(time.Second)), "%s", back.At)
		})
	}
	var left struct {
		At Time `json:"at"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{}`), &left))
	require.True(t, left.At.IsZero(), "a field left out is the zero time")
	require.Error(t, json.Unmarshal([]byte(`{"at":"yesterday"}`), &left))
}
