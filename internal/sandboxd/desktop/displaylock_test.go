package desktop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// lockDir points the X lock files at a fresh directory for the test.
func lockDir(t *testing.T) string {
	t.Helper()
	old := xLockDir
	xLockDir = t.TempDir()
	t.Cleanup(func() { xLockDir = old })
	return xLockDir
}

func writeLock(t *testing.T, dir string, n int, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf(".X%d-lock", n)), []byte(content), 0o444); err != nil {
		t.Fatal(err)
	}
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestClaimDisplay(t *testing.T) {
	dir := lockDir(t)
	writeLock(t, dir, 0, fmt.Sprintf("%10d\n", os.Getppid())) // a live owner: kept
	writeLock(t, dir, 1, "")                                  // being written: left alone
	writeLock(t, dir, 2, "not a pid\n")                       // not ours to judge: left alone
	writeLock(t, dir, 3, fmt.Sprintf("%10d\n", deadPID(t)))   // stale: taken over

	l, err := claimDisplay()
	if err != nil {
		t.Fatal(err)
	}
	if l.n != 3 {
		t.Fatalf("claimed display %d; want 3, the one whose owner is gone", l.n)
	}
	if b, _ := os.ReadFile(l.path); string(b) != fmt.Sprintf("%10d\n", os.Getpid()) {
		t.Errorf("lock file holds %q; want this process's pid in X's format", b)
	}
	next, err := claimDisplay()
	if err != nil || next.n != 4 {
		t.Fatalf("second claim = %+v, %v; want display 4", next, err)
	}

	// The lock passes to the X server; released, it is gone, unless
	// someone else holds it by then.
	if err := l.handOver(os.Getppid()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(l.path); string(b) != fmt.Sprintf("%10d\n", os.Getppid()) {
		t.Errorf("after handOver the lock holds %q", b)
	}
	l.release()
	if _, err := os.Stat(l.path); !os.IsNotExist(err) {
		t.Errorf("released lock still there: %v", err)
	}
	os.Remove(next.path) // taken over by another
	writeLock(t, dir, 4, fmt.Sprintf("%10d\n", os.Getppid()))
	next.release()
	if _, err := os.Stat(next.path); err != nil {
		t.Errorf("release removed a lock another process holds: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestClaimDisplayExhausted(t *testing.T) {
	dir := lockDir(t)
	for n := range maxDisplay {
		writeLock(t, dir, n, fmt.Sprintf("%10d\n", os.Getpid()))
	}
	if _, err := claimDisplay(); err == nil || !strings.Contains(err.Error(), "no free X display") {
		t.Errorf("claimDisplay with every number held = %v; want an error saying so", err)
	}
}

// TestDesktopsShareTmp: desktops whose X servers share /tmp (tests on one
// host; sandboxes on the host's /tmp) each get their own display, and each
// VNC server reaches its own screen. Xvfb -displayfd alone would put them
// all on :0, each new server taking over the socket of the one before.
func TestDesktopsShareTmp(t *testing.T) {
	need(t, "Xvfb", "x11vnc")
	const n = 3
	var wg sync.WaitGroup
	sts := make([]sandboxapi.DesktopStatus, n)
	ds := make([]*Desktop, n)
	for i := range n {
		ds[i] = newDesktop(t)
		wg.Go(func() { sts[i] = start(t, ds[i], sandboxapi.DesktopStartRequest{Width: 320, Height: 240}) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, st := range sts {
		if seen[st.Display] {
			t.Errorf("desktop %d is on %s, as another is", i, st.Display)
		}
		seen[st.Display] = true
		if !st.VNC {
			t.Errorf("desktop %d on %s has no VNC server", i, st.Display)
		}
		lock := filepath.Join(xLockDir, ".X"+strings.TrimPrefix(st.Display, ":")+"-lock")
		if b, err := os.ReadFile(lock); err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(ds[i].session().xvfb.pid) {
			t.Errorf("lock of %s = %q, %v; want the X server's pid", st.Display, b, err)
		}
	}
	for i, d := range ds {
		lock := filepath.Join(xLockDir, ".X"+strings.TrimPrefix(sts[i].Display, ":")+"-lock")
		d.Close()
		if _, err := os.Stat(lock); !os.IsNotExist(err) {
			t.Errorf("after Close the lock of %s is still there: %v", sts[i].Display, err)
		}
	}
}
