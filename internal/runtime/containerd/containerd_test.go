package containerd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/testenv"
)

func TestConformance(t *testing.T) {
	newRuntime(t) // skips the whole suite when containerd is absent
	runtimetest.Run(t, func(t testing.TB) runtime.Runtime { return newRuntime(t) }, runtimetest.Options{
		Template: testTemplate,
		Unsupported: map[string]string{
			runtimetest.CheckDisk: "the overlayfs snapshotter has no quota; disk_mb is not enforced",
		},
	})
}

// sh runs script in the sandbox and returns its output and exit code (-1
// when a signal ended it).
func sh(t testing.TB, c *client.Client, script string) (string, int) {
	t.Helper()
	res, err := c.Exec(testCtx(t, time.Minute), sandboxapi.ExecRequest{Command: script, Shell: true, TimeoutMS: 30_000})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	code := -1
	if res.ExitCode != nil {
		code = *res.ExitCode
	}
	return strings.TrimSpace(res.Stdout + res.Stderr), code
}

func TestLifecycle(t *testing.T) {
	r := newRuntime(t)
	ctx := testCtx(t, 2*time.Minute)
	sb, c := create(t, r, runtime.Spec{Labels: map[string]string{"job": "j1"}})

	status, _ := sh(t, c, "cat /proc/self/status")
	for _, want := range []string{"Uid:\t1000\t1000\t1000\t1000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(status, want) {
			t.Errorf("/proc/self/status lacks %q:\n%s", want, status)
		}
	}
	if got, _ := sh(t, c, "id -u; pwd; echo $HOME"); got != "1000\n/workspace\n/home/agent" {
		t.Errorf("id -u; pwd; $HOME = %q; want 1000, /workspace, /home/agent", got)
	}
	// runc brings up the loopback interface of the new network namespace:
	// flags 0x9 are IFF_UP|IFF_LOOPBACK.
	if got, _ := sh(t, c, "cat /sys/class/net/lo/flags"); got != "0x9" {
		t.Errorf("lo flags = %q; want 0x9 (up)", got)
	}

	if _, err := c.WriteFile(ctx, "/workspace/dir/f.txt", strings.NewReader("round trip"), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if got, _ := sh(t, c, "stat -c %u /workspace/dir/f.txt; cat /workspace/dir/f.txt"); got != "1000\nround trip" {
		t.Errorf("file in sandbox = %q; want owner 1000 and the content", got)
	}

	p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sh", PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatalf("Spawn pty: %v", err)
	}
	st, err := c.Connect(ctx, p.ID, client.ConnectOptions{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer st.Close()
	if _, err := st.Write([]byte("echo pty-$((6*7))\nexit\n")); err != nil {
		t.Fatalf("pty write: %v", err)
	}
	var out strings.Builder
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("pty stream: %v (so far %q)", err, out.String())
		}
		out.Write(ev.Data)
		if ev.Exit != nil {
			break
		}
	}
	if !strings.Contains(out.String(), "pty-42") {
		t.Errorf("pty output = %q; want pty-42", out.String())
	}

	got, err := r.Get(ctx, sb.ID)
	if err != nil || got.Status != runtime.StatusRunning || got.Token != sb.Token || got.Labels["job"] != "j1" || got.Template != testTemplate {
		t.Errorf("Get = %+v, %v; want running with token, labels and template", got, err)
	}
	if err := r.Delete(ctx, sb.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertGone(t, r, sb.ID)
	if err := r.Delete(ctx, sb.ID); err != nil {
		t.Errorf("second Delete = %v; want nil", err)
	}
}

// TestLimits runs a command under each resource limit.
func TestLimits(t *testing.T) {
	r := newRuntime(t)
	tests := []struct {
		name   string
		res    runtime.Resources
		script string
		check  func(out string, code int) error
	}{
		{"memory_mb=128 kills a hog", runtime.Resources{MemoryMB: 128}, "head -c 600000000 /dev/zero | tail",
			func(out string, code int) error {
				if code != 137 && code != -1 {
					return fmt.Errorf("exit %d (%q); want 137, killed", code, out)
				}
				return nil
			}},
		{"cpus=1 shows as nproc 1", runtime.Resources{CPUs: 1}, "nproc; cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max",
			func(out string, code int) error {
				if out != "1\n100000" {
					return fmt.Errorf("nproc and quota = %q; want 1 and 100000", out)
				}
				return nil
			}},
		{"cpus=0.5 is a quota", runtime.Resources{CPUs: 0.5}, "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max",
			func(out string, code int) error {
				if out != "50000" {
					return fmt.Errorf("quota = %q; want 50000", out)
				}
				return nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, c := create(t, r, runtime.Spec{Resources: tt.res})
			if err := tt.check(sh(t, c, tt.script)); err != nil {
				t.Error(err)
			}
			if got, _ := sh(t, c, "echo alive"); got != "alive" {
				t.Errorf("sandboxd after the test = %q; want alive", got)
			}
		})
	}
}

