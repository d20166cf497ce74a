package procs

import (
	"syscall"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/testenv"
)

// TestWaitHoldsNoThread: running children are waited for in the poller,
// not by a thread each. Threads count against a sandbox's pids limit, and
// the Go runtime dies when it cannot make one it needs.
func TestWaitHoldsNoThread(t *testing.T) {
	m := newManager(t)
	const n = 60
	before := testenv.Threads(t)
	var ps []*Process
	for range n {
		p, err := m.Spawn(sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"30"}})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	time.Sleep(200 * time.Millisecond) // let any waiter settle into its syscall
	if got := testenv.Threads(t); got-before >= n/2 {
		t.Errorf("%d running children took %d threads (%d → %d); want them waited for without a thread each", n, got-before, before, got)
	}
	for _, p := range ps {
		if err := p.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ps {
		waitDone(t, p)
		if sig := p.Snapshot().Signal; sig == nil || *sig != "SIGKILL" {
			t.Errorf("process %s ended with signal %v; want SIGKILL", p.ID(), sig)
		}
	}
}
