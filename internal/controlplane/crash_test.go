package controlplane_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
)

// upProcess is a real `corral up` process.
type upProcess struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	args []string
	env  []string
	log  *os.File
}

func startUp(t *testing.T, dataDir, stateRoot, listen, token string, env ...string) *upProcess {
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(dataDir, "up.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p := &upProcess{t: t, url: "http://" + listen, log: logf,
		args: []string{"up", "--data-dir", dataDir, "--listen", listen, "--runtime", "bwrap", "--state-root", stateRoot, "--log-level", "info"},
		env:  append(append(os.Environ(), "CORRAL_ADMIN_TOKEN="+token, "CORRAL_CONFIG="+filepath.Join(dataDir, "config.json")), env...)}
	p.start()
	return p
}

func (p *upProcess) start() {
	p.t.Helper()
	p.cmd = exec.Command(runtimetest.Binary(p.t), p.args...)
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(p.log.Name())
			p.t.Fatalf("corral up did not become ready: %v\n%s", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill9 kills the server the hard way: no shutdown code runs.
func (p *upProcess) kill9() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func (p *upProcess) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.kill9()
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func call(t *testing.T, p *upProcess, token, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// TestKill9Recovery kills `corral up` with SIGKILL while a script job is
// printing, restarts it over the same data, and checks the job finishes
// with its output in the log exactly once: nothing lost, nothing doubled.
func TestKill9Recovery(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	dataDir := t.TempDir()
	stateRoot := controlplanetest.StateRoot(t)
	tpl := controlplanetest.Prepare(t, "bwrap", stateRoot)
	const token = "crl_test_admin_token_kill9_recovery"
	up := startUp(t, dataDir, stateRoot, freeAddr(t), token)
	defer up.stop()

	const lines = 400
	var job cpapi.Job
	if code := call(t, up, token, "POST", "/v1/jobs", cpapi.JobRequest{Agent: "script", Template: tpl,
		Command: fmt.Sprintf("for i in $(seq 1 %d); do echo line-$i; sleep 0.01; done", lines)}, &job); code != 201 {
		t.Fatalf("submit: %d", code)
	}
	// Wait until some output is stored, then kill.
	deadline := time.Now().Add(time.Minute)
	for {
		var page cpapi.EventPage
		call(t, up, token, "GET", "/v1/jobs/"+job.ID+"/events", nil, &page)
		if strings.Contains(outputOf(page.Events), "line-50\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no output before the kill: %+v", page)
		}
		time.Sleep(20 * time.Millisecond)
	}
	up.kill9()
	time.Sleep(500 * time.Millisecond) // the script keeps printing meanwhile
	up.start()

	var got cpapi.Job
	for deadline := time.Now().Add(2 * time.Minute); ; {
		call(t, up, token, "GET", "/v1/jobs/"+job.ID, nil, &got)
		if got.Status == cpapi.JobCompleted || got.Status == cpapi.JobFailed {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(up.log.Name())
			t.Fatalf("job did not finish after the restart: %+v\n%s", got, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.Status != cpapi.JobCompleted {
		b, _ := os.ReadFile(up.log.Name())
		t.Fatalf("job after kill -9 and restart = %+v; want completed\n%s", got, b)
	}
	var page cpapi.EventPage
	call(t, up, token, "GET", "/v1/jobs/"+job.ID+"/events?limit=1000", nil, &page)
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "line-%d\n", i)
	}
	if out := outputOf(page.Events); out != want.String() {
		t.Errorf("output after recovery differs from what the command printed:\n got %d bytes, want %d", len(out), want.Len())
	}
	for i, e := range page.Events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event seqs have a gap or duplicate at %d: %d", i, e.Seq)
		}
	}
}
