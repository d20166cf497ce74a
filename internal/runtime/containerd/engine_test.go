package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	ctrd "github.com/containerd/containerd"
	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/images"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
)

func TestImageRef(t *testing.T) {
	tests := []struct{ in, want string }{
		{"corral-default", "docker.io/library/corral-default:latest"},
		{"corral-default:v2", "docker.io/library/corral-default:v2"},
		{"docker.io/library/corral-default:latest", "docker.io/library/corral-default:latest"},
		{"registry.local:5000/team/img:1", "registry.local:5000/team/img:1"},
	}
	for _, tt := range tests {
		if got, err := ImageRef(tt.in); err != nil || got != tt.want {
			t.Errorf("ImageRef(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := ImageRef("Not A Name"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("ImageRef(%q) error = %v; want invalid", "Not A Name", err)
	}
}

func TestAvailableWithoutContainerd(t *testing.T) {
	r, err := New(Config{Binary: runtimetest.Binary(t), Address: filepath.Join(t.TempDir(), "nope.sock")})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Available(testCtx(t, time.Minute))
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Available() = %v; want unavailable, not running", err)
	}
	if _, err := r.List(testCtx(t, time.Minute)); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("List() = %v; want unavailable", err)
	}
}

// TestImportTemplate imports a tiny tar and checks the image it makes.
func TestImportTemplate(t *testing.T) {
	r := newRuntime(t)
	ctx := withNamespace(testCtx(t, time.Minute))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "workspace/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: 1000, Gid: 1000})
	tw.WriteHeader(&tar.Header{Name: "hello", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5})
	tw.Write([]byte("hello"))
	tw.Close()
	path := filepath.Join(t.TempDir(), "rootfs.tar")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	const name = "corral-test-import"
	c, _ := r.conn(ctx)
	ref, _ := ImageRef(name)
	t.Cleanup(func() { _ = c.ImageService().Delete(ctx, ref, images.SynchronousDelete()) })
	for range 2 { // the second import replaces the first
		if err := r.ImportTemplate(ctx, path, name); err != nil {
			t.Fatalf("ImportTemplate: %v", err)
		}
	}
	if ok, err := r.HasTemplate(ctx, name); !ok || err != nil {
		t.Fatalf("HasTemplate = %v, %v; want true", ok, err)
	}
	if b, err := r.TemplateBuild(ctx, name); b != "rootfs" || err != nil {
		t.Errorf("TemplateBuild = %q, %v; want rootfs", b, err)
	}
	img, err := c.GetImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := img.IsUnpacked(ctx, r.cfg.Snapshotter); !ok || err != nil {
		t.Errorf("IsUnpacked = %v, %v; want true", ok, err)
	}
	desc, _ := img.Config(ctx)
	b, err := content.ReadBlob(ctx, c.ContentStore(), desc)
	if err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	json.Unmarshal(b, &cfg)
	if cfg.Config.User != "1000:1000" || cfg.Config.WorkingDir != "/workspace" || len(cfg.RootFS.DiffIDs) != 1 ||
		!strings.HasPrefix(string(cfg.RootFS.DiffIDs[0]), "sha256:") {
		t.Errorf("image config = %s; want user 1000:1000, workdir /workspace, one diff id", b)
	}
	if err := c.ImageService().Delete(ctx, ref, images.SynchronousDelete()); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.HasTemplate(ctx, name); ok || err != nil {
		t.Errorf("HasTemplate after delete = %v, %v; want false", ok, err)
	}
}

// TestFailedStart checks that a sandbox whose init dies is reported with
// its console output and leaves nothing behind.
func TestFailedStart(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module boom\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(`package main
import ("fmt"; "os")
func main() { fmt.Println("boom: sandboxd cannot start"); os.Exit(3) }
`), 0o644)
	cmd := exec.Command("go", "build", "-o", "boom", ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	newRuntime(t) // skip without containerd
	r, err := New(Config{Binary: filepath.Join(dir, "boom"), StateDir: stateDir, DefaultTemplate: testTemplate})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	id := runtime.NewID()
	_, err = r.Create(testCtx(t, time.Minute), runtime.Spec{ID: id})
	if err == nil || !strings.Contains(err.Error(), "boom: sandboxd cannot start") || !strings.Contains(err.Error(), "status 3") {
		t.Errorf("Create = %v; want the exit status and the console output", err)
	}
	assertGone(t, r, id)
}

