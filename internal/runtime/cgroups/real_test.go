package cgroups

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// realGroup creates a group with limits l on the machine's cgroups (root
// "" = DefaultRoot), skipping when that is impossible, and removes it when
// the test ends.
func realGroup(t *testing.T, root string, l Limits) *Group {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	h, err := Open(root)
	if err != nil {
		t.Skipf("no cgroups: %v", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	g, err := h.Create("test-"+hex.EncodeToString(b), l)
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
		t.Skipf("cgroups are not writable here: %v", err)
	}
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Remove(ctx); err != nil {
			t.Errorf("Remove: %v", err)
		}
		for _, d := range g.Dirs() {
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cgroup %s still exists after Remove (%v)", d, err)
			}
		}
	})
	t.Logf("cgroups %s, enforced %+v", h, g.Enforced)
	return g
}

func TestRealMemoryLimitKillsHog(t *testing.T) {
	l := Limits{MemoryBytes: 64 << 20}
	g := realGroup(t, "", l)
	if !g.Enforced.Memory {
		t.Skip("the memory controller is not available")
	}
	// tail keeps the whole newline-free line in memory.
	cmd := exec.Command("/bin/sh", "-c", "head -c 400000000 /dev/zero | tail > /dev/null")
	if err := Start(cmd, g); err != nil {
		t.Fatalf("Start: %v", err)
	}
	in := inGroup(t, g, cmd.Process.Pid)
	err := cmd.Wait()
	if !in {
		t.Fatalf("the child was not in the group")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Errorf("hog under a 64 MiB limit ended with %v; want exit 137 (tail OOM-killed)", err)
	}
}

func TestRealNprocAndPIDs(t *testing.T) {
	g := realGroup(t, "", Limits{CPUs: 1, PIDs: 16})
	if g.Enforced.CPUSet {
		out, err := startOutput(t, g, "nproc")
		if err != nil || strings.TrimSpace(out) != "1" {
			t.Errorf("nproc in a 1-CPU group = %q, %v; want 1", out, err)
		}
	}
	if !g.Enforced.PIDs {
		t.Skip("the pids controller is not available")
	}
	// The loop's forks fail past the limit; its sleeps stay in the group.
	_, _ = startOutput(t, g, "for i in $(seq 40); do sleep 5 & done 2>/dev/null") // dash exits 2 when fork fails
	if pids, _ := g.PIDs(); len(pids) == 0 || len(pids) > 16 {
		t.Errorf("%d processes under pids.max 16; want between 1 and 16", len(pids))
	}
	// Kill empties the group of the leftover sleeps.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if busy, err := g.Populated(); busy || err != nil {
		t.Errorf("Populated after Kill = %v, %v; want false", busy, err)
	}
}

// TestRealKillForkLoop kills a process tree that keeps forking.
func TestRealKillForkLoop(t *testing.T) {
	g := realGroup(t, "", Limits{PIDs: 200})
	cmd := exec.Command("/bin/sh", "-c", "while :; do sleep 100 & done")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := Start(cmd, g); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	time.Sleep(200 * time.Millisecond)
	pids, _ := g.PIDs()
	if len(pids) < 5 {
		t.Fatalf("only %d processes in the group; want the loop's sleeps", len(pids))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the loop survived Kill")
	}
}

// TestRealUnified runs the v2 code (clone into the cgroup, cgroup.kill)
// on a hybrid machine's unified hierarchy, which may have no controllers.
func TestRealUnified(t *testing.T) {
	root := filepath.Join(DefaultRoot, "unified")
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil || st.Type != 0x63677270 { // CGROUP2_SUPER_MAGIC
		if h, err := Open(""); err == nil && h.V2() {
			root = "" // a pure v2 machine: test there
		} else {
			t.Skip("no cgroup v2 hierarchy mounted")
		}
	}
	g := realGroup(t, root, Limits{})
	cmd := exec.Command("sleep", "100")
	if err := Start(cmd, g); err != nil {
		t.Fatalf("Start: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if !inGroup(t, g, cmd.Process.Pid) {
		t.Errorf("pid %d not in the group", cmd.Process.Pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := <-done; err == nil {
		t.Errorf("sleep exited cleanly; want killed")
	}
}

func inGroup(t *testing.T, g *Group, pid int) bool {
	t.Helper()
	pids, err := g.PIDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

func startOutput(t *testing.T, g *Group, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	var out strings.Builder
	if !strings.Contains(script, "&") { // background children would hold the pipe open
		cmd.Stdout = &out
	}
	if err := Start(cmd, g); err != nil {
		return "", err
	}
	err := cmd.Wait()
	return out.String(), err
}
