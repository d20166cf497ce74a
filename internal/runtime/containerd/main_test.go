package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/testenv"

	cerrdefs "github.com/containerd/containerd/errdefs"

	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/template"
)

const (
	// testTemplate is the "minimal" template, which runtimetest.Template
	// builds and imports on first use.
	testTemplate = "corral-minimal"
	// stateEnv carries the state directory to child test processes (the
	// conformance suite's creator-dies check), so every process of one run
	// shares it.
	stateEnv = "CORRAL_CONTAINERD_TEST_STATE"
	// addressEnv names containerd's socket when it is not the default.
	addressEnv = "CORRAL_CONTAINERD_ADDRESS"
)

var stateDir string

// The template builder finds ImportTemplate and HasTemplate by type
// assertion.
var _ template.Importer = (*Runtime)(nil)

func TestMain(m *testing.M) {
	stateDir = os.Getenv(stateEnv)
	owner := stateDir == ""
	if owner {
		d, err := os.MkdirTemp("", "corral-containerd-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		stateDir = d
		os.Setenv(stateEnv, d)
	}
	code := m.Run()
	if owner {
		os.RemoveAll(stateDir)
	}
	os.Exit(code)
}

var (
	setupOnce sync.Once
	setupErr  error // the reason to skip, or a setup failure
	skipSetup bool  // setupErr is a reason to skip, not a failure
	tplMu     sync.Mutex
	tplReady  bool
)

// newRuntime returns a new Runtime over the shared test state directory,
// with the test template imported; it skips the test when containerd is
// not reachable or the template tar is missing.
func newRuntime(t testing.TB) *Runtime {
	t.Helper()
	r, err := New(Config{Binary: runtimetest.Binary(t), StateDir: stateDir, Address: os.Getenv(addressEnv), DefaultTemplate: testTemplate})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	setupOnce.Do(func() { skipSetup, setupErr = setup(r) })
	if setupErr != nil {
		if skipSetup {
			testenv.Unavailable(t, "%v", setupErr)
		}
		t.Fatal(setupErr)
	}
	tplMu.Lock()
	defer tplMu.Unlock()
	if !tplReady {
		if ref := runtimetest.Template(t, r); ref != testTemplate {
			t.Fatalf("runtimetest.Template = %q; want %q", ref, testTemplate)
		}
		tplReady = true
	}
	return r
}

// setup checks containerd once per test process.
func setup(r *Runtime) (skip bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := r.Available(ctx); err != nil {
		return true, fmt.Errorf("containerd is not available: %w", err)
	}
	if os.Geteuid() != 0 {
		return true, errors.New("the containerd backend needs root")
	}
	return false, nil
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// create makes a sandbox, deleted (and checked gone) when the test ends.
func create(t testing.TB, r *Runtime, spec runtime.Spec) (*runtime.Sandbox, *client.Client) {
	t.Helper()
	sb, err := r.Create(testCtx(t, 2*time.Minute), spec)
	if err != nil {
		t.Fatalf("Create(%+v): %v", spec, err)
	}
	t.Cleanup(func() {
		if err := r.Delete(context.Background(), sb.ID); err != nil {
			t.Errorf("Delete(%s): %v", sb.ID, err)
		}
		assertGone(t, r, sb.ID)
	})
	c, err := client.New(sb.Endpoint, client.WithToken(sb.Token))
	if err != nil {
		t.Fatalf("client.New(%q): %v", sb.Endpoint, err)
	}
	return sb, c
}

// assertGone checks that nothing of sandbox id is left: no container, no
// task, no snapshot, no state directory, and Get says not found.
func assertGone(t testing.TB, r *Runtime, id string) {
	t.Helper()
	c, err := r.conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := withNamespace(testCtx(t, time.Minute))
	if _, err := c.ContainerService().Get(ctx, id); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %s: %v; want not found", id, err)
	}
	if _, err := c.SnapshotService(r.cfg.Snapshotter).Stat(ctx, id); !cerrdefs.IsNotFound(err) {
		t.Errorf("snapshot %s: %v; want not found", id, err)
	}
	if _, err := os.Stat(filepath.Join(r.cfg.StateDir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir of %s: %v; want it removed", id, err)
	}
	if _, err := r.Get(ctx, id); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get(%s) after Delete = %v; want not found", id, err)
	}
}
