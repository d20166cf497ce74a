package jobs_test

import (
	"slices"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/pool"
)

// BenchmarkSubmitToRunning measures, one job at a time, how long a script
// job takes from Submit to running (store timestamps: created_at to
// started_at), with cold bwrap sandboxes and with a warm pool.
func BenchmarkSubmitToRunning(b *testing.B) {
	for _, warm := range []bool{false, true} {
		name := "bwrap"
		if warm {
			name = "bwrap-pool"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, sqlite())
			var key pool.Key
			if warm {
				p := pool.New(e.sb.rt, 2, nil)
				b.Cleanup(func() { p.Close() })
				key = pool.KeyOf(runtime.Spec{Template: e.sb.tpl, Network: runtime.NetworkNone})
				p.Warm(key)
				e.sb.pool = p
			}
			m, _ := e.start(e.options())
			var lat []time.Duration
			for b.Loop() {
				for warm && e.sb.pool.Ready(key) == 0 { // measure claims from a warm pool
					time.Sleep(5 * time.Millisecond)
				}
				j := e.final(m, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"}).ID)
				if j.Status != cpapi.JobCompleted {
					b.Fatalf("job = %s %s", j.Status, j.StatusReason)
				}
				lat = append(lat, j.StartedAt.Sub(j.CreatedAt))
			}
			slices.Sort(lat)
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[len(lat)*95/100]), "p95-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkThroughput submits b.N `true` jobs at once and reports how many
// complete per second, end to end (sandbox, process, artifacts, cleanup).
func BenchmarkThroughput(b *testing.B) {
	e := newEnv(b, sqlite())
	opts := e.options()
	opts.Workers = 8
	m, _ := e.start(opts)
	b.ResetTimer()
	start := time.Now()
	var ids []string
	for range b.N {
		ids = append(ids, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"}).ID)
	}
	for _, id := range ids {
		if j := e.final(m, id); j.Status != cpapi.JobCompleted {
			b.Fatalf("job = %s %s", j.Status, j.StatusReason)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}
