package local

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
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
)

// dirEnv passes the state directory to the conformance suite's child
// process, so that it and this process share their sandboxes.
const dirEnv = "CORRAL_LOCAL_TEST_DIR"

var testDir string

func TestMain(m *testing.M) {
	if d := os.Getenv(dirEnv); d != "" {
		testDir = d
		os.Exit(m.Run())
	}
	d, err := os.MkdirTemp("", "corral-local-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testDir = d
	os.Setenv(dirEnv, d)
	code := m.Run()
	if bin := os.Getenv("CORRAL_TEST_BINARY"); bin != "" {
		if r, err := New(Config{Unsafe: true, Binary: bin, StateDir: d}); err == nil {
			all, _ := r.List(context.Background())
			for _, sb := range all {
				_ = r.Delete(context.Background(), sb.ID)
			}
		}
	}
	os.RemoveAll(d)
	os.Exit(code)
}

func newTestRuntime(t testing.TB) *Runtime {
	t.Helper()
	bin := runtimetest.Binary(t)
	os.Setenv("CORRAL_TEST_BINARY", bin)
	r, err := New(Config{Unsafe: true, Binary: bin, StateDir: testDir})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func TestRefusedWithoutUnsafe(t *testing.T) {
	r, err := New(Config{StateDir: t.TempDir()})
	if !errors.Is(err, errdefs.ErrForbidden) || r != nil {
		t.Fatalf("New without Unsafe = %v, %v; want ErrForbidden", r, err)
	}
	if !strings.Contains(err.Error(), "--unsafe-local") {
		t.Errorf("error %q does not say how to enable it", err)
	}
}

func TestLocal(t *testing.T) {
	r := newTestRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := r.Create(ctx, runtime.Spec{Env: map[string]string{"GREETING": "hi"}, Labels: map[string]string{"k": "v"}, Resources: runtime.Resources{MemoryMB: 256}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer r.Delete(context.Background(), sb.ID)
	if sb.Runtime != "local" || sb.Status != runtime.StatusRunning || sb.Template != HostTemplate {
		t.Errorf("Create = %+v", sb)
	}
	c, err := client.New(sb.Endpoint, client.WithToken(sb.Token))
	if err != nil {
		t.Fatal(err)
	}
	// The files API is rooted at the workspace, where commands start.
	if _, err := c.WriteFile(ctx, "/note.txt", strings.NewReader("from the API"), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	res, err := c.Exec(ctx, sandboxapi.ExecRequest{Command: "cat note.txt; echo; echo $GREETING; echo ${CORRAL_SANDBOX_TOKEN:-no-token}; pwd", Shell: true})
	if err != nil {
		t.Fatal(err)
	}
	workspace := filepath.Join(testDir, sb.ID, "workspace")
	if want := "from the API\nhi\nno-token\n" + workspace + "\n"; res.Stdout != want {
		t.Errorf("exec = %q (stderr %q); want %q", res.Stdout, res.Stderr, want)
	}
	rc, err := c.ReadFile(ctx, "/note.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "from the API" {
		t.Errorf("ReadFile = %q", b)
	}

	// A new instance finds it; Delete ends it and is idempotent.
	again := newTestRuntime(t)
	got, err := again.Get(ctx, sb.ID)
	if err != nil || got.Status != runtime.StatusRunning || got.Labels["k"] != "v" || got.Token != sb.Token {
		t.Fatalf("Get from a new instance = %+v, %v", got, err)
	}
	st, _ := r.state.Open(sb.ID)
	proc, _ := cgroups.ParseProc(st.Meta.Extra[metaPID])
	for i := range 2 {
		if err := again.Delete(ctx, sb.ID); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := r.Get(ctx, sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get after Delete = %v; want not found", err)
	}
	if proc.Alive() {
		t.Errorf("sandboxd %v still alive after Delete", proc)
	}
	if _, err := os.Stat(filepath.Join(testDir, sb.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir after Delete: %v", err)
	}
}

// TestConformance runs the shared suite, minus what local cannot do. Its
// Lifecycle check cannot pass here: it expects the sandbox's own
// /workspace at that path for commands (`cat /workspace/hello.txt; pwd`),
// and local commands see the host's paths. Until the suite can exempt a
// backend from that check, the suite runs only when asked
// (CORRAL_LOCAL_CONFORMANCE=1); TestLocal covers local's life cycle.
func TestConformance(t *testing.T) {
	if os.Getenv("CORRAL_LOCAL_CONFORMANCE") == "" && os.Getenv("CORRAL_RUNTIMETEST_CHILD") == "" {
		t.Skip("local has no /workspace for commands, which the suite's Lifecycle check needs; set CORRAL_LOCAL_CONFORMANCE=1 to run it")
	}
	r := newTestRuntime(t)
	opts := runtimetest.Options{Template: HostTemplate, Unsupported: map[string]string{
		runtimetest.CheckNonRoot:   "no isolation: sandboxd runs as Corral's own user",
		runtimetest.CheckIsolation: "no isolation: the host's files and processes",
		runtimetest.CheckNetwork:   "no isolation: the host's network",
		runtimetest.CheckDisk:      "no isolation: the host's disk",
	}}
	if r.cg == nil || os.Geteuid() != 0 {
		for _, c := range []string{runtimetest.CheckMemory, runtimetest.CheckPIDs, runtimetest.CheckNproc} {
			opts.Unsupported[c] = "cgroup limits need root and cgroups"
		}
	}
	runtimetest.Run(t, func(t testing.TB) runtime.Runtime { return newTestRuntime(t) }, opts)
}
