package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// series is a one-label gauge that keeps exactly the series it was last
// given: set deletes the absent ones instead of resetting the vector, so
// a scrape between a Reset and the Sets never sees every series vanish.
type series struct {
	vec   *prometheus.GaugeVec
	mu    sync.Mutex
	names map[string]bool
}

func newSeries(vec *prometheus.GaugeVec) *series {
	return &series{vec: vec, names: map[string]bool{}}
}

// set sets a series per label value and deletes the others; added, if
// set, is told each label value that had no series before.
func (s *series) set(values map[string]float64, added func(string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.names {
		if _, ok := values[name]; !ok {
			s.vec.DeleteLabelValues(name)
			delete(s.names, name)
		}
	}
	for name, v := range values {
		s.vec.WithLabelValues(name).Set(v)
		if !s.names[name] {
			s.names[name] = true
			if added != nil {
				added(name)
			}
		}
	}
}
