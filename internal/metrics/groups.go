package metrics

import "time"

// GroupThrottled counts a plan of concurrency group key (LABEL=VALUE)
// throttled by its cloud API.
func (m *Metrics) GroupThrottled(key string) { m.throttled.WithLabelValues(key).Inc() }

// SetGroupHolds sets what is left of each held group's hold (by key);
// the series of a group no longer held goes away.
func (m *Metrics) SetGroupHolds(left map[string]time.Duration) {
	values := make(map[string]float64, len(left))
	for key, d := range left {
		values[key] = d.Seconds()
	}
	m.held.set(values, nil)
}
