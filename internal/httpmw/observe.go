package httpmw

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the request series of one server.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers <prefix>_http_requests_total and
// <prefix>_http_request_duration_seconds on reg.
func NewMetrics(reg prometheus.Registerer, prefix string) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: prefix + "_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    prefix + "_http_request_duration_seconds",
			Help:    "HTTP request duration by route pattern (streams count their whole life).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .1, .5, 2, 10, 60},
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// Observe logs each request and records it in m, labelled by the route
// pattern (never the raw path, which would explode cardinality).
func Observe(log *slog.Logger, m *Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return observe(log, m, next)
	}
}

func observe(log *slog.Logger, m *Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		d := time.Since(start)
		m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		m.latency.WithLabelValues(route).Observe(d.Seconds())
		level := slog.LevelDebug
		if status >= 500 {
			level = slog.LevelWarn
		}
		log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path,
			"route", route, "status", status, "bytes", rec.bytes, "duration", d)
	})
}

// statusRecorder remembers the status and size of a response. It keeps the
// writer's optional powers: Unwrap lets http.ResponseController and the
// WebSocket library find Flush and Hijack; ReadFrom keeps sendfile for
// file downloads.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

func (r *statusRecorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := io.Copy(r.ResponseWriter, src) // uses the inner ReadFrom (sendfile)
	r.bytes += n
	return n, err
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.status = http.StatusSwitchingProtocols
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
