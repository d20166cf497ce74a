// Package sandboxestest sets up real sandbox services for tests: a bwrap
// runtime shared by the whole test process (over a directory uid 1000 can
// reach, with the minimal template), a fresh SQLite store per test, a
// Service over both, and a clock tests can move forward.
//
// Lifetimes: the shared runtime lives until Main returns, which deletes any
// sandbox still on it and its directory. Each Env deletes, when its test
// ends, every sandbox its store still records, and fails the test if the
// runtime holds any other (a sandbox the test leaked). Tests using Envs
// must not run in parallel: they share the runtime.
package sandboxestest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/bwrap"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/sandboxes"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
	"github.com/corral-sh/corral/internal/testenv"
)

var (
	mu       sync.Mutex // guards the shared runtime below
	dir      string
	shared   *bwrap.Runtime
	template string
)

// Main runs the tests, then deletes whatever they left on the shared
// runtime, and its directory. Call it from TestMain: os.Exit(Main(m)).
//
// It also fails the run when goroutines outlive the tests: once every
// sandbox is deleted and every test server closed, nothing the tests
// started may still be running.
func Main(m *testing.M) int {
	before := goruntime.NumGoroutine()
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		all, _ := shared.List(ctx)
		for _, sb := range all {
			_ = shared.Delete(ctx, sb.ID)
		}
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
	if code == 0 && !settled(before) {
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "goroutines leaked: %d before the tests, %d after\n%s\n",
			before, goruntime.NumGoroutine(), buf[:goruntime.Stack(buf, true)])
		return 1
	}
	return code
}

// settled waits a while for the goroutine count to fall back to n: idle
// connections and reapers end shortly after what they serve is gone.
func settled(n int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Bwrap returns the shared bwrap runtime and its template's ref, making
// them on first use; it skips the test (fails in CI) when bwrap or the
// template is unusable here.
func Bwrap(t testing.TB) (*bwrap.Runtime, string) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		return shared, template
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "corral-sandboxes-test-")
		if err == nil {
			err = os.Chmod(d, 0o755) // bwrap runs as uid 1000 and must reach it
		}
		if err != nil {
			t.Fatalf("test dir: %v", err)
		}
		dir = d
	}
	r, err := bwrap.New(bwrap.Config{Binary: runtimetest.Binary(t),
		StateDir: filepath.Join(dir, "state"), TemplatesDir: filepath.Join(dir, "templates")})
	if err != nil {
		t.Fatalf("bwrap.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Available(ctx); err != nil {
		testenv.Unavailable(t, "bwrap is not usable here: %v", err)
	}
	template = runtimetest.Template(t, r)
	shared = r
	return shared, template
}

// Clock is the real time plus an offset tests move forward.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the current time as the clock sees it.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// Env is a Service over a fresh store and the shared bwrap runtime.
type Env struct {
	Service  *sandboxes.Service
	Options  sandboxes.Options // as given to New, defaults filled in here
	Store    *store.Store
	Runtime  *bwrap.Runtime
	Template string
	Clock    *Clock
}

// New returns an Env. opts' zero Store, Runtimes, Default,
// DefaultTemplate, Now and Log are filled in: a fresh SQLite store,
// {"bwrap": the shared runtime}, "bwrap", its template, Env.Clock (which
// the store uses too) and a logger that discards.
func New(t testing.TB, opts sandboxes.Options) *Env {
	t.Helper()
	rt, tpl := Bwrap(t)
	e := &Env{Runtime: rt, Template: tpl, Clock: &Clock{}}
	if opts.Store == nil {
		u := storetest.Backends()[0].NewURL(t)
		opts.Store = storetest.Open(t, u)
		opts.Store.SetClock(e.Clock.Now)
	}
	if opts.Runtimes == nil {
		opts.Runtimes = map[string]runtime.Runtime{"bwrap": rt}
		if opts.Default == "" {
			opts.Default = "bwrap"
		}
	}
	if opts.DefaultTemplate == "" {
		opts.DefaultTemplate = tpl
	}
	if opts.Now == nil {
		opts.Now = e.Clock.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	e.Store, e.Options = opts.Store, opts
	e.Service = sandboxes.New(opts)
	t.Cleanup(func() { e.cleanup(t) })
	return e
}

// cleanup deletes every sandbox the store records, then fails the test
// for any other the runtimes still hold.
func (e *Env) cleanup(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := e.Store.ListAllSandboxes(ctx)
	if err != nil {
		t.Errorf("cleanup: list records: %v", err)
	}
	for _, rec := range recs {
		if err := e.Service.Delete(ctx, rec.TenantID, rec.ID); err != nil {
			t.Errorf("cleanup: Delete(%s): %v", rec.ID, err)
		}
	}
	for name, rt := range e.Options.Runtimes {
		all, err := rt.List(ctx)
		if err != nil {
			t.Errorf("cleanup: list runtime %s: %v", name, err)
		}
		for _, sb := range all {
			t.Errorf("cleanup: the test left sandbox %s (labels %v) on runtime %s", sb.ID, sb.Labels, name)
			_ = rt.Delete(ctx, sb.ID)
		}
	}
}

// Tenant creates a tenant allowed maxSandboxes sandboxes (0: unlimited)
// and returns its id.
func (e *Env) Tenant(t testing.TB, name string, maxSandboxes int) string {
	t.Helper()
	tn, err := e.Store.CreateTenant(context.Background(), store.Tenant{Name: name, MaxSandboxes: maxSandboxes})
	if err != nil {
		t.Fatalf("CreateTenant(%q) = %v", name, err)
	}
	return tn.ID
}
