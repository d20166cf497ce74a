package jobs_test

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/jobs"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// readZip returns a zip's entries: name -> content (a symlink's target,
// marked "->target"; directories as "<dir>").
func readZip(t testing.TB, path string) map[string]string {
	t.Helper()
	z, err := zip.OpenReader(path)
	if err != nil {
		t.Fatalf("open zip %s: %v", path, err)
	}
	defer z.Close()
	out := map[string]string{}
	for _, f := range z.File {
		if f.Mode().IsDir() {
			out[f.Name] = "<dir>"
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("zip %s: %v", f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("zip %s: %v", f.Name, err)
		}
		if f.Mode()&fs.ModeSymlink != 0 {
			out[f.Name] = "->" + string(b)
		} else {
			out[f.Name] = string(b)
		}
	}
	return out
}

func TestScriptCompletes(t *testing.T) {
	forBackends(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be)
		m, _ := e.start(e.options())
		j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Labels: map[string]string{"team": "a"},
			Command: `echo hello; echo oops >&2; printf 'h\303\251 \377\n'; mkdir -p sub; echo data > sub/f.txt; ln -s sub/f.txt link`})
		if j.Status != cpapi.JobPending || j.Agent != cpapi.AgentScript || j.Labels["team"] != "a" {
			t.Errorf("Submit = %+v; want a pending script job with its labels", j)
		}
		j = e.final(m, j.ID)
		if j.Status != cpapi.JobCompleted || j.Result == nil || j.Result.ExitCode == nil || *j.Result.ExitCode != 0 ||
			!strings.Contains(j.Result.Summary, "hello") || j.SandboxID == "" || j.StartedAt == nil || j.FinishedAt == nil {
			t.Fatalf("job = %+v (result %+v); want completed, exit 0, summary with the output", j, j.Result)
		}
		evs := e.events(j.ID)
		got := states(t, evs)
		want := []string{">pending", "pending>creating", "creating>running", "running>completing", "completing>completed"}
		if !slices.Equal(got, want) {
			t.Errorf("states = %v; want %v", got, want)
		}
		lastIsFinal(t, evs, cpapi.JobCompleted)
		stdout, stderr, _ := output(t, evs)
		if stdout != "hello\nh\u00e9 \xff\n" || stderr != "oops\n" {
			t.Errorf("output = %q / %q; want hello, the bytes as printed / oops", stdout, stderr)
		}

		path, err := m.Artifacts(context.Background(), e.tenant, j.ID)
		if err != nil {
			t.Fatalf("Artifacts = %v", err)
		}
		files := readZip(t, path)
		if files["workspace/sub/f.txt"] != "data\n" || files["workspace/link"] != "->sub/f.txt" || files["workspace/sub/"] != "<dir>" {
			t.Errorf("zip workspace = %v; want sub/f.txt, the link and the directory", files)
		}
		if _, ok := files["changes.patch"]; ok {
			t.Errorf("zip has changes.patch for a workspace that is no git repository")
		}
		checkEventsJSONL(t, files["events.jsonl"], j.ID)
		if _, err := m.Diff(context.Background(), e.tenant, j.ID); !isNotFound(err) {
			t.Errorf("Diff(no repository) = %v; want not found", err)
		}
		if !slices.ContainsFunc(evs, func(ev storeEvent) bool { return ev.Type == cpapi.EventArtifact }) {
			t.Errorf("no artifact event")
		}
		waitGone(t, e, j.ID) // deleted right after the final state
		// Another tenant sees nothing.
		other := storetest.Tenant(t, e.st, "other", 0).ID
		if _, err := m.Get(context.Background(), other, j.ID); !isNotFound(err) {
			t.Errorf("Get(other tenant) = %v; want not found", err)
		}
		if _, err := m.Artifacts(context.Background(), other, j.ID); !isNotFound(err) {
			t.Errorf("Artifacts(other tenant) = %v; want not found", err)
		}
	})
}

// checkEventsJSONL checks that events.jsonl is the job's log in order.
func checkEventsJSONL(t testing.TB, data, id string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(data))
	n := int64(0)
	for sc.Scan() {
		var ev cpapi.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("events.jsonl line %d: %v", n+1, err)
		}
		n++
		if ev.Seq != n || ev.JobID != id {
			t.Fatalf("events.jsonl line %d = seq %d job %s; want seq %d job %s", n, ev.Seq, ev.JobID, n, id)
		}
	}
	if n < 4 {
		t.Errorf("events.jsonl has %d events; want the log up to completing", n)
	}
}

