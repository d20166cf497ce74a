package client_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if any goroutine of a Stream outlives the tests:
// every Stream must stop its goroutines on Close, exit or error.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := waitNoLeaks(2 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "leaked goroutines:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func waitNoLeaks(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "corral/client.(*Stream)") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
