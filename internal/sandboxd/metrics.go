package sandboxd

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/corral-sh/corral/internal/httpmw"
)

// metrics are the daemon's Prometheus series, served at GET /metrics.
type metrics struct {
	http *httpmw.Metrics
	// orphans counts processes reaped as PID 1 (see run.go); 0 otherwise.
	orphans prometheus.Counter
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		http: httpmw.NewMetrics(reg, "corral_sandboxd"),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_sandboxd_orphans_reaped_total",
			Help: "Orphaned processes reaped while sandboxd runs as PID 1.",
		}),
	}
	reg.MustRegister(m.orphans,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
