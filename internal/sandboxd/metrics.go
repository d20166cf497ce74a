package sandboxd

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the daemon's Prometheus series, served at GET /metrics.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// orphans counts processes reaped as PID 1 (see run.go); 0 otherwise.
	orphans prometheus.Counter
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_sandboxd_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "corral_sandboxd_http_request_duration_seconds",
			Help:    "HTTP request duration by route pattern (streams count their whole life).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .1, .5, 2, 10, 60},
		}, []string{"route"}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_sandboxd_orphans_reaped_total",
			Help: "Orphaned processes reaped while sandboxd runs as PID 1.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.orphans,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
