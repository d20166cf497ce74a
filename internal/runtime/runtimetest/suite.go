package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/testenv"
)

// Factory returns a Runtime for the backend under test. Each call returns
// a new instance over the same engine and host state, as a restarted
// control plane would have; it calls t.Skip when the backend cannot run.
type Factory func(t testing.TB) runtime.Runtime

// Checks that a backend may declare it does not support, with the reason.
const (
	CheckMemory     = "memory"     // a memory hog is killed at the limit
	CheckPIDs       = "pids"       // a fork loop is capped
	CheckNproc      = "nproc"      // nproc reflects cpus
	CheckNetwork    = "network"    // network none: loopback only
	CheckNonRoot    = "non-root"   // uid 1000, no capabilities, no new privileges
	CheckIsolation  = "isolation"  // two sandboxes cannot see each other
	CheckSurvives   = "survives"   // the sandbox outlives its creator
	CheckConcurrent = "concurrent" // Concurrent sandboxes created at once
	CheckDisk       = "disk"       // writing past disk_mb fails
)

// Options tune the suite for a backend.
type Options struct {
	// Template to create sandboxes from; it must already be present.
	Template string
	// Unsupported maps a Check to the reason the backend cannot pass it;
	// that check is skipped with the reason.
	Unsupported map[string]string
	// Concurrent is how many sandboxes CheckConcurrent creates at once; 50
	// when zero (10 in -short mode).
	Concurrent int
}

const childEnv = "CORRAL_RUNTIMETEST_CHILD"

// Run runs the conformance suite against the backend f makes.
func Run(t *testing.T, f Factory, opts Options) {
	if os.Getenv(childEnv) != "" {
		runChild(t, f, opts)
		return
	}
	s := &suite{f: f, opts: opts}
	t.Run("Lifecycle", s.lifecycle)
	t.Run("Restart", s.restart)
	t.Run("Security", s.check(CheckNonRoot, s.security))
	t.Run("MemoryLimit", s.check(CheckMemory, s.memory))
	t.Run("PIDsLimit", s.check(CheckPIDs, s.pids))
	t.Run("Nproc", s.check(CheckNproc, s.nproc))
	t.Run("DiskLimit", s.check(CheckDisk, s.disk))
	t.Run("NetworkNone", s.check(CheckNetwork, s.network))
	t.Run("Isolation", s.check(CheckIsolation, s.isolation))
	t.Run("SurvivesCreator", s.check(CheckSurvives, s.survives))
	t.Run("Concurrent", s.check(CheckConcurrent, s.concurrent))
	t.Run("BadInput", s.badInput)
}

type suite struct {
	f    Factory
	opts Options
}

func (s *suite) check(name string, fn func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		if why, ok := s.opts.Unsupported[name]; ok {
			t.Skipf("backend does not support %s: %s", name, why)
		}
		fn(t)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// create makes a sandbox and deletes it when the test ends.
func (s *suite) create(t *testing.T, rt runtime.Runtime, spec runtime.Spec) (*runtime.Sandbox, *client.Client) {
	t.Helper()
	if spec.Template == "" {
		spec.Template = s.opts.Template
	}
	ctx := ctxFor(t, 2*time.Minute)
	sb, err := rt.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create(%+v): %v", spec, err)
	}
	t.Cleanup(func() {
		if err := rt.Delete(context.Background(), sb.ID); err != nil {
			t.Errorf("Delete(%s): %v", sb.ID, err)
		}
	})
	c, err := client.New(sb.Endpoint, client.WithToken(sb.Token))
	if err != nil {
		t.Fatalf("client.New(%q): %v", sb.Endpoint, err)
	}
	return sb, c
}

// sh runs a shell command in the sandbox and returns stdout and the exit
// code (-1 when killed by a signal).
func sh(t *testing.T, c *client.Client, script string) (string, int) {
	t.Helper()
	res, err := c.Exec(ctxFor(t, time.Minute), sandboxapi.ExecRequest{Command: script, Shell: true, TimeoutMS: 30000})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	code := -1
	if res.ExitCode != nil {
		code = *res.ExitCode
	}
	return res.Stdout + res.Stderr, code
}

func mustSh(t *testing.T, c *client.Client, script string) string {
	t.Helper()
	out, code := sh(t, c, script)
	if code != 0 {
		t.Fatalf("exec %q: exit %d: %s", script, code, out)
	}
	return strings.TrimSpace(out)
}

