package sandboxd_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/sandboxd"
)

// runAsInitEnv makes TestSystemRunAsInitChild serve sandboxd.Run on the
// unix socket it names.
const runAsInitEnv = "CORRAL_TEST_SANDBOXD_INIT_SOCKET"

// TestSystemRunAsInit runs the daemon as PID 1 of a new PID namespace, as
// in a container: a managed process's exit status still reaches the
// process API, its orphan is reaped, and on SIGTERM a leftover process that
// escaped into its own session gets SIGTERM before the namespace ends.
func TestSystemRunAsInit(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a helper process")
	}
	dir := t.TempDir()
	sock := dir + "/sandboxd.sock"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSystemRunAsInitChild$", "-test.v")
	cmd.Env = append(os.Environ(), runAsInitEnv+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Unshareflags: syscall.CLONE_NEWNS}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
			t.Skipf("cannot create a PID namespace here (%v)", err)
		}
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("daemon output:\n%s", out.String())
		}
	}()

	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	const base = "http://sandboxd"
	waitUntil(t, "the daemon answers /v1/health", func() bool {
		resp, err := c.Get(base + "/v1/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})

	spawn := func(script string) sandboxapi.Process {
		t.Helper()
		body, _ := json.Marshal(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", script}})
		resp, err := c.Post(base+"/v1/processes", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			t.Skip("the processes API is not available yet")
		}
		var p sandboxapi.Process
		if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&p) != nil {
			t.Fatalf("spawn %q: status %d; want 201 and a Process", script, resp.StatusCode)
		}
		return p
	}

	// A managed shell exits 3 and leaves an orphan behind.
	p := spawn("sleep 0.2 & exit 3")
	waitUntil(t, "the managed shell is reported exited with 3", func() bool {
		var got sandboxapi.Process
		getJSON(t, c, base+"/v1/processes/"+p.ID, &got)
		if got.Status == "running" {
			return false
		}
		if got.ExitCode == nil || *got.ExitCode != 3 {
			t.Fatalf("process %s: status %q, exit_code %v; want exited with 3", p.ID, got.Status, got.ExitCode)
		}
		return true
	})
	waitUntil(t, "the orphaned sleep is reaped", func() bool {
		resp, err := c.Get(base + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), "corral_sandboxd_orphans_reaped_total 1")
	})

	// A process in its own session, out of reach of the manager's group
	// kill, learns of the shutdown through SIGTERM. (Its output goes to
	// /dev/null: the daemon closes its end of the output pipe once the
	// managed shell exits, and a write there would kill it with SIGPIPE.)
	marker := dir + "/got-sigterm"
	spawn(`setsid sh -c 'trap "touch ` + marker + `; exit 0" TERM; while :; do sleep 0.05; done' >/dev/null 2>&1 & exit 0`)
	time.Sleep(200 * time.Millisecond) // let it install its trap
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the deferred cleanup
		if err != nil {
			t.Errorf("daemon exit after SIGTERM: %v; want success", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("daemon still running 20s after SIGTERM")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the leftover process got no SIGTERM at shutdown: %v", err)
	}
}

// TestSystemRunAsInitChild is TestSystemRunAsInit's daemon: sandboxd.Run
// as PID 1, stopped by SIGTERM as cmd/corral stops it.
func TestSystemRunAsInitChild(t *testing.T) {
	sock := os.Getenv(runAsInitEnv)
	if sock == "" {
		t.Skip("helper process for TestSystemRunAsInit")
	}
	if os.Getpid() != 1 {
		t.Fatalf("pid %d; want 1 in a new PID namespace", os.Getpid())
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make mounts private: %v", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		t.Fatalf("mount /proc: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := sandboxd.Run(ctx, sandboxd.RunConfig{
		Listen: "unix:" + sock,
		Config: sandboxd.Config{Root: t.TempDir(), KillGrace: time.Second},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // bounds only a failure
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
