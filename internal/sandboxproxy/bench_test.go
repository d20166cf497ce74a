package sandboxproxy_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/sandboxes"
)

// The proxy's cost is the difference between the Proxy and Direct
// benchmarks of one operation; each reports its median as p50-µs.
//
//	go test -run - -bench 'Exec|Health' -benchtime 3000x ./internal/sandboxproxy/

func BenchmarkDirectExec(b *testing.B) { benchExec(b, direct(b)) }
func BenchmarkProxyExec(b *testing.B)  { benchExec(b, proxied(b)) }

func BenchmarkDirectHealth(b *testing.B) { benchHealth(b, direct(b)) }
func BenchmarkProxyHealth(b *testing.B)  { benchHealth(b, proxied(b)) }

// direct is a client of a fresh sandbox's daemon over its socket.
func direct(b *testing.B) *client.Client {
	f := newFixture(b, sandboxes.Options{})
	sb, _ := f.sandbox(b)
	endpoint, token, err := f.env.Service.Dial(ctxFor(b), f.a, sb.ID)
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.New(endpoint, client.WithToken(token))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// proxied is a client of a fresh sandbox through the proxy, over TCP.
func proxied(b *testing.B) *client.Client {
	f := newFixture(b, sandboxes.Options{})
	_, c := f.sandbox(b)
	return c
}

func benchExec(b *testing.B, c *client.Client) {
	ctx := context.Background()
	req := sandboxapi.ExecRequest{Command: "true"}
	measure(b, func() error {
		res, err := c.Exec(ctx, req)
		if err == nil && (res.ExitCode == nil || *res.ExitCode != 0) {
			b.Fatalf("true exited %v", res.ExitCode)
		}
		return err
	})
}

func benchHealth(b *testing.B, c *client.Client) {
	ctx := context.Background()
	measure(b, func() error { _, err := c.Health(ctx); return err })
}

// measure times each call of op and reports the median.
func measure(b *testing.B, op func() error) {
	for range 20 { // warm the connections
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
}
