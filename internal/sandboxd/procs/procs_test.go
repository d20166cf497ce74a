package procs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

func newManager(t *testing.T) *Manager {
	t.Helper()
	m := NewManager(Options{KillGrace: 300 * time.Millisecond})
	t.Cleanup(m.Close)
	return m
}

func waitDone(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("process %s did not exit", p.ID())
	}
	if !p.Exited() {
		t.Fatalf("process %s: Done closed before the exit was recorded", p.ID())
	}
}

func output(p *Process) string {
	var b bytes.Buffer
	buf := make([]byte, 4096)
	var off int64
	for {
		c := p.Log().Read(off, buf)
		if c.N == 0 {
			return b.String()
		}
		b.Write(buf[:c.N])
		off = c.Offset + int64(c.N)
	}
}

func TestSpawnErrors(t *testing.T) {
	m := newManager(t)
	tests := []struct {
		name string
		req  sandboxapi.SpawnRequest
		want error
	}{
		{"no command", sandboxapi.SpawnRequest{}, errdefs.ErrInvalid},
		{"missing executable", sandboxapi.SpawnRequest{Command: "no-such-binary-xyz"}, errdefs.ErrUnprocessable},
		{"relative cwd", sandboxapi.SpawnRequest{Command: "true", Cwd: "tmp"}, errdefs.ErrInvalid},
		{"missing cwd", sandboxapi.SpawnRequest{Command: "true", Cwd: "/no/such/dir"}, errdefs.ErrUnprocessable},
		{"not executable", sandboxapi.SpawnRequest{Command: "/etc/hostname"}, errdefs.ErrUnprocessable},
		{"NUL in arg", sandboxapi.SpawnRequest{Command: "echo", Args: []string{"a\x00b"}}, errdefs.ErrInvalid},
		{"bad env name", sandboxapi.SpawnRequest{Command: "true", Env: map[string]string{"A=B": "x"}}, errdefs.ErrInvalid},
		{"bad pty size", sandboxapi.SpawnRequest{Command: "true", PTY: &sandboxapi.PTYSize{Rows: 0, Cols: 80}}, errdefs.ErrInvalid},
		{"negative timeout", sandboxapi.SpawnRequest{Command: "true", TimeoutMS: -1}, errdefs.ErrInvalid},
		{"huge buffer", sandboxapi.SpawnRequest{Command: "true", BufferBytes: 1 << 40}, errdefs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Spawn(tt.req)
			if !errors.Is(err, tt.want) {
				t.Errorf("Spawn(%+v) error = %v; want class %v", tt.req, err, tt.want)
			}
		})
	}
}

func TestSpawnOutputAndExit(t *testing.T) {
	m := newManager(t)
	tests := []struct {
		name     string
		req      sandboxapi.SpawnRequest
		wantOut  string
		wantCode *int
		wantSig  string
	}{
		{"echo", sandboxapi.SpawnRequest{Command: "echo", Args: []string{"hello"}}, "hello\n", ptr(0), ""},
		{"exit code", sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "exit 7"}}, "", ptr(7), ""},
		{"env and cwd", sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "echo $FOO; pwd"}, Env: map[string]string{"FOO": "bar"}, Cwd: "/tmp"}, "bar\n/tmp\n", ptr(0), ""},
		{"signalled", sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "kill -9 $$"}}, "", nil, "SIGKILL"},
		{"pty merges streams", sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "echo out; echo err >&2"}, PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}}, "out\r\nerr\r\n", ptr(0), ""},
		{"timeout kills", sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"30"}, TimeoutMS: 100}, "", nil, "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := m.Spawn(tt.req)
			if err != nil {
				t.Fatalf("Spawn: %v", err)
			}
			waitDone(t, p)
			if got := output(p); got != tt.wantOut {
				t.Errorf("output = %q; want %q", got, tt.wantOut)
			}
			code, sig := p.ExitStatus()
			if (code == nil) != (tt.wantCode == nil) || (code != nil && *code != *tt.wantCode) {
				t.Errorf("exit code = %v; want %v", deref(code), deref(tt.wantCode))
			}
			if got := derefS(sig); got != tt.wantSig {
				t.Errorf("signal = %q; want %q", got, tt.wantSig)
			}
			if s := p.Snapshot(); s.Status != sandboxapi.StatusExited || s.ExitedAt == nil {
				t.Errorf("snapshot status = %q exited_at=%v; want exited with a time", s.Status, s.ExitedAt)
			}
		})
	}
}

