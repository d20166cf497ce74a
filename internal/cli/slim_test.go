//go:build !slim

package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/client"
)

// TestSlimBuildIsLean: the slim build (what sandboxes run) links none of
// the control plane, the engines' clients or the databases.
func TestSlimBuildIsLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "slim", "-deps", "github.com/corral-sh/corral/cmd/corral").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"github.com/moby/", "github.com/docker/", "github.com/containerd/", "google.golang.org/grpc",
			"modernc.org/sqlite", "github.com/jackc/", "github.com/corral-sh/corral/internal/controlplane",
			"github.com/corral-sh/corral/internal/runtime/", "github.com/corral-sh/corral/internal/store"} {
			if strings.HasPrefix(dep, heavy) {
				t.Errorf("the slim build links %s", dep)
			}
		}
	}
}

// TestSlimBinaryServes runs the slim binary's daemon (built by make) and
// checks it answers.
func TestSlimBinaryServes(t *testing.T) {
	bin := os.Getenv("CORRAL_TEST_SANDBOXD_BINARY")
	if bin == "" {
		t.Skip("CORRAL_TEST_SANDBOXD_BINARY is not set (make test sets it)")
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	cmd := exec.Command(bin, "sandboxd", "--listen", "unix:"+sock, "--root", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	c, err := client.New("unix:" + sock)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.Health(context.Background()); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slim sandboxd did not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
