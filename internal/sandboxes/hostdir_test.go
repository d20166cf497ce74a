package sandboxes_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sandboxes"
	"github.com/corral-sh/corral/internal/sandboxes/sandboxestest"
)

// TestHostDir: the directory is the one mounted at /run/corral: a socket
// the host makes there is visible and connectable inside the sandbox.
func TestHostDir(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{})
	tn := e.Tenant(t, "acme", 0)
	other := e.Tenant(t, "other", 0)
	sb := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})

	dir, err := e.Service.HostDir(testCtx(t), tn, sb.ID)
	if err != nil {
		t.Fatalf("HostDir = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sandboxd.sock")); err != nil {
		t.Fatalf("HostDir = %s, which does not hold sandboxd.sock: %v", dir, err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "probe.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(filepath.Join(dir, "probe.sock"), 0o666); err != nil {
		t.Fatal(err)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	// The sandbox's daemon (uid 1000, in its own namespaces) forwards a
	// port inside to it, and a process there reads the host's greeting.
	c, err := e.Service.Client(testCtx(t), tn, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.CreateForward(testCtx(t), sandboxapi.ForwardRequest{Socket: "probe.sock"})
	if err != nil {
		t.Fatalf("CreateForward: %v", err)
	}
	if f.Socket != "/run/corral/probe.sock" {
		t.Errorf("forward socket %q; want /run/corral/probe.sock", f.Socket)
	}
	got := run(t, e, tn, sb.ID, fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d; head -n 1 <&3'`, f.Port))
	if got != "hello from the host" {
		t.Errorf("read through the forward: %q; want the host's greeting", got)
	}

	if _, err := e.Service.HostDir(testCtx(t), other, sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("HostDir for another tenant = %v; want ErrNotFound", err)
	}
	if _, err := e.Service.HostDir(testCtx(t), tn, "sb_nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("HostDir of an unknown sandbox = %v; want ErrNotFound", err)
	}
}
