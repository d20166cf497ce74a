package procs

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sandboxd/outlog"
)

// Exec defaults and limits.
const (
	DefaultExecTimeout   = 60 * time.Second
	DefaultExecMaxOutput = 1 << 20
	MaxExecOutput        = 64 << 20
)

// Execution is a validated exec request, ready to Run.
type Execution struct {
	m       *Manager
	cmd     command
	stdin   *string
	timeout time.Duration
	limit   int64
}

// NewExec validates req and resolves its command without starting it, so
// a caller can report a bad request before it commits to a response.
func (m *Manager) NewExec(req sandboxapi.ExecRequest) (*Execution, error) {
	if req.TimeoutMS < 0 || req.MaxOutputBytes < 0 {
		return nil, errdefs.Invalidf("timeout_ms and max_output_bytes must not be negative")
	}
	if req.MaxOutputBytes > MaxExecOutput {
		return nil, errdefs.Invalidf("max_output_bytes must be at most %d", MaxExecOutput)
	}
	name, args := req.Command, req.Args
	if req.Shell {
		if name == "" {
			return nil, errdefs.Invalidf("command is required")
		}
		name, args = "/bin/sh", append([]string{"-c", req.Command, "sh"}, req.Args...)
	}
	cmd, err := resolve(name, args, req.Cwd, req.Env, false)
	if err != nil {
		return nil, err
	}
	e := &Execution{m: m, cmd: cmd, stdin: req.Stdin, timeout: DefaultExecTimeout, limit: DefaultExecMaxOutput}
	if req.TimeoutMS > 0 {
		e.timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	if req.MaxOutputBytes > 0 {
		e.limit = req.MaxOutputBytes
	}
	return e, nil
}

// Run runs the command to completion and returns its captured output.
// Each stream keeps its first max_output_bytes bytes; the rest is read and
// discarded so the command never blocks on a full pipe. On timeout, or if
// ctx ends (the client went away), the whole process tree is killed; on
// timeout what was captured so far is returned. Children that outlive the
// command do not hold the call: their inherited pipes are abandoned after
// a short drain. onChunk, if set, is called with each captured chunk, from
// one goroutine at a time.
func (e *Execution) Run(ctx context.Context, onChunk func(stream byte, p []byte)) (*sandboxapi.ExecResult, error) {
	m, timeout := e.m, e.timeout
	if err := m.reserve(); err != nil {
		return nil, err
	}
	defer m.release()

	c := &capture{limit: e.limit, onChunk: onChunk}
	start := time.Now()
	run, err := m.launch(launchSpec{cmd: e.cmd, stdin: e.stdin != nil}, c.write)
	if err != nil {
		return nil, err
	}
	if e.stdin != nil {
		go func() {
			_ = run.stdin.SetWriteDeadline(time.Now().Add(timeout))
			_, _ = run.stdin.WriteString(*e.stdin)
			run.stdin.Close()
		}()
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var timedOut bool
	select {
	case <-run.done:
	case <-timer.C:
		timedOut = true
		killTree(run.pid, run.pgid, syscall.SIGKILL)
		<-run.done
	case <-ctx.Done():
		killTree(run.pid, run.pgid, syscall.SIGKILL)
		<-run.done
		return nil, ctx.Err()
	}
	code, sig := exitStatus(run.state)
	c.mu.Lock()
	defer c.mu.Unlock()
	return &sandboxapi.ExecResult{
		ExitCode: code, Signal: sig,
		Stdout: string(c.out[0]), Stderr: string(c.out[1]),
		StdoutTruncated: c.truncated[0], StderrTruncated: c.truncated[1],
		TimedOut:   timedOut,
		DurationMS: time.Since(start).Milliseconds(),
	}, nil
}

// capture keeps the first limit bytes of each stream.
type capture struct {
	limit     int64
	onChunk   func(stream byte, p []byte)
	mu        sync.Mutex
	out       [2][]byte
	truncated [2]bool
}

func (c *capture) write(stream byte, p []byte) {
	i := 0
	if stream == outlog.Stderr {
		i = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - int64(len(c.out[i]))
	if room <= 0 {
		c.truncated[i] = true
		return
	}
	if int64(len(p)) > room {
		p = p[:room]
		c.truncated[i] = true
	}
	c.out[i] = append(c.out[i], p...)
	if c.onChunk != nil {
		c.onChunk(stream, p)
	}
}
