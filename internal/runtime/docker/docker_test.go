package docker

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/testenv"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/corral-sh/corral/api/sandboxapi"
	corral "github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
)

// testTemplate is the "minimal" template (Debian minbase, the agent user,
// /workspace), which runtimetest.Template builds and imports on first use.
const testTemplate = "corral-minimal"

// testStateDir is shared by every Runtime of the tests, in this process
// and in the conformance suite's child process, as a restarted control
// plane would share it. Containers are labelled with it, so the tests only
// ever see (and delete) their own.
var testStateDir = filepath.Join(os.TempDir(), "corral-docker-test")

var (
	availOnce sync.Once
	availErr  error
	tplMu     sync.Mutex
	tplReady  bool
)

// newRuntime returns a docker Runtime over the test state directory and
// the test template, skipping the test when docker or the template's
// rootfs is missing.
func newRuntime(t testing.TB) *Runtime {
	t.Helper()
	availOnce.Do(func() {
		r, err := New(Config{StateDir: testStateDir})
		if err != nil {
			availErr = err
			return
		}
		defer r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		availErr = r.Available(ctx)
	})
	if availErr != nil {
		testenv.Unavailable(t, "docker backend not testable here: %v", availErr)
	}
	r, err := New(Config{Binary: runtimetest.Binary(t), StateDir: testStateDir, DefaultTemplate: testTemplate})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	ensureTemplate(t, r)
	return r
}

// ensureTemplate imports the test template once, unless docker has it.
func ensureTemplate(t testing.TB, r *Runtime) {
	t.Helper()
	tplMu.Lock()
	defer tplMu.Unlock()
	if tplReady {
		return
	}
	if ref := runtimetest.Template(t, r); ref != testTemplate {
		t.Fatalf("runtimetest.Template = %q; want %q", ref, testTemplate)
	}
	tplReady = true
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// create makes a sandbox that is deleted when the test ends, and a client
// for its sandboxd.
func create(t testing.TB, r *Runtime, spec runtime.Spec) (*runtime.Sandbox, *corral.Client) {
	t.Helper()
	sb, err := r.Create(testCtx(t, 2*time.Minute), spec)
	if err != nil {
		t.Fatalf("Create(%+v): %v", spec, err)
	}
	t.Cleanup(func() {
		if err := r.Delete(context.Background(), sb.ID); err != nil {
			t.Errorf("Delete(%s): %v", sb.ID, err)
		}
	})
	c, err := corral.New(sb.Endpoint, corral.WithToken(sb.Token))
	if err != nil {
		t.Fatalf("client.New(%q): %v", sb.Endpoint, err)
	}
	return sb, c
}

// sh runs script with sh -c in the sandbox.
func sh(t testing.TB, c *corral.Client, script string) *sandboxapi.ExecResult {
	t.Helper()
	res, err := c.Exec(testCtx(t, time.Minute), sandboxapi.ExecRequest{Command: "sh", Args: []string{"-c", script}, TimeoutMS: 45000})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return res
}

// out runs script and returns its trimmed stdout, failing unless it exits 0.
func out(t testing.TB, c *corral.Client, script string) string {
	t.Helper()
	res := sh(t, c, script)
	if res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("exec %q: exit %v signal %v: %s%s", script, res.ExitCode, res.Signal, res.Stdout, res.Stderr)
	}
	return strings.TrimSpace(res.Stdout)
}

// assertGone checks that sandbox id has neither container nor state.
func assertGone(t *testing.T, r *Runtime, id string) {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	if _, err := r.cli.ContainerInspect(ctx, containerPrefix+id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %s%s: inspect = %v; want not found", containerPrefix, id, err)
	}
	if _, err := os.Stat(filepath.Join(testStateDir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir of %s: stat = %v; want it gone", id, err)
	}
	if _, err := r.Get(ctx, id); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get(%s) = %v; want not found", id, err)
	}
}

func TestConformance(t *testing.T) {
	r := newRuntime(t)
	unsupported := map[string]string{}
	if why := diskLimitRefusal(t, r); why != "" {
		unsupported[runtimetest.CheckDisk] = "the engine refuses the storage option size: " + why
	}
	runtimetest.Run(t, func(t testing.TB) runtime.Runtime { return newRuntime(t) },
		runtimetest.Options{Template: testTemplate, Unsupported: unsupported})
}