func TestStdoutStderrApart(t *testing.T) {
	m := newManager(t)
	p, err := m.Spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "echo out; echo err >&2"}})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	got := map[byte]string{}
	buf := make([]byte, 64)
	for off := int64(0); ; {
		c := p.Log().Read(off, buf)
		if c.N == 0 {
			break
		}
		got[c.Stream] += string(buf[:c.N])
		off = c.Offset + int64(c.N)
	}
	if got[1] != "out\n" || got[2] != "err\n" {
		t.Errorf("streams = %q; want stdout %q and stderr %q", got, "out\n", "err\n")
	}
}

func TestTagsAndRefs(t *testing.T) {
	m := newManager(t)
	p, err := m.Spawn(sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"30"}, Tag: "srv"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Spawn(sandboxapi.SpawnRequest{Command: "true", Tag: "srv"}); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("second spawn with a live tag: err = %v; want conflict", err)
	}
	for _, ref := range []string{p.ID(), "srv"} {
		if got, err := m.Get(ref); err != nil || got != p {
			t.Errorf("Get(%q) = %v, %v; want the process", ref, got, err)
		}
	}
	if err := m.Delete(context.Background(), "srv"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := m.Get(p.ID()); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get after Delete: err = %v; want not found", err)
	}
	// The tag is free again.
	q, err := m.Spawn(sandboxapi.SpawnRequest{Command: "true", Tag: "srv"})
	if err != nil {
		t.Fatalf("spawn with freed tag: %v", err)
	}
	waitDone(t, q)
	// An exited holder does not block the tag.
	if _, err := m.Spawn(sandboxapi.SpawnRequest{Command: "true", Tag: "srv"}); err != nil {
		t.Errorf("spawn with a tag held by an exited process: %v", err)
	}
}

func TestDeleteEscalatesToSIGKILL(t *testing.T) {
	m := newManager(t)
	p, err := m.Spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "trap '' TERM HUP; echo ready; while :; do sleep 1; done"}})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p, "ready")
	start := time.Now()
	if err := m.Delete(context.Background(), p.ID()); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, sig := p.ExitStatus(); derefS(sig) != "SIGKILL" {
		t.Errorf("signal = %q; want SIGKILL after the grace period", derefS(sig))
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("Delete returned after %v; want at least the 300ms grace", d)
	}
	assertGone(t, p.run.pid)
}

func TestSignalAndInput(t *testing.T) {
	m := newManager(t)
	p, err := m.Spawn(sandboxapi.SpawnRequest{Command: "cat", Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteInput([]byte("ping\n")); err != nil {
		t.Fatalf("WriteInput: %v", err)
	}
	waitOutput(t, p, "ping\n")
	if err := p.Resize(10, 10); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("Resize on a pipe process: %v; want conflict", err)
	}
	if err := p.CloseStdin(); err != nil {
		t.Fatalf("CloseStdin: %v", err)
	}
	waitDone(t, p)
	if code, _ := p.ExitStatus(); deref(code) != "0" {
		t.Errorf("cat exit after EOF = %s; want 0", deref(code))
	}
	if err := p.WriteInput([]byte("x")); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("WriteInput after close: %v; want conflict", err)
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("Signal after exit: %v; want conflict", err)
	}
	noStdin, _ := m.Spawn(sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"5"}})
	if err := noStdin.WriteInput([]byte("x")); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("WriteInput without stdin: %v; want conflict", err)
	}
	if err := noStdin.Signal(syscall.SIGINT); err != nil {
		t.Errorf("Signal: %v", err)
	}
	waitDone(t, noStdin)
	if _, sig := noStdin.ExitStatus(); derefS(sig) != "SIGINT" {
		t.Errorf("signal = %q; want SIGINT", derefS(sig))
	}
}

