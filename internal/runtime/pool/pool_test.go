package pool_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/testenv"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/bwrap"
	"github.com/corral-sh/corral/internal/runtime/pool"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
)

// newRuntime returns a real bwrap runtime (the fastest to create) over a
// fresh directory, with the minimal template.
func newRuntime(t *testing.T) (runtime.Runtime, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "corral-pool-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // bwrap runs as uid 1000 and must reach it
	t.Cleanup(func() { os.RemoveAll(dir) })
	r, err := bwrap.New(bwrap.Config{Binary: runtimetest.Binary(t),
		StateDir: filepath.Join(dir, "state"), TemplatesDir: filepath.Join(dir, "templates")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Available(ctx); err != nil {
		testenv.Unavailable(t, "bwrap is not usable here: %v", err)
	}
	return r, runtimetest.Template(t, r)
}

func waitReady(t *testing.T, p *pool.Pool, key pool.Key, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for p.Ready(key) < n {
		if time.Now().After(deadline) {
			t.Fatalf("pool has %d ready; want %d", p.Ready(key), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func count(t *testing.T, rt runtime.Runtime) int {
	t.Helper()
	all, err := rt.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

func TestClaimWarmThenRefill(t *testing.T) {
	rt, tpl := newRuntime(t)
	p := pool.New(rt, 2, nil)
	defer p.Close()
	spec := runtime.Spec{Template: tpl, Env: map[string]string{"SECRET": "s3"}, Labels: map[string]string{"job": "j1"}}
	key := pool.KeyOf(spec)
	p.Warm(key)
	waitReady(t, p, key, 2)

	c, err := p.Claim(context.Background(), spec)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	defer rt.Delete(context.Background(), c.ID)
	if !c.Warm || c.Env["SECRET"] != "s3" || c.Labels["job"] != "j1" {
		t.Errorf("claimed = warm %v env %v labels %v; want warm with the claim's env and labels", c.Warm, c.Env, c.Labels)
	}
	// The secret was never in the sandbox: it is the claim's, not the fill's.
	cl, _ := client.New(c.Endpoint, client.WithToken(c.Token))
	out, err := cl.Exec(context.Background(), execEnv())
	if err != nil || out.Stdout != "\n" {
		t.Errorf("SECRET inside a pooled sandbox = %q, %v; want empty", out.Stdout, err)
	}
	waitReady(t, p, key, 2) // refilled in the background

	// A claim with its own id, or for a key not kept warm, is created cold.
	cold, err := p.Claim(context.Background(), runtime.Spec{Template: tpl, Resources: runtime.Resources{PIDs: 99}})
	if err != nil {
		t.Fatalf("cold Claim: %v", err)
	}
	defer rt.Delete(context.Background(), cold.ID)
	if cold.Warm {
		t.Errorf("claim for an unwarmed key came from the pool")
	}
}

func TestDeadWarmSandboxIsSkipped(t *testing.T) {
	rt, tpl := newRuntime(t)
	p := pool.New(rt, 1, nil)
	defer p.Close()
	key := pool.Key{Template: tpl, Network: runtime.NetworkNone}
	p.Warm(key)
	waitReady(t, p, key, 1)
	all, _ := rt.List(context.Background())
	for _, sb := range all { // kill the warm one behind the pool's back
		if err := rt.Delete(context.Background(), sb.ID); err != nil {
			t.Fatal(err)
		}
	}
	c, err := p.Claim(context.Background(), runtime.Spec{Template: tpl})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	defer rt.Delete(context.Background(), c.ID)
	cl, _ := client.New(c.Endpoint, client.WithToken(c.Token))
	if _, err := cl.Health(context.Background()); err != nil {
		t.Errorf("claimed a dead sandbox: %v", err)
	}
}

func TestCloseDeletesUnclaimed(t *testing.T) {
	rt, tpl := newRuntime(t)
	p := pool.New(rt, 3, nil)
	key := pool.Key{Template: tpl, Network: runtime.NetworkNone}
	p.Warm(key)
	waitReady(t, p, key, 3)
	p.Close()
	if n := count(t, rt); n != 0 {
		t.Errorf("%d sandboxes left after Close; want 0", n)
	}
	if _, err := p.Claim(context.Background(), runtime.Spec{Template: tpl}); err == nil {
		t.Errorf("Claim after Close succeeded")
	}
}

func execEnv() sandboxapi.ExecRequest {
	return sandboxapi.ExecRequest{Command: "echo $SECRET", Shell: true}
}