// diskLimitRefusal creates a sandbox with a disk limit and returns why the
// engine did not enforce it ("" if it did). It deletes the sandbox at
// once, not at cleanup: the suite's child process, which runs this too, is
// killed before any cleanup.
func diskLimitRefusal(t *testing.T, r *Runtime) string {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	sb, err := r.Create(ctx, runtime.Spec{Resources: runtime.Resources{DiskMB: 32}})
	if err != nil {
		t.Fatalf("Create with disk_mb: %v", err)
	}
	defer func() {
		if err := r.Delete(ctx, sb.ID); err != nil {
			t.Errorf("Delete(%s): %v", sb.ID, err)
		}
	}()
	s, err := r.state.Open(sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	return s.Meta.Extra[metaDiskLimit]
}

func TestLifecycle(t *testing.T) {
	r := newRuntime(t)
	ctx := testCtx(t, 2*time.Minute)
	labels := map[string]string{"team": "infra", labelSandbox: "not-the-id", "x/y": "z w"}
	sb, c := create(t, r, runtime.Spec{Labels: labels, Env: map[string]string{"GREETING": "hi there"}})
	if !strings.HasPrefix(sb.ID, "sb_") || sb.Runtime != "docker" || sb.Status != runtime.StatusRunning || sb.Template != testTemplate {
		t.Errorf("Create = %+v; want a running docker sandbox of %s", sb, testTemplate)
	}
	if got := out(t, c, "id -u; id -g; pwd; echo $HOME; echo $GREETING"); got != "1000\n1000\n/workspace\n/home/agent\nhi there" {
		t.Errorf("id, cwd, env = %q; want 1000 1000 /workspace /home/agent, hi there", got)
	}

	if _, err := c.WriteFile(ctx, "/workspace/note.txt", strings.NewReader("hello sandbox"), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if got := out(t, c, "cat /workspace/note.txt; echo; stat -c %u /workspace/note.txt"); got != "hello sandbox\n1000" {
		t.Errorf("file written through sandboxd = %q; want its content, owned by 1000", got)
	}

	p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "read line; echo got:$line; tty"},
		PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatalf("Spawn with a PTY: %v", err)
	}
	st, err := c.Connect(ctx, p.ID, corral.ConnectOptions{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer st.Close()
	if _, err := st.Write([]byte("ping\n")); err != nil {
		t.Fatalf("write to the terminal: %v", err)
	}
	var term strings.Builder
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("terminal stream: %v (so far %q)", err, term.String())
		}
		term.Write(ev.Data)
		if ev.Exit != nil {
			break
		}
	}
	if s := term.String(); !strings.Contains(s, "got:ping") || !strings.Contains(s, "/dev/pts/") {
		t.Errorf("terminal output = %q; want the echoed line and a /dev/pts tty", s)
	}

	got, err := r.Get(ctx, sb.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Token != sb.Token || got.Endpoint != sb.Endpoint || got.Status != runtime.StatusRunning {
		t.Errorf("Get = %+v; want %+v", got, sb)
	}
	if !maps.Equal(got.Labels, labels) {
		t.Errorf("Get labels = %v; want %v", got.Labels, labels)
	}
	insp, err := r.cli.ContainerInspect(ctx, containerPrefix+sb.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := insp.Container.Config.Labels; l[labelSandbox] != sb.ID || l[labelUserPrefix+"team"] != "infra" {
		t.Errorf("container labels = %v; want %s=%s and prefixed user labels", l, labelSandbox, sb.ID)
	}

	if err := r.Delete(ctx, sb.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertGone(t, r, sb.ID)
	if err := r.Delete(ctx, sb.ID); err != nil {
		t.Errorf("second Delete = %v; want nil", err)
	}
}

// TestRestart checks that a new Runtime (a restarted control plane)
// lists, gets and reaches a sandbox an earlier one created.
func TestRestart(t *testing.T) {
	sb, _ := create(t, newRuntime(t), runtime.Spec{Labels: map[string]string{"k": "v"}})
	again := newRuntime(t)
	ctx := testCtx(t, time.Minute)
	all, err := again.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !slices.ContainsFunc(all, func(s *runtime.Sandbox) bool { return s.ID == sb.ID && s.Status == runtime.StatusRunning }) {
		t.Errorf("new instance's List lacks running %s", sb.ID)
	}
	got, err := again.Get(ctx, sb.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Token != sb.Token || got.Labels["k"] != "v" || !got.CreatedAt.Equal(sb.CreatedAt) {
		t.Errorf("Get = %+v; want %+v", got, sb)
	}
	c, _ := corral.New(got.Endpoint, corral.WithToken(got.Token))
	if got := out(t, c, "echo reached"); got != "reached" {
		t.Errorf("exec through the new instance = %q", got)
	}
}

// BenchmarkCreate measures Create (until sandboxd is healthy) and reports
// its median and 95th percentile; Delete is not timed.
func BenchmarkCreate(b *testing.B) {
	r := newRuntime(b)
	ctx := context.Background()
	var lat []time.Duration
	for range b.N {
		start := time.Now()
		sb, err := r.Create(ctx, runtime.Spec{})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if err := r.Delete(ctx, sb.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
}
