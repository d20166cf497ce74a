package bwrap

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/runtime"
)

// BenchmarkCreate measures create -> healthy (what Create's caller waits
// for) and the Delete after it, and reports the p50 and p95 of each.
// `go test -bench Create -benchtime 20x` gives the 20-create figures.
func BenchmarkCreate(b *testing.B) {
	r := newTestRuntime(b)
	ctx := context.Background()
	var creates, deletes []time.Duration
	for b.Loop() {
		start := time.Now()
		sb, err := r.Create(ctx, runtime.Spec{Template: testTemplate, Resources: runtime.Resources{MemoryMB: 512, PIDs: 256}})
		if err != nil {
			b.Fatalf("Create: %v", err)
		}
		creates = append(creates, time.Since(start))
		start = time.Now()
		if err := r.Delete(ctx, sb.ID); err != nil {
			b.Fatalf("Delete: %v", err)
		}
		deletes = append(deletes, time.Since(start))
	}
	b.ReportMetric(ms(percentile(creates, 50)), "create-p50-ms")
	b.ReportMetric(ms(percentile(creates, 95)), "create-p95-ms")
	b.ReportMetric(ms(percentile(deletes, 50)), "delete-p50-ms")
	b.ReportMetric(ms(percentile(deletes, 95)), "delete-p95-ms")
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100 // nearest rank
	return s[max(i-1, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
