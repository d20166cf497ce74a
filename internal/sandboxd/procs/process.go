package procs

import (
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sandboxd/outlog"
)

// inputTimeout bounds a write to a process's stdin or terminal, so a
// process that stops reading can never hang an API call.
const inputTimeout = 10 * time.Second

// Process is a managed process. Its lifetime is independent of any
// connection: it runs until it exits or is deleted. Immutable fields are
// set before the Process is published; mu guards the mutable state.
type Process struct {
	id, tag, label string
	cmd            command
	isPTY          bool
	created        time.Time
	run            *launched
	log            *outlog.Log
	m              *Manager
	// done is closed once the exit is recorded and process.exited is
	// published: after it, Snapshot and ExitStatus are final.
	done chan struct{}

	inputMu sync.Mutex // serialises writes to stdin or the terminal

	mu       sync.Mutex
	rows     int
	cols     int
	exited   bool
	exitCode *int
	signal   *string
	exitedAt *time.Time
	noStdin  bool // stdin was closed
}

// ID returns the process id ("p_...").
func (p *Process) ID() string { return p.id }

// Log returns the output log.
func (p *Process) Log() *outlog.Log { return p.log }

// Done is closed when the process has exited, its output is complete and
// its exit status is recorded.
func (p *Process) Done() <-chan struct{} { return p.done }

// Snapshot returns the API view of the process.
func (p *Process) Snapshot() sandboxapi.Process {
	_, end := p.log.Bounds()
	p.mu.Lock()
	defer p.mu.Unlock()
	s := sandboxapi.Process{
		ID: p.id, Tag: p.tag, Label: p.label,
		Command: p.cmd.argv[0], Args: p.cmd.argv[1:], Cwd: p.cmd.cwd, Env: p.cmd.extra,
		PID: p.run.pid, PTY: p.isPTY, Rows: p.rows, Cols: p.cols,
		Status:   sandboxapi.StatusRunning,
		ExitCode: p.exitCode, Signal: p.signal,
		CreatedAt: p.created, ExitedAt: p.exitedAt, OutputBytes: end,
	}
	if s.Args == nil {
		s.Args = []string{}
	}
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	if p.exited {
		s.Status = sandboxapi.StatusExited
	}
	return s
}

// Exited reports whether the process has exited (and its output is complete).
func (p *Process) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// ExitStatus returns the exit code or signal; both nil while running.
func (p *Process) ExitStatus() (code *int, sig *string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitCode, p.signal
}

// Signal sends sig to the process group; for a terminal also to the
// terminal's foreground job, where a shell puts the command it runs.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return errdefs.Conflictf("process %s has exited", p.id)
	}
	if p.isPTY {
		var fg int
		if p.terminal(func(fd int) (err error) { fg, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP); return err }) == nil && fg > 0 && fg != p.run.pgid {
			_ = syscall.Kill(-fg, sig)
		}
	}
	if err := syscall.Kill(-p.run.pgid, sig); err != nil && err != syscall.ESRCH {
		return errdefs.Wrap(errdefs.ErrConflict, err, "signalling the process failed")
	}
	return nil
}

// terminal runs fn on the terminal's descriptor. Going through
// SyscallConn (not Fd) keeps the descriptor non-blocking and safe against
// a concurrent Close after exit, which makes it fail cleanly instead.
func (p *Process) terminal(fn func(fd int) error) error {
	rc, err := p.run.ptmx.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Resize sets the terminal size; the kernel then sends SIGWINCH to the
// foreground job.
func (p *Process) Resize(rows, cols int) error {
	if !p.isPTY {
		return errdefs.Conflictf("process %s has no terminal", p.id)
	}
	if err := sandboxapi.ValidSize(rows, cols); err != nil {
		return errdefs.Invalidf("%v", err)
	}
	if p.Exited() {
		return errdefs.Conflictf("process %s has exited", p.id)
	}
	ws := &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}
	if err := p.terminal(func(fd int) error { return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws) }); err != nil {
		return errdefs.Wrap(errdefs.ErrConflict, err, "resizing the terminal failed")
	}
	p.mu.Lock()
	changed := p.rows != rows || p.cols != cols
	p.rows, p.cols = rows, cols
	p.mu.Unlock()
	if changed {
		p.m.events.publish(sandboxapi.EventProcessUpdated, p.Snapshot())
	}
	return nil
}

// WriteInput writes data to the process's stdin or terminal.
func (p *Process) WriteInput(data []byte) error {
	p.inputMu.Lock()
	defer p.inputMu.Unlock()
	f := p.run.stdin
	if p.isPTY {
		f = p.run.ptmx
	}
	p.mu.Lock()
	closed, exited := p.noStdin, p.exited
	p.mu.Unlock()
	switch {
	case f == nil:
		return errdefs.Conflictf("process %s was started without stdin", p.id)
	case closed && !p.isPTY:
		return errdefs.Conflictf("stdin of process %s is closed", p.id)
	case exited:
		return errdefs.Conflictf("process %s has exited", p.id)
	}
	_ = f.SetWriteDeadline(time.Now().Add(inputTimeout))
	if _, err := f.Write(data); err != nil {
		if p.Exited() {
			return errdefs.Conflictf("process %s has exited", p.id)
		}
		return errdefs.Wrap(errdefs.ErrConflict, err, "the process is not reading its input")
	}
	return nil
}

// CloseStdin closes stdin. For a terminal, which has no separate stdin, it
// sends the end-of-file character (^D), as a person at the keyboard would.
func (p *Process) CloseStdin() error {
	if p.isPTY {
		return p.WriteInput([]byte{4})
	}
	p.inputMu.Lock()
	defer p.inputMu.Unlock()
	if p.run.stdin == nil {
		return errdefs.Conflictf("process %s was started without stdin", p.id)
	}
	p.mu.Lock()
	already := p.noStdin
	p.noStdin = true
	p.mu.Unlock()
	if !already {
		p.run.stdin.Close()
		p.m.events.publish(sandboxapi.EventProcessUpdated, p.Snapshot())
	}
	return nil
}

// terminate stops the process: SIGTERM to the group (and SIGHUP for a
// terminal, which interactive shells heed while they ignore SIGTERM), then
// SIGKILL to the whole tree after grace. It returns when the process has
// exited and its output is drained.
func (p *Process) terminate(grace time.Duration) {
	if p.Exited() {
		return
	}
	if p.isPTY {
		_ = syscall.Kill(-p.run.pgid, syscall.SIGHUP)
	}
	_ = syscall.Kill(-p.run.pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	killTree(p.run.pid, p.run.pgid, syscall.SIGKILL)
	<-p.done
}
