//go:build !slim

package cli

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
)

// cpEnv is a real control plane, reached by the commands through
// CORRAL_URL and CORRAL_TOKEN, and an SDK client for checks.
type cpEnv struct {
	srv *controlplanetest.Server
	cp  *client.ControlPlane
}

func startCP(t *testing.T) *cpEnv {
	t.Helper()
	srv := controlplanetest.Start(t, controlplanetest.Options{})
	t.Setenv("CORRAL_CONFIG", filepath.Join(t.TempDir(), "config.json")) // not the user's
	t.Setenv("CORRAL_URL", srv.URL)
	t.Setenv("CORRAL_TOKEN", srv.Token)
	t.Setenv("NO_COLOR", "")
	cp, err := client.NewControlPlane(srv.URL, client.WithToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	return &cpEnv{srv: srv, cp: cp}
}

// corral runs a command line through a root with the control plane
// commands, stdin from in (none when nil), and returns what it wrote.
func corral(ctx context.Context, in io.Reader, args ...string) (stdout, stderr string, err error) {
	root := &cobra.Command{Use: "corral", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(runJobCmd(), jobsCmd(), statusCmd(), logsCmd(), cancelCmd(), sendCmd(), artifactsCmd(),
		sandboxCmd(), shellCmd(), tokenCmd(), tenantCmd())
	if in == nil {
		in = strings.NewReader("")
	}
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// mustCorral runs a command that must succeed, and returns its stdout.
func mustCorral(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := corral(ctx, nil, args...)
	if err != nil {
		t.Fatalf("corral %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// exitCode is the status a command's error gives the process.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	return ExitCode(err)
}

// checkMessage fails unless err reads as a sentence containing want, not
// as an HTTP exchange or JSON.
func checkMessage(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error; want one saying %q", want)
	}
	msg := err.Error()
	if !strings.Contains(msg, want) || strings.ContainsAny(msg, "{}") || strings.Contains(msg, "/v1/") {
		t.Errorf("error %q; want a plain message containing %q", msg, want)
	}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestRunFollow(t *testing.T) {
	env := startCP(t)
	ctx := testCtx(t, 3*time.Minute)
	tpl := env.srv.Template

	tests := []struct {
		name       string
		cmd        string
		code       int
		stdout     string
		stderrHas  string
		finalState string
	}{
		{"completes", "echo hi", 0, "hi\n", "▸ completed", cpapi.JobCompleted},
		{"fails with its code", "echo out; echo oops >&2; exit 3", 3, "out\n", "oops", cpapi.JobFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := corral(ctx, nil, "run", "--agent", "script", "--cmd", tt.cmd, "--follow", "--template", tpl)
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit code %d (%v); want %d", got, err, tt.code)
			}
			if out != tt.stdout {
				t.Errorf("stdout %q; want %q", out, tt.stdout)
			}
			if !strings.Contains(errOut, tt.stderrHas) || !strings.Contains(errOut, "▸ running") {
				t.Errorf("stderr %q; want the state changes and %q", errOut, tt.stderrHas)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		out, _, err := corral(ctx, nil, "run", "--cmd", "echo hi", "--follow", "--json", "--template", tpl)
		if err != nil {
			t.Fatal(err)
		}
		var last cpapi.Event
		sc := bufio.NewScanner(strings.NewReader(out))
		for n := int64(1); sc.Scan(); n++ {
			if err := json.Unmarshal(sc.Bytes(), &last); err != nil || last.Seq != n {
				t.Fatalf("line %d %q: %v; want event %d as JSON", n, sc.Text(), err, n)
			}
		}
		if !client.FinalEvent(last) {
			t.Errorf("the last event is %+v; want the final state", last)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		// ctrl-C detaches: exit 130, the job keeps running.
		ictx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			for ictx.Err() == nil {
				list, err := env.cp.ListJobs(ictx, client.ListJobsOptions{Status: cpapi.JobRunning})
				if err == nil && len(list.Jobs) > 0 {
					cancel()
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		_, errOut, err := corral(ictx, nil, "run", "--cmd", "sleep 60", "--follow", "--template", tpl)
		if got := exitCode(err); got != 130 {
			t.Errorf("exit code %d (%v); want 130", got, err)
		}
		if !strings.Contains(errOut, "corral logs -f job_") {
			t.Errorf("stderr %q; want how to follow again", errOut)
		}
		list, err := env.cp.ListJobs(ctx, client.ListJobsOptions{Status: cpapi.JobRunning})
		if err != nil || len(list.Jobs) != 1 {
			t.Fatalf("running jobs after the interrupt: %+v, %v; want the job still running", list, err)
		}
		mustCorral(ctx, t, "cancel", list.Jobs[0].ID)
	})

	t.Run("no task", func(t *testing.T) {
		_, _, err := corral(ctx, nil, "run", "--template", tpl)
		checkMessage(t, err, "a task is required")
	})
	t.Run("unauthorized", func(t *testing.T) {
		_, _, err := corral(ctx, nil, "run", "--cmd", "true", "--token", "crl_wrong")
		checkMessage(t, err, "unauthorized")
		if !errors.Is(err, client.ErrUnauthorized) {
			t.Errorf("error %v; want ErrUnauthorized beneath", err)
		}
	})
	t.Run("no server", func(t *testing.T) {
		_, _, err := corral(ctx, nil, "jobs", "--url", "http://127.0.0.1:1")
		checkMessage(t, err, "cannot reach the control plane at http://127.0.0.1:1")
	})
}

func TestJobCommands(t *testing.T) {
	env := startCP(t)
	ctx := testCtx(t, 3*time.Minute)
	tpl := env.srv.Template

	id := strings.TrimSpace(mustCorral(ctx, t, "run", "--cmd", "echo hello from the job", "--template", tpl, "--label", "team=core", "build", "it"))
	if !strings.HasPrefix(id, "job_") {
		t.Fatalf("run printed %q; want a job id", id)
	}
	if out := mustCorral(ctx, t, "logs", "-f", id); !strings.Contains(out, "hello from the job\n") || !strings.Contains(out, "▸ completed") {
		t.Errorf("logs -f: %q; want the output and the final state", out)
	}

	t.Run("jobs", func(t *testing.T) {
		out := mustCorral(ctx, t, "jobs")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0], "STATUS") ||
			!strings.HasPrefix(lines[1], id) || !strings.Contains(lines[1], "completed") || !strings.Contains(lines[1], "build it") {
			t.Errorf("jobs:\n%s\nwant a header and the completed job", out)
		}
		var list cpapi.JobList
		if err := json.Unmarshal([]byte(mustCorral(ctx, t, "jobs", "--json", "--status", "completed")), &list); err != nil ||
			len(list.Jobs) != 1 || list.Jobs[0].ID != id {
			t.Errorf("jobs --json = %+v, %v; want the job", list, err)
		}
		if out := mustCorral(ctx, t, "jobs", "--status", "failed"); strings.Contains(out, id) {
			t.Errorf("jobs --status failed lists the completed job:\n%s", out)
		}
	})

	t.Run("status", func(t *testing.T) {
		out := mustCorral(ctx, t, "status", id)
		for _, want := range []string{"ID:", id, "Status:", "completed", "Exit code:", "team=core", "hello from the job"} {
			if !strings.Contains(out, want) {
				t.Errorf("status:\n%s\nwant %q", out, want)
			}
		}
		var j cpapi.Job
		if err := json.Unmarshal([]byte(mustCorral(ctx, t, "status", "--json", id)), &j); err != nil || j.ID != id || j.Status != cpapi.JobCompleted {
			t.Errorf("status --json = %+v, %v", j, err)
		}
		_, _, err := corral(ctx, nil, "status", "job_nope")
		checkMessage(t, err, `job "job_nope" not found`)
	})

	t.Run("logs", func(t *testing.T) {
		out := mustCorral(ctx, t, "logs", id)
		if !strings.Contains(out, "hello from the job\n") || !strings.Contains(out, "▸ running") {
			t.Errorf("logs: %q; want output and states", out)
		}
		sc := bufio.NewScanner(strings.NewReader(mustCorral(ctx, t, "logs", "--json", id)))
		n := 0
		for ; sc.Scan(); n++ {
			var e cpapi.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.JobID != id {
				t.Fatalf("logs --json line %q: %v", sc.Text(), err)
			}
		}
		if n < 4 {
			t.Errorf("logs --json printed %d events; want the whole log", n)
		}
	})

	t.Run("artifacts", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "out.zip")
		mustCorral(ctx, t, "artifacts", id, "-o", path)
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatalf("the download is not a zip: %v", err)
		}
		defer zr.Close()
		found := false
		for _, f := range zr.File {
			found = found || f.Name == "events.jsonl"
		}
		if !found {
			t.Errorf("the zip lacks events.jsonl")
		}
		_, _, err = corral(ctx, nil, "artifacts", "job_nope", "-o", path+".2")
		checkMessage(t, err, "not found")
	})

	t.Run("send and cancel", func(t *testing.T) {
		long := strings.TrimSpace(mustCorral(ctx, t, "run", "--cmd", "sleep 60", "--template", tpl))
		_, _, err := corral(ctx, nil, "send", long, "please stop")
		checkMessage(t, err, "cannot send to job "+long+": the script agent does not take messages")
		var cancelled []cpapi.Job
		if err := json.Unmarshal([]byte(mustCorral(ctx, t, "cancel", "--json", long)), &cancelled); err != nil ||
			len(cancelled) != 1 || cancelled[0].Status != cpapi.JobCancelled {
			t.Errorf("cancel --json = %+v, %v; want the job cancelled", cancelled, err)
		}
		_, _, err = corral(ctx, nil, "cancel", long)
		checkMessage(t, err, "already cancelled")
		// Following a cancelled job replays it and exits 1.
		if _, _, err := corral(ctx, nil, "logs", "-f", long); exitCode(err) != 1 {
			t.Errorf("logs -f of a cancelled job: %v; want exit code 1", err)
		}
	})
}