func (s *suite) lifecycle(t *testing.T) {
	rt := s.f(t)
	ctx := ctxFor(t, 2*time.Minute)
	sb, c := s.create(t, rt, runtime.Spec{Env: map[string]string{"CORRAL_TEST_VAR": "hello"}, Labels: map[string]string{"job": "j1"}})
	if sb.ID == "" || sb.Runtime != rt.Name() || sb.Status != runtime.StatusRunning || sb.Token == "" || sb.Endpoint == "" {
		t.Fatalf("Create returned %+v; want id, runtime %q, running, token, endpoint", sb, rt.Name())
	}
	if got := mustSh(t, c, "echo $CORRAL_TEST_VAR"); got != "hello" {
		t.Errorf("env in sandbox = %q; want hello", got)
	}
	if got := mustSh(t, c, "echo $CORRAL_SANDBOX_TOKEN"); got != "" {
		t.Errorf("sandboxd's token leaked into a child's environment")
	}
	if _, err := c.WriteFile(ctx, runtime.WorkspaceDir+"/hello.txt", strings.NewReader("from the host"), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if got := mustSh(t, c, "cat /workspace/hello.txt; echo; pwd"); got != "from the host\n/workspace" {
		t.Errorf("file and cwd in sandbox = %q", got)
	}
	// A terminal works.
	p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "echo tty:$(tty)"}, PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatalf("Spawn pty: %v", err)
	}
	st, err := c.Connect(ctx, p.ID, client.ConnectOptions{Offset: 0})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("pty stream: %v (got %q)", err, out.String())
		}
		out.Write(ev.Data)
		if ev.Exit != nil {
			break
		}
	}
	st.Close()
	if !strings.Contains(out.String(), "tty:/dev/pts/") {
		t.Errorf("pty output = %q; want a /dev/pts tty", out.String())
	}

	got, err := rt.Get(ctx, sb.ID)
	if err != nil || got.ID != sb.ID || got.Token != sb.Token || got.Labels["job"] != "j1" || got.Status != runtime.StatusRunning {
		t.Errorf("Get = %+v, %v; want the sandbox with its token and labels", got, err)
	}
	if !listed(t, rt, sb.ID) {
		t.Errorf("List does not include %s", sb.ID)
	}
	if err := rt.Delete(ctx, sb.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := rt.Get(ctx, sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get after Delete: %v; want not found", err)
	}
	if listed(t, rt, sb.ID) {
		t.Errorf("List still includes %s after Delete", sb.ID)
	}
	if err := rt.Delete(ctx, sb.ID); err != nil {
		t.Errorf("second Delete: %v; want nil (idempotent)", err)
	}
	if _, err := c.Health(ctx); err == nil {
		t.Errorf("sandboxd still answers after Delete")
	}
}

func listed(t *testing.T, rt runtime.Runtime, id string) bool {
	t.Helper()
	all, err := rt.List(ctxFor(t, time.Minute))
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

// restart checks that a new Runtime instance finds and reaches a sandbox
// an earlier one created.
func (s *suite) restart(t *testing.T) {
	sb, _ := s.create(t, s.f(t), runtime.Spec{ID: runtime.NewID()})
	again := s.f(t)
	got, err := again.Get(ctxFor(t, time.Minute), sb.ID)
	if err != nil {
		t.Fatalf("new instance Get(%s): %v", sb.ID, err)
	}
	if !listed(t, again, sb.ID) {
		t.Errorf("new instance does not list %s", sb.ID)
	}
	c, _ := client.New(got.Endpoint, client.WithToken(got.Token))
	if got := mustSh(t, c, "echo ok"); got != "ok" {
		t.Errorf("exec through the new instance's endpoint = %q", got)
	}
}

func (s *suite) security(t *testing.T) {
	_, c := s.create(t, s.f(t), runtime.Spec{})
	if got := mustSh(t, c, "id -u; id -g"); got != "1000\n1000" {
		t.Errorf("uid/gid = %q; want 1000 1000", got)
	}
	status := mustSh(t, c, "cat /proc/self/status")
	for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(status, want) {
			t.Errorf("/proc/self/status lacks %q", want)
		}
	}
	if out, code := sh(t, c, "touch /etc/corral-test"); code == 0 {
		t.Errorf("non-root could write /etc: %s", out)
	}
	if got := mustSh(t, c, "ls /run/corral"); got != "sandboxd.sock" {
		t.Errorf("/run/corral holds %q; want only sandboxd.sock", got)
	}
}

