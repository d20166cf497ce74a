package bwrap

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

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/template"
)

// The template package finds ImportTemplate and HasTemplate by this
// interface.
var _ template.Importer = (*Runtime)(nil)

// testTemplate is the "minimal" template (Debian minbase, the agent user,
// /workspace), which runtimetest.Template builds and unpacks on first use.
const testTemplate = "corral-minimal"

// dirEnv passes the test directory to child processes (the conformance
// suite re-runs this binary to create a sandbox from a process it kills),
// so they share the parent's state and template directories.
const dirEnv = "CORRAL_BWRAP_TEST_DIR"

var testDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if d := os.Getenv(dirEnv); d != "" {
		testDir = d
		return m.Run()
	}
	// Every directory on the way must be reachable by uid 1000, which
	// bwrap runs as when the tests run as root.
	d, err := os.MkdirTemp("", "corral-bwrap-test-")
	if err == nil {
		err = os.Chmod(d, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "test dir:", err)
		return 1
	}
	testDir = d
	os.Setenv(dirEnv, d)
	code := m.Run()
	cleanupTestDir(d)
	os.RemoveAll(d)
	return code
}

// cleanupTestDir deletes any sandbox a failed test left behind, then the
// directory.
func cleanupTestDir(d string) {
	bin := os.Getenv("CORRAL_TEST_BINARY")
	if bin == "" {
		return // no test built a binary, so none made a sandbox
	}
	if r, err := New(testConfig(bin)); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		all, _ := r.List(ctx)
		for _, sb := range all {
			_ = r.Delete(ctx, sb.ID)
		}
	}
}

func testConfig(binary string) Config {
	return Config{
		Binary:       binary,
		StateDir:     filepath.Join(testDir, "state"),
		TemplatesDir: filepath.Join(testDir, "templates"),
	}
}

var (
	templateMu    sync.Mutex
	templateReady bool
)

// newTestRuntime returns a Runtime over the test directories with the
// test template imported, or skips with the reason it cannot run here.
func newTestRuntime(t testing.TB) *Runtime {
	t.Helper()
	bin := runtimetest.Binary(t)
	os.Setenv("CORRAL_TEST_BINARY", bin) // child processes reuse it
	r, err := New(testConfig(bin))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.Available(ctx); err != nil {
		testenv.Unavailable(t, "bwrap is not usable here: %v", err)
	}
	templateMu.Lock()
	defer templateMu.Unlock()
	if !templateReady {
		if ref := runtimetest.Template(t, r); ref != testTemplate {
			t.Fatalf("runtimetest.Template = %q; want %q", ref, testTemplate)
		}
		templateReady = true
	}
	return r
}

// create makes a sandbox from the test template and deletes it when the
// test ends.
func create(t *testing.T, r *Runtime, spec runtime.Spec) *runtime.Sandbox {
	t.Helper()
	if spec.Template == "" {
		spec.Template = testTemplate
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := r.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create(%+v): %v", spec, err)
	}
	t.Cleanup(func() {
		if err := r.Delete(context.Background(), sb.ID); err != nil {
			t.Errorf("Delete(%s): %v", sb.ID, err)
		}
		if _, err := r.Get(context.Background(), sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Get(%s) after Delete = %v; want not found", sb.ID, err)
		}
	})
	return sb
}
