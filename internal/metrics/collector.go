package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/internal/drift"
)

var (
	statusDesc = prometheus.NewDesc("driftwatch_workspace_status",
		"Current status of each configured workspace: 1 for its status, 0 for the others (unknown before its first run).",
		[]string{"workspace", "status"}, nil)
	findingsDesc = prometheus.NewDesc("driftwatch_workspace_findings",
		"Counted findings of each workspace's latest successful run, by kind (drift, pending, forbidden, check).",
		[]string{"workspace", "kind"}, nil)
	lastRunDesc = prometheus.NewDesc("driftwatch_workspace_last_run_timestamp_seconds",
		"Unix time the workspace's last finished run started (0 if it never ran).",
		[]string{"workspace"}, nil)
	lastSuccessDesc = prometheus.NewDesc("driftwatch_workspace_last_success_timestamp_seconds",
		"Unix time the workspace's last non-errored run finished (0 if it never succeeded).",
		[]string{"workspace"}, nil)
	statusSinceDesc = prometheus.NewDesc("driftwatch_workspace_status_since_timestamp_seconds",
		"Unix time the workspace's current status began (0 before its first run): drift age is time() minus this while the status is drift.",
		[]string{"workspace"}, nil)
)

// workspaceCollector turns a snapshot of the configured workspaces into
// gauges at scrape time, so removed workspaces leave no stale series.
type workspaceCollector struct {
	snapshot func() []WorkspaceSnapshot
}

func (c *workspaceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- statusDesc
	ch <- findingsDesc
	ch <- lastRunDesc
	ch <- lastSuccessDesc
	ch <- statusSinceDesc
}

func (c *workspaceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range c.snapshot() {
		status := exportedStatus(w.Status)
		for _, s := range statuses {
			v := 0.0
			if s == status {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(statusDesc, prometheus.GaugeValue, v, w.Name, string(s))
		}
		for _, k := range []struct {
			kind drift.Kind
			n    int
		}{
			{drift.KindDrift, w.Counts.Drift},
			{drift.KindPending, w.Counts.Pending},
			{drift.KindForbidden, w.Counts.Forbidden},
			{drift.KindCheck, w.Counts.Check},
		} {
			ch <- prometheus.MustNewConstMetric(findingsDesc, prometheus.GaugeValue, float64(k.n), w.Name, string(k.kind))
		}
		ch <- prometheus.MustNewConstMetric(lastRunDesc, prometheus.GaugeValue, unixSeconds(w.LastRunAt), w.Name)
		ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, unixSeconds(w.LastSuccessAt), w.Name)
		ch <- prometheus.MustNewConstMetric(statusSinceDesc, prometheus.GaugeValue, unixSeconds(w.StatusSince), w.Name)
	}
}

// exportedStatus maps anything that is not a workspace verdict (never run,
// or a run status such as "running") to unknown.
func exportedStatus(s drift.Status) drift.Status {
	if s.Severity() < 0 {
		return StatusUnknown
	}
	return s
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
