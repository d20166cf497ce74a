package bwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/cgroups"
	"github.com/corral-sh/corral/internal/testenv"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func sandboxClient(t *testing.T, sb *runtime.Sandbox) *client.Client {
	t.Helper()
	c, err := client.New(sb.Endpoint, client.WithToken(sb.Token))
	if err != nil {
		t.Fatalf("client.New(%q): %v", sb.Endpoint, err)
	}
	return c
}

// sh runs script with /bin/sh in the sandbox: its output (stdout then
// stderr) and exit code, -1 when killed by a signal.
func sh(t *testing.T, c *client.Client, script string) (string, int) {
	t.Helper()
	res, err := c.Exec(ctxFor(t, time.Minute), sandboxapi.ExecRequest{Command: script, Shell: true, TimeoutMS: 30000})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	code := -1
	if res.ExitCode != nil {
		code = *res.ExitCode
	}
	return strings.TrimSpace(res.Stdout + res.Stderr), code
}

func mustSh(t *testing.T, c *client.Client, script string) string {
	t.Helper()
	out, code := sh(t, c, script)
	if code != 0 {
		t.Fatalf("exec %q: exit %d: %s", script, code, out)
	}
	return out
}

// TestSandbox walks one sandbox through its life and checks that Delete
// leaves nothing: no state directory, no cgroup, no process.
func TestSandbox(t *testing.T) {
	r := newTestRuntime(t)
	ctx := ctxFor(t, 2*time.Minute)
	sb, err := r.Create(ctx, runtime.Spec{Template: testTemplate, Resources: runtime.Resources{MemoryMB: 256}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	c := sandboxClient(t, sb)

	t.Run("non-root", func(t *testing.T) {
		if got := mustSh(t, c, "id -u; id -g"); got != "1000\n1000" {
			t.Errorf("id = %q; want 1000 1000", got)
		}
		status := mustSh(t, c, "cat /proc/self/status")
		for _, want := range []string{"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1"} {
			if !strings.Contains(status, want) {
				t.Errorf("/proc/self/status lacks %q", want)
			}
		}
		// The root and the template are read-only; home, workspace
		// and the temporary directories are not.
		if out, code := sh(t, c, "touch /x || touch /usr/x || touch /etc/x"); code == 0 {
			t.Errorf("wrote to the root: %s", out)
		}
		mustSh(t, c, "for d in /workspace ~ /tmp /var/tmp /run; do touch $d/ok; done")
		if got := mustSh(t, c, "test -f ~/.bashrc && echo seeded; hostname"); got != "seeded\ncorral-"+sb.ID {
			t.Errorf("home and hostname = %q", got)
		}
	})

	t.Run("files", func(t *testing.T) {
		body := strings.Repeat("corral\n", 10000)
		if _, err := c.WriteFile(ctx, "/workspace/dir/f.txt", strings.NewReader(body), 0o640); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		rc, err := c.ReadFile(ctx, "/workspace/dir/f.txt")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != body {
			t.Errorf("read back %d bytes; want %d", len(got), len(body))
		}
		if got := mustSh(t, c, "stat -c '%u %a' dir/f.txt; wc -l < dir/f.txt"); got != "1000 640\n10000" {
			t.Errorf("file in the sandbox = %q; want owner 1000, mode 640, 10000 lines", got)
		}
		// The workspace is the host directory in the state dir.
		if b, err := os.ReadFile(filepath.Join(r.cfg.StateDir, sb.ID, "workspace", "dir", "f.txt")); err != nil || len(b) != len(body) {
			t.Errorf("workspace on the host: %d bytes, %v", len(b), err)
		}
	})

	t.Run("pty", func(t *testing.T) {
		p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "bash", Args: []string{"--norc", "-i"}, PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		st, err := c.Connect(ctx, p.ID, client.ConnectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Write([]byte("echo pty-$((40+2)) $(tty); exit\n")); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for !strings.Contains(out.String(), "pty-42 /dev/pts/") {
			ev, err := st.Next(ctx)
			if err != nil {
				t.Fatalf("pty stream: %v (got %q)", err, out.String())
			}
			out.Write(ev.Data)
		}
	})

	t.Run("info", func(t *testing.T) {
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.cg != nil && os.Geteuid() == 0 && info.MemoryLimitBytes != 256<<20 {
			t.Errorf("sandboxd reports a memory limit of %d; want %d (the cgroup's)", info.MemoryLimitBytes, 256<<20)
		}
	})

	st, _ := r.state.Open(sb.ID)
	bwrapProc, _ := cgroups.ParseProc(st.Meta.Extra[metaPID])
	initProc, _ := cgroups.ParseProc(st.Meta.Extra[metaInit])
	if !bwrapProc.Alive() || !initProc.Alive() {
		t.Fatalf("bwrap %v and its init %v not both alive", bwrapProc, initProc)
	}
	var dirs []string
	if r.cg != nil {
		dirs = r.cg.Group(sb.ID).Dirs()
	}
	if err := r.Delete(ctx, sb.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := r.Get(ctx, sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get after Delete = %v; want not found", err)
	}
	if _, err := os.Stat(filepath.Join(r.cfg.StateDir, sb.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir after Delete: %v; want it gone", err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s after Delete: %v; want it gone", d, err)
		}
	}
	if bwrapProc.Alive() || initProc.Alive() {
		t.Errorf("bwrap %v or its init %v still alive after Delete", bwrapProc, initProc)
	}
	if _, err := c.Health(ctx); err == nil {
		t.Errorf("sandboxd answers after Delete")
	}
	if err := r.Delete(ctx, sb.ID); err != nil {
		t.Errorf("second Delete = %v; want nil", err)
	}
}

func needLimits(t *testing.T, r *Runtime) {
	t.Helper()
	if os.Geteuid() != 0 || r.cg == nil {
		t.Skipf("resource limits need root and cgroups (cgroups: %v)", r.cgErr)
	}
}

func TestLimits(t *testing.T) {
	r := newTestRuntime(t)
	needLimits(t, r)
	t.Run("memory", func(t *testing.T) {
		c := sandboxClient(t, create(t, r, runtime.Spec{Resources: runtime.Resources{MemoryMB: 128}}))
		out, code := sh(t, c, "head -c 600000000 /dev/zero | tail > /dev/null && echo survived")
		if code == 0 || strings.Contains(out, "survived") {
			t.Errorf("a 600 MB hog under a 128 MiB limit: exit %d, %q; want it killed", code, out)
		}
		if got := mustSh(t, c, "echo alive"); got != "alive" {
			t.Errorf("sandboxd after the hog: %q", got)
		}
	})
	t.Run("pids", func(t *testing.T) {
		sb := create(t, r, runtime.Spec{Resources: runtime.Resources{PIDs: 64}})
		c := sandboxClient(t, sb)
		sh(t, c, "for i in $(seq 200); do sleep 3 & done 2>/dev/null") // dash gives up at the first failed fork
		pids, err := r.cg.Group(sb.ID).PIDs()
		if err != nil || len(pids) == 0 || len(pids) > 64 {
			t.Errorf("%d processes (%v) in a sandbox with pids 64", len(pids), err)
		}
	})
	t.Run("nproc", func(t *testing.T) {
		c := sandboxClient(t, create(t, r, runtime.Spec{Resources: runtime.Resources{CPUs: 1}}))
		if got := mustSh(t, c, "nproc"); got != "1" {
			t.Errorf("nproc with cpus 1 = %s; want 1", got)
		}
	})
	t.Run("disk", func(t *testing.T) {
		c := sandboxClient(t, create(t, r, runtime.Spec{Resources: runtime.Resources{DiskMB: 32, MemoryMB: 512}}))
		if out, code := sh(t, c, "head -c 40000000 /dev/zero > /workspace/big"); code == 0 || !strings.Contains(out, "No space left") {
			t.Errorf("40 MB into a 32 MB workspace: exit %d, %q; want ENOSPC", code, out)
		}
		mustSh(t, c, "rm /workspace/big; head -c 1000000 /dev/zero > /workspace/small")
	})
}

func TestNetwork(t *testing.T) {
	r := newTestRuntime(t)
	port := testenv.Greeter(t, "127.0.0.1", "host-hello\n")
	probe := fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3' 2>&1", port)

	none := sandboxClient(t, create(t, r, runtime.Spec{}))
	if out, _ := sh(t, none, probe); strings.Contains(out, "host-hello") {
		t.Errorf("network none reached the host's loopback")
	}
	if got := mustSh(t, none, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"); got != "lo" {
		t.Errorf("interfaces with network none = %q; want lo", got)
	}
	egress := sandboxClient(t, create(t, r, runtime.Spec{Network: runtime.NetworkEgress}))
	if out, _ := sh(t, egress, probe); !strings.Contains(out, "host-hello") {
		t.Errorf("network egress did not reach the host network: %q", out)
	}
}

func TestIsolation(t *testing.T) {
	r := newTestRuntime(t)
	a := sandboxClient(t, create(t, r, runtime.Spec{}))
	b := sandboxClient(t, create(t, r, runtime.Spec{}))
	mustSh(t, a, "echo secret > /workspace/a-file; echo secret > /tmp/a-tmp; echo secret > ~/a-home")
	if _, err := a.Spawn(ctxFor(t, time.Minute), sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"4242"}}); err != nil {
		t.Fatal(err)
	}
	if out := mustSh(t, b, "ls /workspace /tmp ~; ps -eo args"); strings.Contains(out, "a-") || strings.Contains(out, "4242") {
		t.Errorf("sandbox b sees a's files or processes:\n%s", out)
	}
}

func TestHostTemplate(t *testing.T) {
	r := newTestRuntime(t)
	c := sandboxClient(t, create(t, r, runtime.Spec{Template: HostTemplate}))
	if got := mustSh(t, c, "test -r /etc/os-release && echo ok; id -u; pwd"); got != "ok\n1000\n/workspace" {
		t.Errorf("host template = %q", got)
	}
	if out, code := sh(t, c, "cat /etc/shadow"); code == 0 {
		t.Errorf("the host's /etc/shadow is readable in the sandbox: %s", out)
	}
}

// TestCreateFailure: when bwrap dies, Create says why and leaves nothing.
func TestCreateFailure(t *testing.T) {
	newTestRuntime(t) // skips where bwrap cannot run
	fake := filepath.Join(testDir, "fake-bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: something is wrong' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(os.Getenv("CORRAL_TEST_BINARY"))
	cfg.Bwrap = fake
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := runtime.NewID()
	_, err = r.Create(ctxFor(t, time.Minute), runtime.Spec{ID: id, Template: testTemplate, Resources: runtime.Resources{MemoryMB: 64}})
	if err == nil || !strings.Contains(err.Error(), "something is wrong") {
		t.Fatalf("Create with a failing bwrap = %v; want bwrap's message", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir after a failed Create: %v; want none", err)
	}
	if r.cg != nil {
		for _, d := range r.cg.Group(id).Dirs() {
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cgroup %s after a failed Create: %v; want none", d, err)
			}
		}
	}
}

// TestCgroupV2 runs a sandbox on a cgroup v2 hierarchy: the unified one of
// a hybrid host like this one (no controllers, so no limits, but clone
// into the cgroup, the cgroup view and cgroup.kill), or the real one.
func TestCgroupV2(t *testing.T) {
	newTestRuntime(t)
	root := filepath.Join(cgroups.DefaultRoot, "unified")
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		if h, err := cgroups.Open(""); err != nil || !h.V2() {
			t.Skip("no cgroup v2 hierarchy here")
		}
		root = ""
	}
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	cfg := testConfig(os.Getenv("CORRAL_TEST_BINARY"))
	cfg.CgroupRoot = root
	r, err := New(cfg)
	if err != nil || r.cg == nil || !r.cg.V2() {
		t.Fatalf("New over %s = %v (cgroups %v, %v)", root, err, r.cg, r.cgErr)
	}
	sb := create(t, r, runtime.Spec{})
	g := r.cg.Group(sb.ID)
	pids, err := g.PIDs()
	if err != nil || len(pids) < 3 { // bwrap, its init, sandboxd
		t.Errorf("cgroup members = %v, %v; want bwrap's whole tree", pids, err)
	}
	c := sandboxClient(t, sb)
	if got := mustSh(t, c, "test -f /sys/fs/cgroup/cgroup.procs && echo view; grep ^0:: /proc/self/cgroup"); got != "view\n0::/" {
		t.Errorf("cgroup view = %q; want the group's own files, rooted at /", got)
	}
}
