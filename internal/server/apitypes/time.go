package apitypes

import "time"

// Time is a time encoded as RFC 3339 in UTC, to the second, or null when
// zero; null, or a field left out, decodes as the zero time.
type Time struct{ time.Time }

// MarshalJSON writes t as "2026-03-14T03:00:00Z", or null.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + t.UTC().Format(time.RFC3339) + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 time, or null (the zero time).
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	return t.Time.UnmarshalJSON(b)
}
