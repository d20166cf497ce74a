package reaper_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/sandboxd/reaper"
)

// childEnv selects the helper role of TestReaperChild: "init" (PID 1 of a
// fresh PID namespace) or "subreaper" (a child subreaper, no namespace).
const childEnv = "CORRAL_REAPER_CHILD"

func TestReaperIsInit(t *testing.T) {
	if got, want := reaper.IsInit(), os.Getpid() == 1; got != want {
		t.Errorf("IsInit() = %v; want %v (pid %d)", got, want, os.Getpid())
	}
}

// TestReapAsInit runs the scenario as PID 1 of a new PID namespace, as
// sandboxd runs in a container.
func TestReapAsInit(t *testing.T) {
	runChild(t, "init", &syscall.SysProcAttr{
		Cloneflags:   syscall.CLONE_NEWPID,
		Unshareflags: syscall.CLONE_NEWNS, // Go makes / private, so our /proc mount stays inside
	})
}

// TestReapAsSubreaper runs the scenario without namespaces: orphans go to a
// child subreaper exactly as they go to PID 1.
func TestReapAsSubreaper(t *testing.T) {
	runChild(t, "subreaper", nil)
}

func runChild(t *testing.T, mode string, attr *syscall.SysProcAttr) {
	t.Helper()
	if testing.Short() {
		t.Skip("spawns a helper process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReaperChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.SysProcAttr = attr
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		if attr != nil && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC)) {
			t.Skipf("cannot create a PID namespace here (%v); TestReapAsSubreaper covers reaping", err)
		}
		t.Fatalf("start helper: %v", err)
	}
	err := cmd.Wait()
	t.Logf("helper output:\n%s", out.String())
	if err != nil {
		t.Fatalf("helper (%s) failed: %v", mode, err)
	}
	if !strings.Contains(out.String(), "--- PASS: TestReaperChild") {
		t.Fatalf("helper (%s) did not pass TestReaperChild", mode)
	}
}

// TestReaperChild is the helper process. It starts a reaper, then makes
// managed children (waited by their own goroutines, one of them late),
// orphans, and an unmanaged child, and checks what was reaped by whom.
func TestReaperChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	switch mode {
	case "":
		t.Skip("helper process for TestReapAsInit and TestReapAsSubreaper")
	case "init":
		if !reaper.IsInit() {
			t.Fatalf("IsInit() = false in a new PID namespace (pid %d)", os.Getpid())
		}
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			t.Fatalf("make mounts private: %v", err)
		}
		if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			t.Fatalf("mount /proc for the namespace: %v", err)
		}
	case "subreaper":
		const prSetChildSubreaper = 36
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
			t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
		}
	}

	var mu sync.Mutex
	managed := map[int]bool{}
	reaped := map[int]syscall.WaitStatus{}
	r := reaper.Start(context.Background(), reaper.Options{
		IsManaged: func(pid int) bool { mu.Lock(); defer mu.Unlock(); return managed[pid] },
		MinAge:    50 * time.Millisecond,
		OnReap:    func(pid int, ws syscall.WaitStatus) { mu.Lock(); defer mu.Unlock(); reaped[pid] = ws },
	})
	defer r.Stop()
	start := func(register bool, script string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %q: %v", script, err)
		}
		if register {
			mu.Lock()
			managed[cmd.Process.Pid] = true
			mu.Unlock()
		}
		return cmd
	}
	reapedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(reaped) }

	// Managed children, waited at once by their own goroutines: every exit
	// status reaches its Wait.
	var wg sync.WaitGroup
	for range 20 {
		cmd := start(true, "exit 7")
		wg.Go(func() {
			if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
				t.Errorf("managed child %d: Wait() = %v; want exit status 7", cmd.Process.Pid, err)
			}
		})
	}
	// A managed child waited long after it became a zombie.
	late := start(true, "exit 3")
	time.Sleep(400 * time.Millisecond) // 8x MinAge
	if err := late.Wait(); late.ProcessState == nil || late.ProcessState.ExitCode() != 3 {
		t.Errorf("late-waited managed child: Wait() = %v; want exit status 3", err)
	}
	wg.Wait()
	if n := reapedCount(); n != 0 {
		t.Errorf("reaper reaped %d processes while only managed children existed; want 0", n)
	}

	// Orphans: sh exits at once, its two sleeps are re-parented to us.
	sh := start(true, "sleep 0.1 & sleep 0.1 & exit 0")
	if err := sh.Wait(); err != nil {
		t.Fatalf("orphan maker: %v", err)
	}
	waitFor(t, "both orphans reaped and no zombie left", func() bool {
		return reapedCount() == 2 && len(zombies(t)) == 0
	})

	// An unmanaged direct child is fair game: its own Wait loses the status.
	stray := start(false, "exit 0")
	waitFor(t, "unmanaged child reaped", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := reaped[stray.Process.Pid]
		return ok
	})
	if err := stray.Wait(); err == nil {
		t.Errorf("unmanaged child's own Wait() = nil; want an error (the reaper took its status)")
	}

	if mode != "init" {
		if err := r.TerminateAll(context.Background(), time.Second); err == nil {
			t.Errorf("TerminateAll as pid %d = nil; want a refusal", os.Getpid())
		}
		return
	}
	// As PID 1: one orphan ignores SIGTERM, one does not.
	sh = start(true, `(trap "" TERM; exec sleep 60) & sleep 60 & exit 0`)
	if err := sh.Wait(); err != nil {
		t.Fatalf("orphan maker: %v", err)
	}
	waitFor(t, "two orphans running sleep", func() bool {
		n := 0
		for _, pid := range others(t) {
			comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
			if string(comm) == "sleep\n" {
				n++
			}
		}
		return n == 2
	})
	const grace = 300 * time.Millisecond
	began := time.Now()
	if err := r.TerminateAll(context.Background(), grace); err != nil {
		t.Fatalf("TerminateAll: %v", err)
	}
	took := time.Since(began)
	if took < grace || took > 5*time.Second {
		t.Errorf("TerminateAll took %v; want between the grace (%v, one orphan ignores SIGTERM) and 5s", took, grace)
	}
	if left := others(t); len(left) != 0 {
		t.Errorf("processes left after TerminateAll: %v; want none", left)
	}
}

// zombies lists our zombie children.
func zombies(t *testing.T) []int {
	t.Helper()
	var out []int
	for _, pid := range others(t) {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(os.Getpid()) {
			out = append(out, pid)
		}
	}
	return out
}

// others lists the processes in /proc other than us; in the namespace
// test, that is everything else in the namespace.
func others(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			if os.Getpid() == 1 || parentIsUs(pid) {
				out = append(out, pid)
			}
		}
	}
	return out
}

func parentIsUs(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 1 && f[1] == strconv.Itoa(os.Getpid())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
