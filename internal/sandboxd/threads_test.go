package sandboxd

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func threadCount(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestReserveThreads: the threads made stay with the process, so the
// runtime has them idle for later instead of making new ones.
func TestReserveThreads(t *testing.T) {
	const n = 12
	reserveThreads(n)
	if got := threadCount(t); got <= n {
		t.Errorf("after reserving %d threads the process has %d", n, got)
	}
	before := threadCount(t)
	reserveThreads(n) // the same demand again: served by the idle ones
	// (The runtime may start a thread of its own meanwhile: a little slack.)
	if got := threadCount(t); got > before+2 {
		t.Errorf("reserving again went from %d to %d threads; want the idle ones reused", before, got)
	}
}