// TestOrphans checks that half-gone sandboxes are reported and deleted.
func TestOrphans(t *testing.T) {
	r := newRuntime(t)
	ctx := testCtx(t, time.Minute)

	t.Run("state only", func(t *testing.T) {
		id := runtime.NewID()
		_, err := hoststate.Dir{Root: stateDir}.Create(hoststate.Meta{ID: id, Runtime: name, CreatedAt: time.Now()}, 1000, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.Get(ctx, id); err != nil || got.Status != runtime.StatusStopped {
			t.Errorf("Get = %+v, %v; want stopped", got, err)
		}
		if err := r.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		assertGone(t, r, id)
	})
	t.Run("container only", func(t *testing.T) {
		sb, _ := create(t, r, runtime.Spec{Labels: map[string]string{"k": "v"}})
		os.RemoveAll(filepath.Join(stateDir, sb.ID))
		got, err := r.Get(ctx, sb.ID)
		if err != nil || got.Status != runtime.StatusRunning || got.Labels["k"] != "v" || got.Template != testTemplate {
			t.Errorf("Get = %+v, %v; want running with labels and template", got, err)
		}
		if !listed(t, r, sb.ID) {
			t.Errorf("List lacks %s", sb.ID)
		}
	})
	t.Run("task stopped", func(t *testing.T) {
		sb, _ := create(t, r, runtime.Spec{})
		task, nctx := taskOf(t, r, sb.ID)
		exited, _ := task.Wait(nctx)
		if err := task.Kill(nctx, syscall.SIGKILL, ctrd.WithKillAll); err != nil {
			t.Fatal(err)
		}
		<-exited
		if got, err := r.Get(ctx, sb.ID); err != nil || got.Status != runtime.StatusStopped {
			t.Errorf("Get = %+v, %v; want stopped", got, err)
		}
	})
	t.Run("shim not answering", func(t *testing.T) {
		// A shim too busy to answer makes containerd report the task's
		// status as UNKNOWN (after its state timeout); that must not read
		// as stopped, or the reconciler would delete a live sandbox.
		sb, _ := create(t, r, runtime.Spec{})
		task, _ := taskOf(t, r, sb.ID)
		shim := parentPID(t, int(task.Pid()))
		if err := syscall.Kill(shim, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// kill returns before every thread has stopped: one busy or in a
		// system call could still answer a request.
		waitStopped(t, shim)
		stopped := true
		resume := func() {
			if stopped {
				syscall.Kill(shim, syscall.SIGCONT)
				stopped = false
			}
		}
		t.Cleanup(resume) // before the sandbox's own cleanup deletes it
		if got, err := r.Get(ctx, sb.ID); err != nil || got.Status != runtime.StatusUnknown {
			t.Errorf("Get with the shim stopped = %+v, %v; want unknown", got, err)
		}
		all, err := r.List(ctx)
		if err != nil {
			t.Fatalf("List with the shim stopped: %v", err)
		}
		for _, got := range all {
			if got.ID == sb.ID && got.Status != runtime.StatusUnknown {
				t.Errorf("List with the shim stopped has %s %s; want unknown", got.ID, got.Status)
			}
		}
		resume()
		if got, err := r.Get(ctx, sb.ID); err != nil || got.Status != runtime.StatusRunning {
			t.Errorf("Get with the shim resumed = %+v, %v; want running", got, err)
		}
	})
}

// taskOf loads sandbox id's containerd task, and returns it with a
// context in the runtime's namespace.
func taskOf(t *testing.T, r *Runtime, id string) (ctrd.Task, context.Context) {
	t.Helper()
	ctx := withNamespace(testCtx(t, time.Minute))
	c, err := r.conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := c.LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return task, ctx
}

// parentPID reads pid's parent from /proc.
func parentPID(t *testing.T, pid int) int {
	t.Helper()
	f := statFields(t, fmt.Sprintf("/proc/%d/stat", pid))
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, f)
	}
	return ppid
}

// statFields returns the fields of a /proc stat file after the command,
// which sits in parentheses and may hold spaces: [0] is the state.
func statFields(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// waitStopped waits until every thread of process pid is stopped (T).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		threads, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(threads) == 0 {
			t.Fatalf("threads of %d: %v", pid, err)
		}
		all := true
		for _, th := range threads {
			if st := statFields(t, th)[0]; st != "T" && st != "t" {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop", pid)
		}
	}
}

func listed(t testing.TB, r *Runtime, id string) bool {
	t.Helper()
	all, err := r.List(testCtx(t, time.Minute))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, sb := range all {
		if sb.ID == id {
			return true
		}
	}
	return false
}