func (s *suite) memory(t *testing.T) {
	_, c := s.create(t, s.f(t), runtime.Spec{Resources: runtime.Resources{MemoryMB: 128}})
	// tail keeps a line-less input whole in memory; the pipeline's status
	// is tail's, 137 when the OOM killer ends it.
	res, err := c.Exec(ctxFor(t, time.Minute), sandboxapi.ExecRequest{Shell: true, TimeoutMS: 30000,
		Command: "head -c 600000000 /dev/zero | tail > /dev/null"})
	if err != nil {
		t.Fatalf("exec hog: %v", err)
	}
	if res.ExitCode != nil && *res.ExitCode == 0 {
		t.Errorf("a 600 MB hog ran to completion under a 128 MiB limit: %+v", res)
	}
	if got := mustSh(t, c, "echo alive"); got != "alive" {
		t.Errorf("sandboxd did not survive the hog: %q", got)
	}
}

func (s *suite) pids(t *testing.T) {
	_, c := s.create(t, s.f(t), runtime.Spec{Resources: runtime.Resources{PIDs: 64}})
	// One line per successful fork; sh gives up at the first failure.
	out, _ := sh(t, c, "for i in $(seq 200); do sleep 3 & echo forked; done")
	if n := strings.Count(out, "forked"); n >= 64 {
		t.Errorf("%d forks succeeded under a pids limit of 64", n)
	}
	// Once the sleeps end, the sandbox works again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := c.Exec(ctxFor(t, time.Minute), sandboxapi.ExecRequest{Command: "true"})
		if err == nil && res.ExitCode != nil && *res.ExitCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox did not recover after the fork loop: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (s *suite) nproc(t *testing.T) {
	_, c := s.create(t, s.f(t), runtime.Spec{Resources: runtime.Resources{CPUs: 1}})
	if got := mustSh(t, c, "nproc"); got != "1" {
		t.Errorf("nproc with cpus=1 = %s; want 1", got)
	}
}

func (s *suite) disk(t *testing.T) {
	_, c := s.create(t, s.f(t), runtime.Spec{Resources: runtime.Resources{DiskMB: 32}})
	out, code := sh(t, c, "head -c 64000000 /dev/zero > /workspace/big")
	if code == 0 {
		t.Errorf("wrote 64 MB to /workspace under a 32 MB disk limit: %s", out)
	}
}

// network checks network none structurally (no interface but lo, no
// route) and by trying to reach a service on the host's loopback.
func (s *suite) network(t *testing.T) {
	port := testenv.Greeter(t, "127.0.0.1", "host-secret\n")
	_, c := s.create(t, s.f(t), runtime.Spec{Network: runtime.NetworkNone})
	ifaces := mustSh(t, c, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
	if ifaces != "lo" {
		t.Errorf("interfaces in a network-none sandbox = %q; want only lo", ifaces)
	}
	if routes := mustSh(t, c, "tail -n +2 /proc/net/route"); routes != "" {
		t.Errorf("routes in a network-none sandbox: %q", routes)
	}
	out, _ := sh(t, c, fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3' 2>&1", port))
	if strings.Contains(out, "host-secret") {
		t.Errorf("sandbox reached the host's loopback service")
	}
}

func (s *suite) isolation(t *testing.T) {
	rt := s.f(t)
	_, a := s.create(t, rt, runtime.Spec{})
	_, b := s.create(t, rt, runtime.Spec{})
	mustSh(t, a, "echo a-secret > /workspace/secret-a")
	if _, err := a.Spawn(ctxFor(t, time.Minute), sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"313"}}); err != nil {
		t.Fatal(err)
	}
	if out, _ := sh(t, b, "cat /workspace/secret-a 2>&1; grep -rl a-secret /workspace /tmp /home /run 2>/dev/null | head -3"); strings.Contains(out, "a-secret") || strings.Contains(out, "secret-a\n") {
		t.Errorf("sandbox b sees a's file: %q", out)
	}
	if out, _ := sh(t, b, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"); strings.Contains(out, "313") {
		t.Errorf("sandbox b sees a's processes: %q", out)
	}
}

// survives creates a sandbox from a child process, kills the child with
// SIGKILL, and checks the sandbox still runs and answers.
func (s *suite) survives(t *testing.T) {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run", strings.Join(parts, "/"), "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	idc := make(chan string, 1)
	go func() {
		buf := make([]byte, 64<<10)
		var all string
		for {
			n, err := stdout.Read(buf)
			all += string(buf[:n])
			if m := regexp.MustCompile(`CORRAL_SANDBOX_ID=(\S+)\n`).FindStringSubmatch(all); m != nil {
				idc <- m[1]
				return
			}
			if err != nil {
				idc <- ""
				return
			}
		}
	}()
	var id string
	select {
	case id = <-idc:
	case <-time.After(2 * time.Minute):
	}
	_ = cmd.Process.Kill() // SIGKILL: no cleanup runs in the creator
	_ = cmd.Wait()
	if id == "" {
		t.Fatalf("the child did not create a sandbox")
	}
	rt := s.f(t)
	t.Cleanup(func() { _ = rt.Delete(context.Background(), id) })
	// The engine may take a moment to answer for the task on a loaded
	// machine; the sandbox must be (and stay) running.
	var sb *runtime.Sandbox
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var err error
		sb, err = rt.Get(ctxFor(t, time.Minute), id)
		if err == nil && sb.Status == runtime.StatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after its creator was killed: Get = %+v, %v; want running", sb, err)
		}
	}
	c, _ := client.New(sb.Endpoint, client.WithToken(sb.Token))
	if got := mustSh(t, c, "echo still-here"); got != "still-here" {
		t.Errorf("exec after creator died = %q", got)
	}
}