func TestScriptGitRepository(t *testing.T) {
	e := newEnv(t, sqlite())
	m, _ := e.start(e.options())
	// The host template has git.
	j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Template: "host", Command: `set -e
git init -q .
printf 'build/\n' > .gitignore
echo one > a.txt
git add . && git -c user.name=t -c user.email=t@example.com commit -qm init
echo two >> a.txt
echo new > new.txt
mkdir build && echo junk > build/out.o`})
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobCompleted {
		t.Fatalf("job = %s (%s)\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
	path, err := m.Artifacts(context.Background(), e.tenant, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	files := readZip(t, path)
	patch := files["changes.patch"]
	for _, want := range []string{"a/a.txt", "+two", "b/new.txt", "+new"} {
		if !strings.Contains(patch, want) {
			t.Errorf("changes.patch lacks %q:\n%s", want, patch)
		}
	}
	if strings.Contains(patch, "out.o") {
		t.Errorf("changes.patch has the ignored build/out.o")
	}
	for name := range files {
		if strings.HasPrefix(name, "workspace/.git/") || strings.HasPrefix(name, "workspace/build") {
			t.Errorf("zip has %s; .git and ignored paths stay out", name)
		}
	}
	if files["workspace/a.txt"] != "one\ntwo\n" || files["workspace/new.txt"] != "new\n" {
		t.Errorf("zip workspace files = %q, %q", files["workspace/a.txt"], files["workspace/new.txt"])
	}
	rc, err := m.Diff(context.Background(), e.tenant, j.ID)
	if err != nil {
		t.Fatalf("Diff = %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != patch {
		t.Errorf("Diff = %q; want changes.patch", b)
	}
}

func TestScriptFails(t *testing.T) {
	e := newEnv(t, sqlite())
	m, _ := e.start(e.options())
	j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "echo before; echo log > out.txt; exit 7"})
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonExitCode || j.Result == nil ||
		j.Result.ExitCode == nil || *j.Result.ExitCode != 7 || j.Result.Summary != "before" {
		t.Fatalf("job = %+v (result %+v); want failed exit_code, exit code 7, summary before", j, j.Result)
	}
	evs := e.events(j.ID)
	if got := states(t, evs); got[len(got)-1] != "running>failed:exit_code" {
		t.Errorf("states = %v; want running>failed:exit_code last", got)
	}
	lastIsFinal(t, evs, cpapi.JobFailed)
	path, err := m.Artifacts(context.Background(), e.tenant, j.ID)
	if err != nil {
		t.Fatalf("Artifacts(failed job) = %v; want its workspace and log", err)
	}
	if files := readZip(t, path); files["workspace/out.txt"] != "log\n" {
		t.Errorf("zip of a failed job = %v", files)
	}
	// A killed process reports 128 + the signal.
	j = e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "kill -9 $$"})
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobFailed || j.Result == nil || j.Result.ExitCode == nil || *j.Result.ExitCode != 137 {
		t.Errorf("killed job = %+v (result %+v); want failed with exit code 137", j, j.Result)
	}
}

func TestCancelRunning(t *testing.T) {
	forBackends(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be)
		m, _ := e.start(e.options())
		j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript,
			Command: `i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.02; done`})
		e.wait(m, j.ID, time.Minute, cpapi.JobRunning)
		waitOutput(t, e, j.ID, "tick 5\n")
		got, err := m.Cancel(context.Background(), e.tenant, j.ID)
		if err != nil || got.Status != cpapi.JobCancelled || got.StatusReason != cpapi.ReasonCancelled {
			t.Fatalf("Cancel = %+v, %v; want cancelled", got, err)
		}
		n := len(e.events(j.ID))
		lastIsFinal(t, e.events(j.ID), cpapi.JobCancelled)
		waitGone(t, e, j.ID)
		time.Sleep(300 * time.Millisecond)
		evs := e.events(j.ID)
		if len(evs) != n {
			t.Errorf("%d events after the cancelled one:\n%s", len(evs)-n, e.dump(j.ID))
		}
		output(t, evs) // the output that made it is still whole
		_, err = m.Cancel(context.Background(), e.tenant, j.ID)
		wantClass(t, "Cancel(cancelled job)", err, errdefs.ErrConflict)
		if _, err := m.Artifacts(context.Background(), e.tenant, j.ID); !isNotFound(err) {
			t.Errorf("Artifacts(cancelled) = %v; want not found", err)
		}
	})
}

