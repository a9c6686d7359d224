package metrics

import "time"

// GroupThrottled counts a plan of concurrency group key (LABEL=VALUE)
// throttled by its cloud API.
func (m *Metrics) GroupThrottled(key string) { m.throttled.WithLabelValues(key).Inc() }

// SetGroupHolds sets what is left of each held group's hold (by key);
// the series of a group no longer held goes away.
func (m *Metrics) SetGroupHolds(left map[string]time.Duration) {
	m.heldMu.Lock()
	defer m.heldMu.Unlock()
	for key := range m.heldNames {
		if _, ok := left[key]; !ok {
			m.held.DeleteLabelValues(key)
			delete(m.heldNames, key)
		}
	}
	for key, d := range left {
		m.held.WithLabelValues(key).Set(d.Seconds())
		m.heldNames[key] = true
	}
}
