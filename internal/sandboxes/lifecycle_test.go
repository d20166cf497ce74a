package sandboxes_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/pool"
	"github.com/corral-sh/corral/internal/sandboxes"
	"github.com/corral-sh/corral/internal/sandboxes/sandboxestest"
	"github.com/corral-sh/corral/internal/store"
)

// startRun runs the expiry loop until the test ends.
func startRun(t *testing.T, s *sandboxes.Service) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v; want context.Canceled", err)
		}
	})
}

// exists reports whether the tenant's sandbox id has a record and a
// sandbox at the runtime; an expiry happening meanwhile counts as neither.
func exists(t *testing.T, e *sandboxestest.Env, tenant, id string) bool {
	t.Helper()
	_, rtErr := e.Runtime.Get(testCtx(t), id) // deleted first
	_, recErr := e.Service.Get(testCtx(t), tenant, id)
	return rtErr == nil && recErr == nil
}

// waitGone waits for the expiry loop to delete id, record and sandbox.
func waitGone(t *testing.T, e *sandboxestest.Env, tenant, id, why string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, rtErr := e.Runtime.Get(testCtx(t), id)
		_, recErr := e.Service.Get(testCtx(t), tenant, id)
		if errors.Is(rtErr, errdefs.ErrNotFound) && errors.Is(recErr, errdefs.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s: record %v, runtime %v; want both deleted (%s)", id, recErr, rtErr, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle lets the loop run a few passes.
func settle() { time.Sleep(150 * time.Millisecond) }

func TestExpiry(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{IdleTimeout: time.Minute, SweepEvery: 10 * time.Millisecond})
	tn := e.Tenant(t, "acme", 0)
	timed := create(t, e, tn, cpapi.SandboxRequest{TimeoutS: 30}, sandboxes.CreateOptions{})
	plain := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})
	job := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{JobID: "job_1"})
	held := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})
	release := e.Service.Hold(held.ID) // an open connection, e.g. a terminal
	startRun(t, e.Service)

	e.Clock.Advance(31 * time.Second)
	waitGone(t, e, tn, timed.ID, "past its timeout_s")
	if !exists(t, e, tn, plain.ID) {
		t.Fatalf("sandbox idle for 31 s of a 1 min idle timeout was deleted")
	}

	// Activity through Dial keeps plain alive past its first minute.
	if _, _, err := e.Service.Dial(testCtx(t), tn, plain.ID); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(45 * time.Second)
	settle()
	if !exists(t, e, tn, plain.ID) {
		t.Fatalf("sandbox used 45 s ago was deleted as idle")
	}
	e.Clock.Advance(20 * time.Second)
	waitGone(t, e, tn, plain.ID, "idle for 65 s")

	// A job's sandbox and one with a connection open are never idle.
	e.Clock.Advance(10 * time.Minute)
	settle()
	if !exists(t, e, tn, job.ID) || !exists(t, e, tn, held.ID) {
		t.Fatalf("job sandbox exists %v, held sandbox exists %v; want both kept",
			exists(t, e, tn, job.ID), exists(t, e, tn, held.ID))
	}
	release()
	e.Clock.Advance(59 * time.Second)
	settle()
	if !exists(t, e, tn, held.ID) {
		t.Fatalf("sandbox whose connection closed 59 s ago was deleted")
	}
	e.Clock.Advance(2 * time.Second)
	waitGone(t, e, tn, held.ID, "idle for 61 s after its connection closed")
	if !exists(t, e, tn, job.ID) {
		t.Errorf("job sandbox was deleted as idle")
	}
}

