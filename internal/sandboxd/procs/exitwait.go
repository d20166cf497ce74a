package procs

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit returns once process pid has exited, without reaping it, so
// that cmd.Wait after it returns at once. It waits in Go's poller on a
// pidfd (readable once the process has exited) rather than in a blocking
// waitid, which would hold an OS thread per running process. Threads
// count against a sandbox's pids limit, and the Go runtime dies when it
// cannot make one: a fork bomb in a sandbox with many running processes
// would take the daemon down with it. Where pidfds are missing it returns
// at once, and cmd.Wait blocks as before.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// The check comes after the poller is armed (RawConn.Read arms it
	// first), so an exit between the check and the wait still wakes it.
	_ = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
}
