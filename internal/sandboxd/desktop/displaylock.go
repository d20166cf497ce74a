package desktop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/corral-sh/corral/internal/errdefs"
)

// X display numbers are claimed through lock files, as X servers claim
// them: /tmp/.X<n>-lock holds the owner's pid as "%10d\n". Xvfb checks
// them itself only when it is given a display number and no -displayfd.
// With -displayfd (the readiness signal the desktop waits on) and neither
// TCP nor abstract sockets, it takes display 0 even while another server
// serves it, and replaces that server's socket: two desktops sharing a
// /tmp (tests on one host, sandboxes sharing the host's /tmp) would then
// talk to each other's screens. So the desktop claims a free number here
// first and starts Xvfb on it, with -displayfd.

// xLockDir is where X servers keep their lock files; tests change it.
var xLockDir = "/tmp"

// maxDisplay bounds the display numbers tried.
const maxDisplay = 1000

// displayLock is a claimed display number.
type displayLock struct {
	n    int
	path string
	pid  int // the pid the file holds
}

// claimDisplay claims the lowest free display number for this process.
func claimDisplay() (*displayLock, error) {
	for n := range maxDisplay {
		path := filepath.Join(xLockDir, fmt.Sprintf(".X%d-lock", n))
		ok, err := tryLock(path, os.Getpid())
		if err != nil {
			return nil, err
		}
		if ok {
			return &displayLock{n: n, path: path, pid: os.Getpid()}, nil
		}
	}
	return nil, errdefs.Wrap(errdefs.ErrUnavailable, nil,
		fmt.Sprintf("no free X display number below %d: every %s/.X<n>-lock is held", maxDisplay, xLockDir))
}

// tryLock creates the lock file at path for pid, taking it over from an
// owner that is gone. It reports false when a live process holds it.
func tryLock(path string, pid int) (bool, error) {
	for range 2 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err == nil {
			_, werr := fmt.Fprintf(f, "%10d\n", pid)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				os.Remove(path)
				return false, fmt.Errorf("desktop: write the X lock %s: %w", path, werr)
			}
			return true, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return false, fmt.Errorf("desktop: create the X lock %s: %w", path, err)
		}
		if !stale(path) {
			return false, nil
		}
		os.Remove(path) // its owner is gone; X servers do the same
	}
	return false, nil
}

// stale reports whether the lock file at path names a process that no
// longer exists. A file being written (empty) or not holding a pid is
// left alone.
func stale(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	owner, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || owner <= 0 {
		return false
	}
	return syscall.Kill(owner, 0) == syscall.ESRCH
}

// handOver makes the lock name pid (the X server's) instead of this
// process, so that it stays held while that server lives, even past this
// process. The file is replaced whole, never seen half-written.
func (l *displayLock) handOver(pid int) error {
	tmp := fmt.Sprintf("%s.%d.tmp", l.path, os.Getpid())
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%10d\n", pid), 0o444); err != nil {
		return fmt.Errorf("desktop: write the X lock: %w", err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("desktop: write the X lock: %w", err)
	}
	l.pid = pid
	return nil
}

// release removes the lock file if it still names the pid this lock
// wrote: once the owner is gone, another process may have taken it over.
func (l *displayLock) release() {
	b, err := os.ReadFile(l.path)
	if err != nil {
		return
	}
	if owner, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && owner == l.pid {
		os.Remove(l.path)
	}
}
