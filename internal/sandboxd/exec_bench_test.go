package sandboxd_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
)

// BenchmarkExecTrue runs `true` through POST /v1/exec over loopback with
// keep-alive, 8 clients in parallel (b.SetParallelism scales with cores).
func BenchmarkExecTrue(b *testing.B) {
	d := sandboxdtest.Start(b, sandboxdtest.Options{})
	body := []byte(`{"command":"true"}`)
	b.SetParallelism(4) // x GOMAXPROCS (2 here) = 8 clients
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := d.HTTP.Post(d.URL+"/v1/exec", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			var buf [512]byte
			n, _ := resp.Body.Read(buf[:])
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Contains(buf[:n], []byte(`"exit_code":0`)) {
				b.Fatalf("exec true: %d %s", resp.StatusCode, buf[:n])
			}
		}
	})
}