// TestPIDsLimit runs a fork loop past the limit and counts the task's
// processes through containerd while the loop's children live (an exec
// could not fork to count them).
func TestPIDsLimit(t *testing.T) {
	r := newRuntime(t)
	sb, c := create(t, r, runtime.Spec{Resources: runtime.Resources{PIDs: 64}})
	ctx := withNamespace(testCtx(t, time.Minute))
	out, _ := sh(t, c, "for i in $(seq 200); do sleep 3 & done")
	if !strings.Contains(out, "fork") {
		t.Errorf("fork loop output = %q; want fork failures", out)
	}
	cl, _ := r.conn(ctx)
	ctr, err := cl.LoadContainer(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := task.Pids(ctx)
	if err != nil || len(pids) > 64 || len(pids) < 32 {
		t.Errorf("task has %d processes, %v; want the loop to fill the limit of 64", len(pids), err)
	}
	// Once the sleeps end (on a loaded machine, some time after 3 s),
	// sandboxd can start processes again.
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		res, err := c.Exec(ctx, sandboxapi.ExecRequest{Command: "echo alive", Shell: true, TimeoutMS: 10_000})
		if err == nil && strings.TrimSpace(res.Stdout) == "alive" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandboxd after the fork loop: %+v, %v; want alive once the loop's processes are gone", res, err)
		}
	}
}

func TestNetworkNone(t *testing.T) {
	port := testenv.Greeter(t, "127.0.0.1", "host-secret\n")
	r := newRuntime(t)
	_, c := create(t, r, runtime.Spec{Network: runtime.NetworkNone})
	out, code := sh(t, c, fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3' 2>&1", port))
	if code == 0 || strings.Contains(out, "host-secret") {
		t.Errorf("sandbox reached the host's 127.0.0.1:%d: exit %d, %q", port, code, out)
	}
	if got, _ := sh(t, c, "ls /sys/class/net"); got != "lo" {
		t.Errorf("interfaces = %q; want lo", got)
	}
	// Loopback works inside (sandboxd's port proxy needs it): a second
	// sandboxd on 127.0.0.1 answers bash's /dev/tcp.
	if _, err := c.Spawn(testCtx(t, time.Minute), sandboxapi.SpawnRequest{Command: runtime.BinaryPath,
		Args: []string{"sandboxd", "--listen", "127.0.0.1:7777", "--root", "/tmp"}}); err != nil {
		t.Fatal(err)
	}
	out, _ = sh(t, c, `bash -c 'for i in $(seq 50); do exec 3<>/dev/tcp/127.0.0.1/7777 && break; sleep 0.1; done 2>/dev/null
printf "GET /v1/health HTTP/1.0\r\n\r\n" >&3; cat <&3'`)
	if !strings.Contains(out, `"status":"ok"`) {
		t.Errorf("health over the sandbox's loopback = %q; want status ok", out)
	}
}

func TestIsolation(t *testing.T) {
	r := newRuntime(t)
	a, ca := create(t, r, runtime.Spec{})
	b, cb := create(t, r, runtime.Spec{})
	sh(t, ca, "echo a-secret > /workspace/secret; sleep 300 >/dev/null 2>&1 &")
	if out, _ := sh(t, cb, "cat /workspace/secret 2>&1; ps -eo args"); strings.Contains(out, "a-secret") || strings.Contains(out, "sleep 300") {
		t.Errorf("sandbox %s sees %s's file or processes: %q", b.ID, a.ID, out)
	}
	ha, _ := sh(t, ca, "hostname")
	hb, _ := sh(t, cb, "hostname")
	if ha == hb {
		t.Errorf("both sandboxes have hostname %q", ha)
	}
}

// TestNewInstance checks that a Runtime that did not create a sandbox
// finds it through Get and List and reaches it.
func TestNewInstance(t *testing.T) {
	sb, _ := create(t, newRuntime(t), runtime.Spec{Labels: map[string]string{"k": "v"}})
	again := newRuntime(t)
	ctx := testCtx(t, time.Minute)
	got, err := again.Get(ctx, sb.ID)
	if err != nil || got.Status != runtime.StatusRunning || got.Endpoint != sb.Endpoint || got.Token != sb.Token {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, sb)
	}
	all, err := again.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	found := false
	for _, s := range all {
		found = found || (s.ID == sb.ID && s.Labels["k"] == "v" && s.Status == runtime.StatusRunning)
	}
	if !found {
		t.Errorf("List of a new instance lacks %s (running, labels)", sb.ID)
	}
	c, _ := client.New(got.Endpoint, client.WithToken(got.Token))
	if out, _ := sh(t, c, "echo ok"); out != "ok" {
		t.Errorf("exec through the new instance's view = %q", out)
	}
}