// runChild is the creator process of survives: it creates a sandbox,
// prints its id, and waits to be killed.
func runChild(t *testing.T, f Factory, opts Options) {
	t.Run("SurvivesCreator", func(t *testing.T) {
		rt := f(t)
		sb, err := rt.Create(context.Background(), runtime.Spec{Template: opts.Template})
		if err != nil {
			t.Fatalf("child Create: %v", err)
		}
		fmt.Printf("\nCORRAL_SANDBOX_ID=%s\n", sb.ID)
		select {} // until the parent kills us
	})
}

func (s *suite) concurrent(t *testing.T) {
	n := s.opts.Concurrent
	if n == 0 {
		n = 50
	}
	if testing.Short() {
		n = min(n, 10)
	}
	rt := s.f(t)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	ids := make(chan string, n)
	ctx := ctxFor(t, 10*time.Minute)
	for i := 0; i < n; i++ {
		wg.Go(func() {
			sb, err := rt.Create(ctx, runtime.Spec{Template: s.opts.Template, Resources: runtime.Resources{MemoryMB: 256}})
			if err != nil {
				errs <- err
				return
			}
			ids <- sb.ID
		})
	}
	wg.Wait()
	close(errs)
	close(ids)
	var del sync.WaitGroup
	for id := range ids {
		del.Go(func() {
			if err := rt.Delete(context.Background(), id); err != nil {
				t.Errorf("Delete(%s): %v", id, err)
			}
		})
	}
	del.Wait()
	for err := range errs {
		t.Errorf("concurrent Create: %v", err)
	}
}

func (s *suite) badInput(t *testing.T) {
	rt := s.f(t)
	ctx := ctxFor(t, time.Minute)
	tests := []struct {
		name string
		spec runtime.Spec
		want error
	}{
		{"bad id", runtime.Spec{ID: "../etc", Template: s.opts.Template}, errdefs.ErrInvalid},
		{"bad network", runtime.Spec{Network: "internet", Template: s.opts.Template}, errdefs.ErrInvalid},
		{"missing template", runtime.Spec{Template: "corral-no-such-template"}, errdefs.ErrUnprocessable},
	}
	for _, tt := range tests {
		sb, err := rt.Create(ctx, tt.spec)
		if err == nil {
			_ = rt.Delete(ctx, sb.ID)
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Create error = %v; want class %v", tt.name, err, tt.want)
		}
	}
	if _, err := rt.Get(ctx, "sb_nosuchsandbox"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get(unknown) = %v; want not found", err)
	}
	if err := rt.Delete(ctx, "sb_nosuchsandbox"); err != nil {
		t.Errorf("Delete(unknown) = %v; want nil", err)
	}
}
