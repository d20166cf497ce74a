package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// BenchmarkAppendEvents appends batches of 100 events (one transaction
// each) to one job and reports events/s; the goal is 10,000/s or more.
func BenchmarkAppendEvents(b *testing.B) {
	for _, be := range storetest.Backends() {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/batch=%d", be.Name, batch), func(b *testing.B) {
				ctx := context.Background()
				s, _ := storetest.Fresh(b, be)
				tn := storetest.Tenant(b, s, "bench", 0)
				j := storetest.Job(b, s, tn.ID)
				in := make([]store.EventInput, batch)
				for i := range in {
					in[i] = store.EventInput{Type: "process.output",
						Data: json.RawMessage(fmt.Sprintf(`{"stream":"stdout","data":"line %d of some build output\n"}`, i))}
				}
				b.ResetTimer()
				start := time.Now()
				for b.Loop() {
					if _, err := s.AppendEvents(ctx, j.ID, in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "events/s")
			})
		}
	}
}
