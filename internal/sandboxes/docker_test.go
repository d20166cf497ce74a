package sandboxes_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/docker"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/sandboxes"
	"github.com/corral-sh/corral/internal/sandboxes/sandboxestest"
	"github.com/corral-sh/corral/internal/testenv"
)

// TestDocker runs a sandbox's whole life on the docker backend, next to
// bwrap, choosing the runtime by name.
func TestDocker(t *testing.T) {
	dir, err := os.MkdirTemp("", "corral-sandboxes-docker-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	dk, err := docker.New(docker.Config{Binary: runtimetest.Binary(t), StateDir: dir})
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { dk.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := dk.Available(ctx); err != nil {
		testenv.Unavailable(t, "docker is not usable here: %v", err)
	}
	tpl := runtimetest.Template(t, dk)
	bw, _ := sandboxestest.Bwrap(t)

	e := sandboxestest.New(t, sandboxes.Options{Default: "bwrap",
		Runtimes: map[string]runtime.Runtime{"bwrap": bw, "docker": dk}})
	tn := e.Tenant(t, "acme", 0)
	sb := create(t, e, tn, cpapi.SandboxRequest{Runtime: "docker", Template: tpl,
		Env: map[string]string{"WHO": "docker"}, Resources: &cpapi.Resources{MemoryMB: 256, PIDs: 128}},
		sandboxes.CreateOptions{})
	if sb.Runtime != "docker" || sb.Template != tpl {
		t.Errorf("Create = %+v; want runtime docker, template %s", sb, tpl)
	}
	if got := run(t, e, tn, sb.ID, "echo $WHO $(id -u)"); got != "docker 1000" {
		t.Errorf("exec in the docker sandbox = %q; want %q", got, "docker 1000")
	}
	if _, err := e.Service.Create(testCtx(t), tn, cpapi.SandboxRequest{Runtime: "kvm"}, sandboxes.CreateOptions{}); err == nil ||
		!errors.Is(err, errdefs.ErrUnprocessable) {
		t.Errorf("Create on runtime kvm = %v; want unprocessable", err)
	}
	if err := e.Service.Delete(testCtx(t), tn, sb.ID); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if _, err := dk.Get(testCtx(t), sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("docker Get after Delete = %v; want not found", err)
	}
}
