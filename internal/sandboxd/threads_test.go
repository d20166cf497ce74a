package sandboxd

import (
	"testing"

	"github.com/corral-sh/corral/internal/testenv"
)

// TestReserveThreads: the threads made stay with the process, so the
// runtime has them idle for later instead of making new ones.
func TestReserveThreads(t *testing.T) {
	const n = 12
	reserveThreads(n)
	if got := testenv.Threads(t); got <= n {
		t.Errorf("after reserving %d threads the process has %d", n, got)
	}
	before := testenv.Threads(t)
	reserveThreads(n) // the same demand again: served by the idle ones
	// (The runtime may start a thread of its own meanwhile: a little slack.)
	if got := testenv.Threads(t); got > before+2 {
		t.Errorf("reserving again went from %d to %d threads; want the idle ones reused", before, got)
	}
}
