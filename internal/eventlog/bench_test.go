package eventlog_test

import (
	"context"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/eventlog"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// BenchmarkFanout measures the time from Append to the moment all of 1,000
// subscribers (each read by its own goroutine) have the event; it reports
// the p50 and p99 of that latency. "local": appender and subscribers share a
// Broker; "replica" (PostgreSQL): they are on two Brokers over two Stores,
// so events travel by NOTIFY and a store read.
func BenchmarkFanout(b *testing.B) {
	for _, be := range storetest.Backends() {
		for _, mode := range []string{"local", "replica"} {
			b.Run(be.Name+"/"+mode, func(b *testing.B) {
				benchFanout(b, be, mode == "replica", 1000)
			})
		}
	}
}

func benchFanout(b *testing.B, be storetest.Backend, replica bool, n int) {
	ctx := context.Background()
	s, url := storetest.Fresh(b, be)
	if replica && s.Backend() != "postgres" {
		b.Skip("replicas need PostgreSQL")
	}
	pub := newBroker(b, s, eventlog.Options{})
	subBroker := pub
	if replica {
		subBroker = newBroker(b, storetest.Open(b, url), eventlog.Options{})
	}
	tn := storetest.Tenant(b, s, "bench", 0)
	j := storetest.Job(b, s, tn.ID)

	var pending atomic.Int64
	arrived := make(chan struct{}, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range n {
		sub, err := subBroker.Subscribe(rctx, j.ID, 1)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				if _, err := sub.Next(rctx); err != nil {
					return
				}
				if pending.Add(-1) == 0 {
					arrived <- struct{}{}
				}
			}
		}()
	}
	ev := []store.EventInput{msg(0)}
	var lat []time.Duration
	for b.Loop() {
		pending.Store(int64(n))
		t0 := time.Now()
		if _, err := pub.Append(ctx, j.ID, tn.ID, ev); err != nil {
			b.Fatal(err)
		}
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			b.Fatalf("%d of %d subscribers still waiting after 30s", pending.Load(), n)
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