func TestDeleteIdempotent(t *testing.T) {
	r := newRuntime(t)
	ctx := testCtx(t, time.Minute)
	for _, id := range []string{"sb_nosuchsandbox", "../etc", ""} {
		if err := r.Delete(ctx, id); err != nil {
			t.Errorf("Delete(%q) = %v; want nil", id, err)
		}
		if _, err := r.Get(ctx, id); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Get(%q) = %v; want not found", id, err)
		}
	}
}

func TestConcurrentCreates(t *testing.T) {
	r := newRuntime(t)
	ctx := testCtx(t, 5*time.Minute)
	ids := make([]string, 10)
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = runtime.NewID()
		wg.Go(func() {
			sb, err := r.Create(ctx, runtime.Spec{ID: ids[i], Resources: runtime.Resources{MemoryMB: 256}})
			if err != nil {
				t.Errorf("Create: %v", err)
				return
			}
			defer func() {
				if err := r.Delete(context.Background(), sb.ID); err != nil {
					t.Errorf("Delete(%s): %v", sb.ID, err)
				}
			}()
			c, _ := client.New(sb.Endpoint, client.WithToken(sb.Token))
			res, err := c.Exec(ctx, sandboxapi.ExecRequest{Command: "echo", Args: []string{"ok"}})
			if err != nil || res.Stdout != "ok\n" {
				t.Errorf("exec in %s = %+v, %v; want ok", sb.ID, res, err)
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		assertGone(t, r, id)
	}
}

func TestCreateErrors(t *testing.T) {
	r := newRuntime(t)
	ctx := testCtx(t, time.Minute)
	taken, _ := create(t, r, runtime.Spec{})
	tests := []struct {
		name string
		spec runtime.Spec
		want error
		msg  string
	}{
		{"unknown network", runtime.Spec{Network: "internet"}, errdefs.ErrInvalid, "network"},
		{"missing template", runtime.Spec{Template: "corral-no-such-template"}, errdefs.ErrUnprocessable, "corral template build"},
		{"bad template name", runtime.Spec{Template: "Not A Name"}, errdefs.ErrInvalid, "template"},
		{"path id", runtime.Spec{ID: "../etc"}, errdefs.ErrInvalid, "sandbox id"},
		{"containerd-invalid id", runtime.Spec{ID: "a--b"}, errdefs.ErrInvalid, "containerd identifier"},
		{"negative memory", runtime.Spec{Resources: runtime.Resources{MemoryMB: -1}}, errdefs.ErrInvalid, "negative"},
		{"taken id", runtime.Spec{ID: taken.ID}, errdefs.ErrConflict, taken.ID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb, err := r.Create(ctx, tt.spec)
			if err == nil {
				_ = r.Delete(ctx, sb.ID)
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Create error = %v; want class %v mentioning %q", err, tt.want, tt.msg)
			}
		})
	}
	if got, err := r.Get(ctx, taken.ID); err != nil || got.Status != runtime.StatusRunning {
		t.Errorf("after a conflicting Create, Get(%s) = %+v, %v; want it untouched", taken.ID, got, err)
	}
}

// BenchmarkCreate measures Create (until sandboxd is healthy) and Delete;
// run it with -benchtime=20x for the percentiles over 20 sandboxes.
func BenchmarkCreate(b *testing.B) {
	r := newRuntime(b)
	for _, network := range []string{runtime.NetworkNone, runtime.NetworkEgress} {
		b.Run(network, func(b *testing.B) {
			ctx := context.Background()
			var create, del []time.Duration
			for b.Loop() {
				start := time.Now()
				sb, err := r.Create(ctx, runtime.Spec{Network: network})
				if err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if err := r.Delete(ctx, sb.ID); err != nil {
					b.Fatal(err)
				}
				create, del = append(create, mid.Sub(start)), append(del, time.Since(mid))
			}
			b.ReportMetric(ms(percentile(create, 50)), "create-p50-ms")
			b.ReportMetric(ms(percentile(create, 95)), "create-p95-ms")
			b.ReportMetric(ms(percentile(del, 50)), "delete-p50-ms")
		})
	}
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