func TestParseSignal(t *testing.T) {
	tests := []struct {
		in   string
		want syscall.Signal
		ok   bool
	}{
		{"SIGINT", syscall.SIGINT, true}, {"int", syscall.SIGINT, true}, {"9", syscall.SIGKILL, true},
		{"SIGWINCH", syscall.SIGWINCH, true}, {"0", 0, false}, {"99", 0, false}, {"NOPE", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSignal(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestExec(t *testing.T) {
	m := newManager(t)
	str := func(s string) *string { return &s }
	tests := []struct {
		name       string
		req        sandboxapi.ExecRequest
		wantCode   string
		wantOut    string
		wantErr    string
		wantTrunc  bool
		wantTimed  bool
		maxSeconds float64
	}{
		{name: "true", req: sandboxapi.ExecRequest{Command: "true"}, wantCode: "0"},
		{name: "shell", req: sandboxapi.ExecRequest{Command: "echo $0 $1; echo e >&2; exit 3", Shell: true, Args: []string{"x"}}, wantCode: "3", wantOut: "sh x\n", wantErr: "e\n"},
		{name: "stdin", req: sandboxapi.ExecRequest{Command: "cat", Stdin: str("fed\n")}, wantCode: "0", wantOut: "fed\n"},
		{name: "truncated", req: sandboxapi.ExecRequest{Command: "head -c 100000 /dev/zero | tr '\\0' x", Shell: true, MaxOutputBytes: 10}, wantCode: "0", wantOut: "xxxxxxxxxx", wantTrunc: true},
		{name: "timeout returns partial output", req: sandboxapi.ExecRequest{Command: "echo started; sleep 30", Shell: true, TimeoutMS: 300}, wantCode: "nil", wantOut: "started\n", wantTimed: true, maxSeconds: 10},
		{name: "background child does not hang", req: sandboxapi.ExecRequest{Command: "sleep 30 & echo bye", Shell: true}, wantCode: "0", wantOut: "bye\n", maxSeconds: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := m.NewExec(tt.req)
			if err != nil {
				t.Fatalf("NewExec: %v", err)
			}
			start := time.Now()
			res, err := e.Run(context.Background(), nil)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := deref(res.ExitCode); got != tt.wantCode {
				t.Errorf("exit code = %s; want %s", got, tt.wantCode)
			}
			if res.Stdout != tt.wantOut || res.Stderr != tt.wantErr {
				t.Errorf("stdout, stderr = %q, %q; want %q, %q", res.Stdout, res.Stderr, tt.wantOut, tt.wantErr)
			}
			if res.StdoutTruncated != tt.wantTrunc || res.TimedOut != tt.wantTimed {
				t.Errorf("truncated, timed_out = %v, %v; want %v, %v", res.StdoutTruncated, res.TimedOut, tt.wantTrunc, tt.wantTimed)
			}
			if tt.maxSeconds > 0 && time.Since(start).Seconds() > tt.maxSeconds {
				t.Errorf("took %v; the call must not wait for leftover children", time.Since(start))
			}
		})
	}
}

// TestExecTimeoutKillsTree checks that a timeout kills children that left
// the process group, not just the command.
func TestExecTimeoutKillsTree(t *testing.T) {
	m := newManager(t)
	e, err := m.NewExec(sandboxapi.ExecRequest{Shell: true, TimeoutMS: 500,
		Command: "setsid sleep 60 & echo $!; sleep 60 & echo $!; wait"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Fatalf("timed_out = false; want true")
	}
	for _, f := range strings.Fields(res.Stdout) {
		pid, _ := strconv.Atoi(f)
		assertGone(t, pid)
	}
}

func TestEventsResume(t *testing.T) {
	m := newManager(t)
	start := m.LastEventSeq()
	p, err := m.Spawn(sandboxapi.SpawnRequest{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	if err := m.Delete(context.Background(), p.ID()); err != nil {
		t.Fatal(err)
	}
	evs, gap, _ := m.Events(start, 100)
	var types []string
	for i, ev := range evs {
		types = append(types, ev.Type)
		if ev.Seq != start+uint64(i)+1 {
			t.Errorf("event %d seq = %d; want %d", i, ev.Seq, start+uint64(i)+1)
		}
	}
	want := []string{"process.created", "process.exited", "process.deleted"}
	if gap || strings.Join(types, ",") != strings.Join(want, ",") {
		t.Errorf("events = %v (gap %v); want %v", types, gap, want)
	}
	evs, _, _ = m.Events(start+1, 100)
	if len(evs) != 2 || evs[0].Type != "process.exited" {
		t.Errorf("resume after %d gave %d events; want the last 2", start+1, len(evs))
	}
}

func waitOutput(t *testing.T, p *Process, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(output(p), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q never contained %q", output(p), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func assertGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return // gone, or a zombie waiting for its reaper: dead either way
		}
		if time.Now().After(deadline) {
			t.Errorf("pid %d still alive: %s", pid, b)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ptr(i int) *int { return &i }

func deref(p *int) string {
	if p == nil {
		return "nil"
	}
	return strconv.Itoa(*p)
}

func derefS(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestPTYExitWithBackgroundChild: a terminal process whose background
// child keeps the terminal open is reported exited promptly, since output
// is drained for a bounded time after the exit: also when the child ignores
// the hangup (nohup), so the terminal stays open until the child ends.
func TestPTYExitWithBackgroundChild(t *testing.T) {
	for _, script := range []string{"sleep 30 & echo started", "trap '' HUP; sleep 60 & echo started"} {
		t.Run(script, func(t *testing.T) {
			m := newManager(t)
			p, err := m.Spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", script},
				PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Resize(30, 100); err != nil && !p.Exited() {
				t.Fatalf("Resize: %v", err)
			}
			select {
			case <-p.Done():
			case <-time.After(20 * time.Second): // well before the child ends
				t.Fatalf("process not reported exited while its background child holds the terminal")
			}
			if !strings.Contains(output(p), "started") {
				t.Errorf("output = %q; want it to contain started", output(p))
			}
		})
	}
}
