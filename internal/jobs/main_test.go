package jobs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/jobs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/bwrap"
	"github.com/corral-sh/corral/internal/runtime/pool"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/testenv"
)

// dirEnv passes the bwrap state and template directories to the child
// process of the crash test, so both see the same sandboxes.
const dirEnv = "CORRAL_JOBS_TEST_DIR"

var testDir string

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(crashChild()) // the control plane the crash test kills
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	d, err := os.MkdirTemp("", "corral-jobs-test-")
	if err == nil {
		err = os.Chmod(d, 0o755) // bwrap runs as uid 1000 and must reach it
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "test dir:", err)
		return 1
	}
	testDir = d
	os.Setenv(dirEnv, d)
	code := m.Run()
	if bin := os.Getenv("CORRAL_TEST_BINARY"); bin != "" { // remove what a failed test left
		if rt, err := bwrap.New(bwrapConfig(bin, d)); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			all, _ := rt.List(ctx)
			for _, sb := range all {
				_ = rt.Delete(ctx, sb.ID)
			}
			cancel()
			if len(all) > 0 && code == 0 {
				fmt.Fprintf(os.Stderr, "FAIL: the tests left %d sandboxes behind\n", len(all))
				code = 1
			}
		}
	}
	os.RemoveAll(d)
	return code
}

func bwrapConfig(bin, dir string) bwrap.Config {
	return bwrap.Config{Binary: bin, StateDir: filepath.Join(dir, "state"), TemplatesDir: filepath.Join(dir, "templates")}
}

var (
	rtOnce sync.Once
	rtVal  *bwrap.Runtime
	rtTpl  string
	rtErr  string
)

// testRuntime returns the bwrap runtime all tests share and its minimal
// template, or skips the test saying why it cannot run here.
func testRuntime(t testing.TB) (*bwrap.Runtime, string) {
	t.Helper()
	bin := runtimetest.Binary(t)
	rtOnce.Do(func() {
		os.Setenv("CORRAL_TEST_BINARY", bin) // the crash test's child reuses it
		rt, err := bwrap.New(bwrapConfig(bin, testDir))
		if err != nil {
			rtErr = err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Available(ctx); err != nil {
			rtErr = "bwrap is not usable here: " + err.Error()
			return
		}
		rtVal = rt
	})
	if rtVal == nil {
		testenv.Unavailable(t, "%s", rtErr)
	}
	if rtTpl == "" {
		rtTpl = runtimetest.Template(t, rtVal)
	}
	return rtVal, rtTpl
}

// sandboxes implements jobs.Sandboxes over a real runtime (bwrap), with an
// optional warm pool, and counts what it did.
type sandboxes struct {
	rt   runtime.Runtime
	tpl  string
	pool *pool.Pool

	failCreates atomic.Int64 // the next n Creates fail as an engine outage would
	creates     atomic.Int64
	// slow makes heartbeats time out as they do for a daemon that does not
	// answer in time while the runtime still runs its sandbox;
	// slowProbes counts them.
	slow       atomic.Bool
	slowProbes atomic.Int64

	mu      sync.Mutex
	clients map[string]*client.Client
	owners  map[string]string // sandbox -> tenant
	jobs    map[string]int    // job -> sandboxes created for it
}

var _ jobs.Sandboxes = (*sandboxes)(nil)

func newSandboxes(rt runtime.Runtime, tpl string) *sandboxes {
	return &sandboxes{rt: rt, tpl: tpl, clients: map[string]*client.Client{},
		owners: map[string]string{}, jobs: map[string]int{}}
}

func (s *sandboxes) Create(ctx context.Context, tenantID string, req cpapi.SandboxRequest, jobID string) (id, rt string, err error) {
	if s.failCreates.Add(-1) >= 0 {
		return "", "", errdefs.Unavailablef("the engine is down (injected)")
	}
	spec := runtime.Spec{Template: req.Template, Network: req.Network, Env: req.Env,
		Labels: map[string]string{"corral.tenant": tenantID, "corral.job": jobID}}
	if spec.Template == "" {
		spec.Template = s.tpl
	}
	if r := req.Resources; r != nil {
		spec.Resources = runtime.Resources{CPUs: r.CPUs, MemoryMB: r.MemoryMB, PIDs: r.PIDs, DiskMB: r.DiskMB}
	}
	if s.pool != nil {
		c, err := s.pool.Claim(ctx, spec)
		if err != nil {
			return "", "", err
		}
		id = c.ID
	} else {
		sb, err := s.rt.Create(ctx, spec)
		if err != nil {
			return "", "", err
		}
		id = sb.ID
	}
	s.creates.Add(1)
	s.mu.Lock()
	s.owners[id] = tenantID
	s.jobs[jobID]++
	s.mu.Unlock()
	return id, s.rt.Name(), nil
}

// get returns the sandbox if it belongs to the tenant. Sandboxes created
// by another process (the crash test's child) are known by their labels.
func (s *sandboxes) get(ctx context.Context, tenantID, id string) (*runtime.Sandbox, error) {
	sb, err := s.rt.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	owner, ok := s.owners[id]
	s.mu.Unlock()
	if !ok {
		owner = sb.Labels["corral.tenant"]
	}
	if owner != tenantID {
		return nil, errdefs.NotFoundf("sandbox %q not found", id)
	}
	return sb, nil
}

func (s *sandboxes) Client(ctx context.Context, tenantID, id string) (*client.Client, error) {
	s.mu.Lock()
	cl := s.clients[id]
	s.mu.Unlock()
	if cl != nil {
		return cl, nil
	}
	sb, err := s.get(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	cl, err = client.New(sb.Endpoint, client.WithToken(sb.Token))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.clients[id] = cl
	s.mu.Unlock()
	return cl, nil
}

func (s *sandboxes) Alive(ctx context.Context, tenantID, id string) error {
	sb, err := s.get(ctx, tenantID, id)
	if err != nil {
		return err
	}
	if sb.Status != runtime.StatusRunning {
		return errdefs.NotFoundf("sandbox %q is %s", id, sb.Status)
	}
	if s.slow.Load() {
		s.slowProbes.Add(1)
		return errdefs.Wrap(errdefs.ErrTimeout, context.DeadlineExceeded, "slow to answer (injected)")
	}
	cl, err := s.Client(ctx, tenantID, id)
	if err != nil {
		return err
	}
	_, err = cl.Health(ctx)
	return err
}

func (s *sandboxes) Delete(ctx context.Context, tenantID, id string) error {
	if _, err := s.get(ctx, tenantID, id); err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	s.mu.Lock()
	delete(s.clients, id)
	s.mu.Unlock()
	return s.rt.Delete(ctx, id)
}

// created returns how many sandboxes were made for job id.
func (s *sandboxes) created(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[id]
}

// live returns the ids of sandboxes that still exist for job id.
func (s *sandboxes) live(t testing.TB, jobID string) []string {
	t.Helper()
	all, err := s.rt.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var ids []string
	for _, sb := range all {
		if sb.Labels["corral.job"] == jobID {
			ids = append(ids, sb.ID)
		}
	}
	return ids
}