// waitOutput waits until the job's stored output contains s.
func waitOutput(t testing.TB, e *env, id, s string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, _, all := output(t, e.events(id)); strings.Contains(all, s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("output never contained %q:\n%s", s, e.dump(id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGone waits until the job's sandboxes are deleted.
func waitGone(t testing.TB, e *env, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(e.sb.live(t, id)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sandboxes %v of job %s still exist", e.sb.live(t, id), id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCancelPending(t *testing.T) {
	e := newEnv(t, sqlite())
	m, err := jobs.New(e.options()) // not running: the job stays pending
	if err != nil {
		t.Fatal(err)
	}
	j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"})
	got, err := m.Cancel(context.Background(), e.tenant, j.ID)
	if err != nil || got.Status != cpapi.JobCancelled {
		t.Fatalf("Cancel(pending) = %+v, %v; want cancelled", got, err)
	}
	if s := states(t, e.events(j.ID)); !slices.Equal(s, []string{">pending", "pending>cancelled:cancelled"}) {
		t.Errorf("states = %v", s)
	}
	_, err = m.Cancel(context.Background(), e.tenant, j.ID)
	wantClass(t, "Cancel(cancelled)", err, errdefs.ErrConflict)
	_, err = m.Cancel(context.Background(), e.tenant, "job_nosuchjob")
	wantClass(t, "Cancel(unknown)", err, errdefs.ErrNotFound)
}

func TestTimeout(t *testing.T) {
	e := newEnv(t, sqlite())
	m, _ := e.start(e.options())
	j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, TimeoutS: 1, Command: "echo started; echo w > w.txt; sleep 60"})
	start := time.Now()
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonTimeout {
		t.Fatalf("job = %s %s; want failed timeout\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timeout took %v for timeout_s=1", d)
	}
	lastIsFinal(t, e.events(j.ID), cpapi.JobFailed)
	if path, err := m.Artifacts(context.Background(), e.tenant, j.ID); err != nil {
		t.Errorf("Artifacts(timed out) = %v; want the workspace", err)
	} else if files := readZip(t, path); files["workspace/w.txt"] != "w\n" {
		t.Errorf("zip = %v", files)
	}
	waitGone(t, e, j.ID)
}

func TestSandboxLost(t *testing.T) {
	e := newEnv(t, sqlite())
	m, _ := e.start(e.options())
	j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "echo up; sleep 60"})
	j = e.wait(m, j.ID, time.Minute, cpapi.JobRunning)
	waitOutput(t, e, j.ID, "up\n")
	if err := e.sb.rt.Delete(context.Background(), j.SandboxID); err != nil { // behind the engine's back
		t.Fatal(err)
	}
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonSandboxLost {
		t.Fatalf("job = %s %s; want failed sandbox_lost\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
	lastIsFinal(t, e.events(j.ID), cpapi.JobFailed)
}

// TestSlowSandboxNotLost: heartbeats that time out while the runtime still
// runs the sandbox (a loaded machine) are tolerated longer than ones that
// say it is gone; the job goes on once the daemon answers again.
func TestSlowSandboxNotLost(t *testing.T) {
	e := newEnv(t, sqlite())
	opts := e.options()
	opts.Heartbeat = 200 * time.Millisecond
	opts.SlowMisses = 40 // room for a loaded machine between the probes and this test's polls
	m, _ := e.start(opts)
	j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript,
		Command: "echo up; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo done"})
	j = e.wait(m, j.ID, time.Minute, cpapi.JobRunning)
	waitOutput(t, e, j.ID, "up\n")

	e.sb.slow.Store(true)
	// More slow heartbeats in a row than a gone sandbox may miss.
	want := int64(jobs.DefaultHeartbeatMisses + 1)
	for deadline := time.Now().Add(time.Minute); e.sb.slowProbes.Load() < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d slow heartbeats in a minute; want %d", e.sb.slowProbes.Load(), want)
		}
		if now := e.wait(m, j.ID, 0, cpapi.JobRunning, cpapi.JobCompleted, cpapi.JobFailed); now.Status != cpapi.JobRunning {
			t.Fatalf("while its heartbeats were slow the job became %s %s\n%s", now.Status, now.StatusReason, e.dump(j.ID))
		}
	}
	e.sb.slow.Store(false)
	if got := e.sb.slowProbes.Load(); got >= int64(opts.SlowMisses) {
		t.Fatalf("%d slow heartbeats before they stopped; the test needs fewer than %d", got, opts.SlowMisses)
	}
	cl, err := e.sb.Client(context.Background(), e.tenant, j.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.WriteFile(context.Background(), "/workspace/go", strings.NewReader(""), 0o644); err != nil {
		t.Fatal(err)
	}
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobCompleted {
		t.Fatalf("job = %s %s; want completed\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
}

// TestHungSandboxLost: a daemon that never answers again fails the job
// sandbox_lost, even though its runtime still runs the sandbox.
func TestHungSandboxLost(t *testing.T) {
	e := newEnv(t, sqlite())
	m, _ := e.start(e.options())
	j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "echo up; sleep 60"})
	j = e.wait(m, j.ID, time.Minute, cpapi.JobRunning)
	waitOutput(t, e, j.ID, "up\n")
	e.sb.slow.Store(true)
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonSandboxLost {
		t.Fatalf("job = %s %s; want failed sandbox_lost\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
	if got := e.sb.slowProbes.Load(); got < jobs.DefaultSlowMisses {
		t.Errorf("failed after %d slow heartbeats; want %d", got, jobs.DefaultSlowMisses)
	}
}

func TestIdleTimeout(t *testing.T) {
	e := newEnv(t, sqlite())
	opts := e.options()
	opts.IdleTimeout = 700 * time.Millisecond
	m, _ := e.start(opts)
	j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "echo start; sleep 60"})
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonIdle {
		t.Fatalf("job = %s %s; want failed idle_timeout\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
	nudged := false
	for _, ev := range e.events(j.ID) {
		var d cpapi.MessageData
		if ev.Type == cpapi.EventMessage && json.Unmarshal(ev.Data, &d) == nil && d.Role == "system" {
			nudged = true
		}
	}
	if !nudged {
		t.Errorf("no system nudge before the idle timeout:\n%s", e.dump(j.ID))
	}
}

func TestSandboxCreationRetries(t *testing.T) {
	e := newEnv(t, sqlite())
	opts := e.options()
	opts.MaxAttempts = 3
	m, _ := e.start(opts)

	e.sb.failCreates.Store(2) // two outages, then it works
	j := e.final(m, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"}).ID)
	if j.Status != cpapi.JobCompleted {
		t.Errorf("job after 2 failed creations = %s %s; want completed", j.Status, j.StatusReason)
	}
	if n := countType(e.events(j.ID), cpapi.EventError); n != 2 {
		t.Errorf("%d error events; want one per failed attempt (2)", n)
	}

	e.sb.failCreates.Store(3) // as many as MaxAttempts
	j = e.final(m, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"}).ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonInfra {
		t.Errorf("job after 3 failed creations = %s %s; want failed infrastructure_error", j.Status, j.StatusReason)
	}
	e.sb.failCreates.Store(0)

	// A request the runtime refuses is not retried.
	before := e.sb.creates.Load()
	j = e.final(m, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Template: "no-such-template", Command: "true"}).ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonInfra || countType(e.events(j.ID), cpapi.EventError) != 1 {
		t.Errorf("job with a bad template = %s %s; want failed at once\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
	if e.sb.creates.Load() != before {
		t.Errorf("a sandbox was created for a bad template")
	}
}

// A non-zero exit is the agent's failure: never retried.
func TestAgentFailureNotRetried(t *testing.T) {
	e := newEnv(t, sqlite())
	m, _ := e.start(e.options())
	j := e.final(m, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "exit 1"}).ID)
	if j.Status != cpapi.JobFailed || e.sb.created(j.ID) != 1 {
		t.Errorf("job = %s, %d sandboxes; want failed after one", j.Status, e.sb.created(j.ID))
	}
}

func countType(evs []storeEvent, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func TestRetention(t *testing.T) {
	e := newEnv(t, sqlite())
	opts := e.options()
	opts.Retention = 500 * time.Millisecond
	m, _ := e.start(opts)
	j := e.final(m, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"}).ID)
	path, err := m.Artifacts(context.Background(), e.tenant, j.ID)
	if err != nil {
		t.Fatalf("Artifacts = %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there after its retention", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := m.Artifacts(context.Background(), e.tenant, j.ID); !isNotFound(err) {
		t.Errorf("Artifacts(expired) = %v; want not found", err)
	}
}

// Env values that look like credentials never reach the log or the result.
func TestSecretsRedacted(t *testing.T) {
	e := newEnv(t, sqlite())
	m, _ := e.start(e.options())
	const secret = "s3cr3t-value-4242"
	j := e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Env: map[string]string{"API_KEY": secret, "PLAIN": "visible"},
		Command: `echo "key=$API_KEY plain=$PLAIN"`})
	j = e.final(m, j.ID)
	if j.Status != cpapi.JobCompleted {
		t.Fatalf("job = %s %s", j.Status, j.StatusReason)
	}
	log := e.dump(j.ID)
	if strings.Contains(log, secret) || !strings.Contains(log, "[REDACTED]") || !strings.Contains(log, "plain=visible") {
		t.Errorf("log = %s; want the key redacted and the plain value kept", log)
	}
	if strings.Contains(j.Result.Summary, secret) {
		t.Errorf("summary %q shows the secret", j.Result.Summary)
	}
}
