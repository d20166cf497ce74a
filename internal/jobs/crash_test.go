package jobs_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/eventlog"
	"github.com/corral-sh/corral/internal/jobs"
	"github.com/corral-sh/corral/internal/runtime/bwrap"
	"github.com/corral-sh/corral/internal/store"
)

// The crash test's child process is this test binary with childEnv set:
// TestMain runs crashChild instead of the tests.
const (
	childEnv          = "CORRAL_JOBS_CHILD"
	childDBEnv        = "CORRAL_JOBS_DB"
	childWorkerEnv    = "CORRAL_JOBS_WORKER"
	childArtifactsEnv = "CORRAL_JOBS_ARTIFACTS"
	childTemplateEnv  = "CORRAL_JOBS_TEMPLATE"
)

// crashChild runs a control plane configured by the environment until it
// is killed.
func crashChild() int {
	ctx := context.Background()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "crash child: %s: %v\n", what, err)
		return 2
	}
	st, err := store.Open(ctx, os.Getenv(childDBEnv), nil)
	if err != nil {
		return fail("store", err)
	}
	b, err := eventlog.New(ctx, st, eventlog.Options{})
	if err != nil {
		return fail("broker", err)
	}
	rt, err := bwrap.New(bwrapConfig(os.Getenv("CORRAL_TEST_BINARY"), os.Getenv(dirEnv)))
	if err != nil {
		return fail("bwrap", err)
	}
	m, err := jobs.New(jobs.Options{Store: st, Broker: b, Sandboxes: newSandboxes(rt, os.Getenv(childTemplateEnv)),
		WorkerID: os.Getenv(childWorkerEnv), ArtifactsDir: os.Getenv(childArtifactsEnv),
		Heartbeat: 100 * time.Millisecond, Lease: 3 * time.Second, Poll: 50 * time.Millisecond})
	if err != nil {
		return fail("jobs", err)
	}
	if err := m.Recover(ctx); err != nil {
		return fail("recover", err)
	}
	_ = m.Run(ctx) // until SIGKILL
	return 0
}

// TestCrashRecovery kills -9 a control plane while a script job prints
// numbered lines, keeps it dead while the script goes on, and starts a new
// one with the same worker id: the job is re-attached and completes, and
// its output in the log is exactly what the script printed.
func TestCrashRecovery(t *testing.T) {
	e := newEnv(t, sqlite())
	opts := e.options()
	submitter, err := jobs.New(opts) // submits only; never runs
	if err != nil {
		t.Fatal(err)
	}
	const lines = 80
	j := e.submit(submitter, cpapi.JobRequest{Agent: cpapi.AgentScript,
		Command: fmt.Sprintf(`i=1; while [ $i -le %d ]; do echo "line $i"; i=$((i+1)); sleep 0.03; done`, lines)})

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"=1", childDBEnv+"="+e.url, childWorkerEnv+"="+opts.WorkerID,
		childArtifactsEnv+"="+opts.ArtifactsDir, childTemplateEnv+"="+e.sb.tpl)
	child.Stdout, child.Stderr = os.Stderr, os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			child.Process.Kill()
			child.Wait()
		}
	})
	waitOutput(t, e, j.ID, "line 10\n")
	if err := child.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	child.Wait()
	killed = true
	_, _, before := output(t, e.events(j.ID))
	time.Sleep(time.Second) // the script prints on with nobody reading

	m, _ := e.start(opts) // same worker id: Recover finds the job
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobCompleted {
		t.Fatalf("job = %s %s; want completed\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
	evs := e.events(j.ID)
	stdout, _, _ := output(t, evs) // checks the events tile the output: no gap, no overlap
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if stdout != want.String() {
		t.Errorf("output after the crash = %q\nwant %q", stdout, want.String())
	}
	if !strings.HasPrefix(stdout, before) || len(before) >= len(stdout) {
		t.Errorf("output before the crash (%d bytes) is not a strict prefix of the whole (%d)", len(before), len(stdout))
	}
	running := 0
	for _, s := range states(t, evs) {
		if s == "creating>running" {
			running++
		}
	}
	if running != 1 {
		t.Errorf("the job entered running %d times; want once (re-attached, not restarted)", running)
	}
	waitGone(t, e, j.ID)
}

// TestRecoverLostSandbox: a control plane dies, and the sandbox of its
// running job dies too; on restart the job fails sandbox_lost.
func TestRecoverLostSandbox(t *testing.T) {
	e := newEnv(t, sqlite())
	opts := e.options()
	m1, stop := e.start(opts)
	j := e.submit(m1, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "echo up; sleep 60"})
	j = e.wait(m1, j.ID, time.Minute, cpapi.JobRunning)
	waitOutput(t, e, j.ID, "up\n")
	stop() // a stopped control plane leaves its jobs as a crashed one does
	if got, _ := m1.Get(context.Background(), e.tenant, j.ID); got.Status != cpapi.JobRunning {
		t.Fatalf("after stop the job is %s; want still running", got.Status)
	}
	if err := e.sb.rt.Delete(context.Background(), j.SandboxID); err != nil {
		t.Fatal(err)
	}
	opts.ArtifactsDir = t.TempDir()
	m2, _ := e.start(opts)
	j = e.final(m2, j.ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonSandboxLost {
		t.Errorf("job = %s %s; want failed sandbox_lost\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
}

// TestOrphanOfAnotherWorker: a job whose worker (another id) died is
// failed when its sandbox is gone, and left alone while its lease lasts.
func TestOrphanOfAnotherWorker(t *testing.T) {
	e := newEnv(t, sqlite())
	opts := e.options()
	opts.Lease = time.Second
	opts.WorkerID = "dead-worker"
	m1, stop := e.start(opts)
	j := e.submit(m1, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "sleep 60"})
	j = e.wait(m1, j.ID, time.Minute, cpapi.JobRunning)
	stop()
	if err := e.sb.rt.Delete(context.Background(), j.SandboxID); err != nil {
		t.Fatal(err)
	}
	opts.WorkerID = "survivor"
	m2, _ := e.start(opts) // its first Recover may still see the lease; the sweep gets it
	j = e.final(m2, j.ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonSandboxLost {
		t.Errorf("orphan = %s %s; want failed sandbox_lost", j.Status, j.StatusReason)
	}
}