func TestReconcile(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{})
	tn := e.Tenant(t, "acme", 0)
	ctx := testCtx(t)
	healthy := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})
	lost := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{JobID: "job_7"})
	if err := e.Runtime.Delete(ctx, lost.ID); err != nil { // behind the service's back
		t.Fatal(err)
	}
	orphan, err := e.Runtime.Create(ctx, runtime.Spec{Template: e.Template})
	if err != nil {
		t.Fatal(err)
	}
	warmLeftover, err := e.Runtime.Create(ctx, runtime.Spec{Template: e.Template, Labels: map[string]string{sandboxes.LabelPool: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	// A crash after the runtime made the sandbox, before the record said
	// "running".
	stuckID := runtime.NewID()
	if _, err := e.Store.CreateSandbox(ctx, store.Sandbox{ID: stuckID, TenantID: tn, Runtime: "bwrap",
		Template: e.Template, Status: sandboxes.StatusCreating}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Runtime.Create(ctx, runtime.Spec{ID: stuckID, Template: e.Template}); err != nil {
		t.Fatal(err)
	}

	restarted := sandboxes.New(e.Options) // a new control-plane process
	rep, err := restarted.Reconcile(ctx)
	if err != nil {
		t.Fatalf("Reconcile = %v", err)
	}
	wantLost := []sandboxes.Lost{{ID: lost.ID, TenantID: tn, JobID: "job_7"}}
	slices.Sort(rep.Orphans)
	wantOrphans := []string{orphan.ID, warmLeftover.ID}
	slices.Sort(wantOrphans)
	if !slices.Equal(rep.Lost, wantLost) || !slices.Equal(rep.Orphans, wantOrphans) || !slices.Equal(rep.Stuck, []string{stuckID}) {
		t.Errorf("Reconcile = %+v; want lost %v, orphans %v, stuck [%s]", rep, wantLost, wantOrphans, stuckID)
	}
	for _, id := range []string{orphan.ID, warmLeftover.ID, stuckID} {
		if _, err := e.Runtime.Get(ctx, id); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("runtime Get(%s) after Reconcile = %v; want not found", id, err)
		}
	}
	for _, id := range []string{lost.ID, stuckID} {
		if _, err := restarted.Get(ctx, tn, id); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Get(%s) after Reconcile = %v; want not found", id, err)
		}
	}
	if err := restarted.Alive(ctx, tn, healthy.ID); err != nil {
		t.Errorf("healthy sandbox after Reconcile: Alive = %v", err)
	}
	if rep, err := restarted.Reconcile(ctx); err != nil || len(rep.Lost)+len(rep.Orphans)+len(rep.Stuck) != 0 {
		t.Errorf("second Reconcile = %+v, %v; want nothing to do", rep, err)
	}
}

func TestWarmPool(t *testing.T) {
	rt, tpl := sandboxestest.Bwrap(t)
	p := pool.New(rt, 1, nil)
	key := pool.KeyOf(runtime.Spec{Template: tpl})
	p.Warm(key)
	e := sandboxestest.New(t, sandboxes.Options{Pools: map[string]*pool.Pool{"bwrap": p}})
	t.Cleanup(p.Close) // before Env's cleanup checks for leftovers
	tn := e.Tenant(t, "acme", 0)
	deadline := time.Now().Add(time.Minute)
	for p.Ready(key) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the pool never got a sandbox ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	all, err := rt.List(testCtx(t))
	if err != nil || len(all) != 1 {
		t.Fatalf("runtime List = %d, %v; want the one warm sandbox", len(all), err)
	}
	warmID := all[0].ID

	sb := create(t, e, tn, cpapi.SandboxRequest{TimeoutS: 600, Labels: map[string]string{"k": "v"}}, sandboxes.CreateOptions{})
	if sb.ID != warmID || sb.Status != sandboxes.StatusRunning || sb.ExpiresAt == nil || sb.Labels["k"] != "v" {
		t.Errorf("Create without env = %+v; want the warm sandbox %s, running, with deadline and labels", sb, warmID)
	}
	if list, err := e.Service.List(testCtx(t), tn); err != nil || len(list.Sandboxes) != 1 || list.Sandboxes[0].ID != warmID {
		t.Errorf("List = %+v, %v; want only the warm sandbox's record (the placeholder replaced)", list, err)
	}
	if got := run(t, e, tn, sb.ID, "echo warm"); got != "warm" {
		t.Errorf("exec in the claimed sandbox = %q; want %q", got, "warm")
	}

	// With env the sandbox is created cold: sandboxd takes env only at start.
	cold := create(t, e, tn, cpapi.SandboxRequest{Env: map[string]string{"SECRET": "s3"}}, sandboxes.CreateOptions{})
	if cold.ID == warmID {
		t.Errorf("Create with env took the warm sandbox")
	}
	if got := run(t, e, tn, cold.ID, "echo $SECRET"); got != "s3" {
		t.Errorf("env in the cold sandbox = %q; want %q", got, "s3")
	}
}

// undecided is a runtime whose engine cannot tell whether one sandbox
// runs, as containerd answers when that sandbox's shim is too busy (the
// containerd runtime's own tests make a real shim do so).
type undecided struct {
	runtime.Runtime
	id string
}

func (u undecided) mark(sb *runtime.Sandbox) *runtime.Sandbox {
	if sb != nil && sb.ID == u.id {
		c := *sb
		c.Status = runtime.StatusUnknown
		return &c
	}
	return sb
}

func (u undecided) Get(ctx context.Context, id string) (*runtime.Sandbox, error) {
	sb, err := u.Runtime.Get(ctx, id)
	return u.mark(sb), err
}

func (u undecided) List(ctx context.Context) ([]*runtime.Sandbox, error) {
	all, err := u.Runtime.List(ctx)
	for i := range all {
		all[i] = u.mark(all[i])
	}
	return all, err
}

// TestReconcileUnknown: a sandbox whose status the engine cannot read is
// neither deleted by Reconcile nor refused by the proxy.
func TestReconcileUnknown(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{})
	tn := e.Tenant(t, "acme", 0)
	ctx := testCtx(t)
	sb := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})

	opts := e.Options
	opts.Runtimes = map[string]runtime.Runtime{"bwrap": undecided{e.Runtime, sb.ID}}
	restarted := sandboxes.New(opts)
	rep, err := restarted.Reconcile(ctx)
	if err != nil || len(rep.Lost)+len(rep.Orphans)+len(rep.Stuck) != 0 {
		t.Errorf("Reconcile = %+v, %v; want nothing done", rep, err)
	}
	if _, err := e.Runtime.Get(ctx, sb.ID); err != nil {
		t.Errorf("runtime Get after Reconcile = %v; want the sandbox kept", err)
	}
	if err := restarted.Alive(ctx, tn, sb.ID); err != nil {
		t.Errorf("Alive with an unknown status = %v; want its daemon reached", err)
	}
}

