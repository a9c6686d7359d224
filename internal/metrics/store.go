package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// RegisterStoreHealth exports how the store's writes fare, read from
// health at each scrape, so a full disk or a read-only file system pages
// someone before the history runs short: driftwatch_store_write_errors_total
// counts writes the storage refused, driftwatch_store_write_failing is 1
// while the last write failed.
func RegisterStoreHealth(reg prometheus.Registerer, health func() (errors uint64, failing bool)) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "driftwatch_store_write_errors_total",
			Help: "Store writes that failed because of the storage (disk full, read-only or failing file system).",
		}, func() float64 { n, _ := health(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "driftwatch_store_write_failing",
			Help: "1 while the store's last write failed because of the storage, else 0.",
		}, func() float64 {
			if _, failing := health(); failing {
				return 1
			}
			return 0
		}),
	)
}

// NewRegistry is the daemon's registry (GET /metrics): the Go runtime's
// and the process's collectors, to which New and the other parts add
// driftwatch's.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
