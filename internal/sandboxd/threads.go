package sandboxd

import (
	"runtime"
	"sync"
)

// spareThreads is how many idle OS threads the daemon makes at start.
const spareThreads = 6

// reserveThreads makes the Go runtime start n more OS threads now and keep
// them idle. A sandbox's pids limit counts threads, and the runtime dies
// ("failed to create new OS thread") when it needs a thread the limit
// denies, as it does while a fork bomb holds every pid: with threads to
// spare it takes an idle one instead, and the daemon outlives the bomb.
// Each goroutine locked to its thread forces a new one; unlocked before
// they end, the threads stay with the runtime, idle (Go never ends them).
func reserveThreads(n int) {
	var locked, release, done sync.WaitGroup
	locked.Add(n)
	release.Add(1)
	for range n {
		done.Go(func() {
			runtime.LockOSThread()
			locked.Done()
			release.Wait()
			runtime.UnlockOSThread()
		})
	}
	locked.Wait()
	release.Done()
	done.Wait()
}
