package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// RemediationResults are the values of driftwatch_remediations_total's
// result label: the apply results, plus the fates of remediations that
// never ran.
var RemediationResults = []string{"applied", "failed", "verification_failed", "refused", "rejected", "expired"}

// Remediations counts finished remediations by result.
type Remediations struct {
	total *prometheus.CounterVec
}

// NewRemediations registers driftwatch_remediations_total on reg.
func NewRemediations(reg prometheus.Registerer) *Remediations {
	m := &Remediations{total: promauto.With(reg).NewCounterVec(prometheus.CounterOpts{
		Name: "driftwatch_remediations_total",
		Help: "Finished remediations, by result (applied, failed, verification_failed, refused, rejected, expired).",
	}, []string{"result"})}
	for _, r := range RemediationResults {
		m.total.WithLabelValues(r)
	}
	return m
}

// Finished counts one remediation's result.
func (m *Remediations) Finished(result string) { m.total.WithLabelValues(result).Inc() }
