package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/corral-sh/corral/internal/store/storetest"
)

// nopWriter is a ResponseWriter that costs nothing, so the benchmark
// measures the middleware alone.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}

// BenchmarkMiddlewareCached is the cost the middleware adds to a request
// with a valid, cached token: hashing, the cache, the tenant's bucket,
// the (throttled) use record and the context. It sits in front of the
// sandbox proxy, whose whole budget is 0.5 ms.
func BenchmarkMiddlewareCached(b *testing.B) {
	st, _ := storetest.Fresh(b, storetest.Backends()[0])
	a := New(st, Options{RatePerSecond: 1e9, Burst: 1 << 30})
	secret, _ := mkToken(b, st, "acme", false)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, found := FromContext(r.Context()); !found {
			b.Fatal("no principal")
		}
	})
	h := a.Middleware(ok)
	b.Run("header", func(b *testing.B) {
		r := newBenchRequest()
		w := &nopWriter{h: http.Header{}}
		auth := []string{"Bearer " + secret}
		b.ReportAllocs()
		for b.Loop() {
			r.Header["Authorization"] = auth // the middleware removes it
			h.ServeHTTP(w, r)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			r := newBenchRequest()
			w := &nopWriter{h: http.Header{}}
			auth := []string{"Bearer " + secret}
			for pb.Next() {
				r.Header["Authorization"] = auth
				h.ServeHTTP(w, r)
			}
		})
	})
}

func BenchmarkHash(b *testing.B) {
	secret, _ := NewToken()
	var dst [64]byte
	b.ReportAllocs()
	for b.Loop() {
		hashInto(&dst, secret)
	}
}

// newBenchRequest is a request with the headers a typical client sends.
func newBenchRequest() *http.Request {
	r := httptest.NewRequest("GET", "/v1/sandboxes/sb_x/files?path=/workspace", nil)
	for k, v := range map[string]string{
		"User-Agent": "corral-cli/0.1", "Accept": "application/json", "Accept-Encoding": "gzip",
		"X-Forwarded-For": "10.0.0.1", "X-Request-Id": "req_123", "Connection": "keep-alive",
	} {
		r.Header.Set(k, v)
	}
	return r
}