// elsewhere is a runtime that gives one sandbox's daemon another endpoint.
type elsewhere struct {
	runtime.Runtime
	id, endpoint string
}

func (w elsewhere) Get(ctx context.Context, id string) (*runtime.Sandbox, error) {
	sb, err := w.Runtime.Get(ctx, id)
	if sb != nil && sb.ID == w.id {
		c := *sb
		c.Endpoint = w.endpoint
		return &c, err
	}
	return sb, err
}

// TestAliveSlowOrGone: a daemon that does not answer in time while its
// runtime runs the sandbox is slow (ErrTimeout); one that refuses
// connections, or whose sandbox the runtime no longer has, is gone.
func TestAliveSlowOrGone(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{})
	tn := e.Tenant(t, "acme", 0)
	sb := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})

	// A daemon that takes connections and never answers.
	dir := t.TempDir()
	hung, err := net.Listen("unix", filepath.Join(dir, "hung.sock"))
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				close(held)
				return
			}
			held <- c
		}
	}()
	t.Cleanup(func() {
		hung.Close()
		for c := range held {
			c.Close()
		}
	})
	service := func(endpoint string) *sandboxes.Service {
		opts := e.Options
		opts.Runtimes = map[string]runtime.Runtime{"bwrap": elsewhere{e.Runtime, sb.ID, endpoint}}
		return sandboxes.New(opts)
	}
	alive := func(s *sandboxes.Service) error {
		ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Second) // the hung daemon takes all of it
		defer cancel()
		return s.Alive(ctx, tn, sb.ID)
	}

	if err := alive(service("unix:" + filepath.Join(dir, "none.sock"))); !errors.Is(err, errdefs.ErrBadGateway) {
		t.Errorf("Alive, refused = %v; want bad gateway", err)
	}
	slow := service("unix:" + hung.Addr().String())
	if err := alive(slow); !errors.Is(err, errdefs.ErrTimeout) {
		t.Errorf("Alive, not answering = %v; want a timeout", err)
	}
	if err := e.Runtime.Delete(testCtx(t), sb.ID); err != nil { // behind the service's back
		t.Fatal(err)
	}
	if err := alive(slow); !errors.Is(err, errdefs.ErrBadGateway) {
		t.Errorf("Alive, not answering and no longer run = %v; want bad gateway", err)
	}
}
