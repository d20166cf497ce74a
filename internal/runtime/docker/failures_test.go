package docker

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// TestOrphans checks that half-gone sandboxes (a container without state,
// state without a container) are listed as stopped and deleted cleanly.
func TestOrphans(t *testing.T) {
	r := newRuntime(t)
	ctx := testCtx(t, time.Minute)
	noState, _ := create(t, r, runtime.Spec{Labels: map[string]string{"orphan": "container"}})
	if err := os.RemoveAll(filepath.Join(testStateDir, noState.ID)); err != nil {
		t.Fatal(err)
	}
	noContainer, err := r.state.Create(hoststate.Meta{ID: runtime.NewID(), Runtime: "docker", CreatedAt: time.Now()}, runtime.AgentUID, runtime.AgentGID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.state.Remove(noContainer.Meta.ID) })

	all, err := r.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, id := range []string{noState.ID, noContainer.Meta.ID} {
		i := slices.IndexFunc(all, func(s *runtime.Sandbox) bool { return s.ID == id })
		if i < 0 || all[i].Status != runtime.StatusStopped {
			t.Errorf("List has no stopped %s: %v", id, all)
		}
	}
	got, err := r.Get(ctx, noState.ID)
	if err != nil || got.Status != runtime.StatusStopped || got.Labels["orphan"] != "container" || got.Token != "" {
		t.Errorf("Get(container without state) = %+v, %v; want stopped, its labels, no token", got, err)
	}
	for _, id := range []string{noState.ID, noContainer.Meta.ID} {
		if err := r.Delete(ctx, id); err != nil {
			t.Errorf("Delete(%s): %v", id, err)
		}
		assertGone(t, r, id)
	}
}

// TestConcurrentDelete checks that deletes racing for one sandbox all
// succeed.
func TestConcurrentDelete(t *testing.T) {
	r := newRuntime(t)
	sb, _ := create(t, r, runtime.Spec{})
	ctx := testCtx(t, time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() { errs <- r.Delete(ctx, sb.ID) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Delete: %v", err)
		}
	}
	assertGone(t, r, sb.ID)
}

func TestUnavailable(t *testing.T) {
	r, err := New(Config{Host: "unix:///nonexistent/docker.sock", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.Available(testCtx(t, 10*time.Second))
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "/nonexistent/docker.sock") {
		t.Errorf("Available with no engine = %v; want ErrUnavailable naming the socket", err)
	}
}

func TestCreateErrors(t *testing.T) {
	r := newRuntime(t)
	ctx := testCtx(t, time.Minute)
	tests := []struct {
		name string
		spec runtime.Spec
		want error
		msg  string
	}{
		{"missing template", runtime.Spec{Template: "corral-no-such-template"}, errdefs.ErrUnprocessable, "corral template build"},
		{"bad network", runtime.Spec{Network: "host"}, errdefs.ErrInvalid, "network"},
		{"bad id", runtime.Spec{ID: "../x"}, errdefs.ErrInvalid, "sandbox id"},
		{"reserved env", runtime.Spec{Env: map[string]string{runtime.TokenEnv: "mine"}}, errdefs.ErrInvalid, "reserved"},
		{"engine refuses memory", runtime.Spec{Resources: runtime.Resources{MemoryMB: 1}}, errdefs.ErrInvalid, "memory"},
		{"too many cpus", runtime.Spec{Resources: runtime.Resources{CPUs: 999}}, errdefs.ErrInvalid, "CPU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := runtime.NewID()
			if tt.spec.ID == "" {
				tt.spec.ID = id
			}
			sb, err := r.Create(ctx, tt.spec)
			if err == nil {
				r.Delete(ctx, sb.ID)
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Create(%+v) = %v; want class %v mentioning %q", tt.spec, err, tt.want, tt.msg)
			}
			t.Logf("Create: %v", err)
			assertGone(t, r, id)
		})
	}
}

// TestStartFailure checks that a sandbox whose init exits reports its
// output and leaves nothing behind.
func TestStartFailure(t *testing.T) {
	newRuntime(t)
	bin := fakeCorral(t, `fmt.Println("boom: cannot serve"); os.Exit(3)`)
	r, err := New(Config{Binary: bin, StateDir: testStateDir, DefaultTemplate: testTemplate})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	id := runtime.NewID()
	_, err = r.Create(testCtx(t, time.Minute), runtime.Spec{ID: id})
	if err == nil || !strings.Contains(err.Error(), "boom: cannot serve") || !strings.Contains(err.Error(), "exit code 3") {
		t.Errorf("Create with a failing init = %v; want its exit code and output", err)
	}
	t.Logf("Create: %v", err)
	assertGone(t, r, id)
}

// fakeCorral builds a static binary whose main runs body, to stand in
// for corral.
func fakeCorral(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	src := "package main\n\nimport (\"fmt\"; \"os\")\n\nfunc main() { " + body + " }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "corral")
	cmd := exec.Command("go", "build", "-o", bin, "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build fake corral: %v: %s", err, msg)
	}
	return bin
}
