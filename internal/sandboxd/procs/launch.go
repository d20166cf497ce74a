package procs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sandboxd/outlog"
)

// drainGrace is how long output is still read after the process exits.
// Output the process wrote before exiting is in the pipe already and is
// read at once; this only bounds the wait for background children that
// inherited the pipe and keep it open, so they can never hang an exit.
const drainGrace = 250 * time.Millisecond

// pumpBuffer is the read size of the output pumps. Buffers are pooled:
// a busy exec loop would otherwise allocate two per command.
const pumpBuffer = 64 << 10

var pumpBuffers = sync.Pool{New: func() any { return new([pumpBuffer]byte) }}

// sink receives output chunks. It is called from one goroutine per stream;
// p is only valid during the call.
type sink func(stream byte, p []byte)

// launched is a started child with its I/O ends.
type launched struct {
	cmd   *exec.Cmd
	pid   int
	pgid  int
	ptmx  *os.File // PTY master, nil for a pipe process
	stdin *os.File // write end of the stdin pipe, nil if none
	outs  []*os.File
	// done is closed when the child has exited and its output is drained;
	// state is valid then.
	done  chan struct{}
	state *os.ProcessState
}

type launchSpec struct {
	cmd   command
	pty   *[2]int // rows, cols
	stdin bool
}

// launch starts the child and its pumps. The fork happens under forkMu
// and the pid is registered before the lock is released, so the PID 1
// reaper can never mistake a fresh child for an orphan.
func (m *Manager) launch(spec launchSpec, out sink) (*launched, error) {
	cmd := &exec.Cmd{Path: spec.cmd.path, Args: spec.cmd.argv, Dir: spec.cmd.cwd, Env: spec.cmd.env}
	l := &launched{cmd: cmd, done: make(chan struct{})}
	var childEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}

	m.forkMu.Lock()
	var err error
	if spec.pty != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		var ptmx *os.File
		ptmx, err = pty.StartWithAttrs(cmd, &pty.Winsize{Rows: uint16(spec.pty[0]), Cols: uint16(spec.pty[1])}, cmd.SysProcAttr)
		if err == nil {
			if l.ptmx, err = pollable(ptmx); err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		}
		if err == nil {
			l.outs = []*os.File{l.ptmx}
		}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var files []*os.File
		files, childEnds, err = pipes(spec.stdin)
		if err == nil {
			if spec.stdin {
				cmd.Stdin, l.stdin = childEnds[2], files[2]
			}
			cmd.Stdout, cmd.Stderr = childEnds[0], childEnds[1]
			l.outs = files[:2]
			if err = cmd.Start(); err != nil {
				closeAll(files)
			}
		}
	}
	if err == nil {
		l.pid = cmd.Process.Pid
		l.pgid = l.pid
		m.pids[l.pid] = struct{}{}
	}
	m.forkMu.Unlock()
	closeAll(childEnds)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnprocessable, err, "starting "+spec.cmd.argv[0]+" failed: "+startReason(err))
	}

	var pumps sync.WaitGroup
	streams := []byte{outlog.Stdout, outlog.Stderr}
	for i, f := range l.outs {
		pumps.Go(func() { pump(f, streams[i], out) })
	}
	go func() {
		awaitExit(cmd.Process.Pid) // in the poller: no thread held meanwhile
		err := cmd.Wait()          // reaps at once
		l.state = cmd.ProcessState
		if l.state == nil {
			m.opts.Logger.Error("wait failed", "pid", l.pid, "err", err)
		}
		m.forkMu.Lock()
		delete(m.pids, l.pid)
		m.forkMu.Unlock()
		deadline := time.Now().Add(drainGrace)
		for _, f := range l.outs {
			_ = f.SetReadDeadline(deadline)
		}
		pumps.Wait()
		closeAll(l.outs)
		if l.stdin != nil {
			l.stdin.Close()
		}
		close(l.done)
	}()
	return l, nil
}

// pollable returns the terminal's master as a non-blocking file in Go's
// poller, closing f. creack/pty leaves it blocking (its ioctls go through
// Fd), and on a blocking file read deadlines do nothing: the drain after
// exit would then wait for the last background child holding the
// terminal (one that ignores SIGHUP, as under nohup) to end.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup the terminal: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("make the terminal non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func startReason(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return "the system refused"
}

// pipes makes the stdout, stderr and (optionally) stdin pipes. It returns
// our ends and the child's ends, each indexed stdout, stderr, stdin.
func pipes(stdin bool) (ours, theirs []*os.File, err error) {
	n := 2
	if stdin {
		n = 3
	}
	ours, theirs = make([]*os.File, 3), make([]*os.File, 3)
	for i := 0; i < n; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range append(ours, theirs...) {
				if f != nil {
					f.Close()
				}
			}
			return nil, nil, err
		}
		if i == 2 { // stdin: the child reads
			ours[i], theirs[i] = w, r
		} else {
			ours[i], theirs[i] = r, w
		}
	}
	return ours, theirs, nil
}

// pump copies f into out until EOF, an error (EIO from a PTY whose child
// side closed) or the drain deadline.
func pump(f *os.File, stream byte, out sink) {
	b := pumpBuffers.Get().(*[pumpBuffer]byte)
	defer pumpBuffers.Put(b)
	buf := b[:]
	for {
		n, err := f.Read(buf)
		if n > 0 {
			out(stream, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// exitStatus turns a wait status into the API's exit_code and signal.
func exitStatus(state *os.ProcessState) (code *int, sig *string) {
	if state == nil {
		return nil, nil
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := SignalName(ws.Signal())
		return nil, &name
	}
	c := state.ExitCode()
	return &c, nil
}
