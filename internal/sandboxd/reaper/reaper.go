// Package reaper lets the sandbox daemon serve as a container's PID 1: it
// reaps orphaned processes that the kernel re-parents to it, and at
// shutdown it terminates whatever is left in the PID namespace.
//
// It never calls wait4(-1): other goroutines wait for the processes they
// start (os/exec's cmd.Wait), and a blanket wait would steal their exit
// status. Instead, on SIGCHLD it scans /proc for zombies whose parent is
// this process and reaps each one by PID — only when the caller's
// IsManaged predicate disowns it, and only after it has stayed a zombie for
// Options.MinAge, which covers the instant between a child's fork and its
// starter recording the PID.
package reaper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// IsInit reports whether this process is PID 1 of its PID namespace.
func IsInit() bool { return os.Getpid() == 1 }

// DefaultMinAge is how long a zombie must have been seen before it is
// reaped, unless Options.MinAge says otherwise.
const DefaultMinAge = time.Second

const (
	// sweepEvery is a safety-net scan for a SIGCHLD that never came.
	sweepEvery = 30 * time.Second
	// scanGap spaces scans, so a burst of exits costs one /proc walk.
	scanGap = 50 * time.Millisecond
)

// Options configure a Reaper.
type Options struct {
	// IsManaged reports whether other code waits for pid itself; the reaper
	// leaves such zombies alone. It must answer true from the moment
	// the starter knows the PID until its Wait returns. nil: none is.
	IsManaged func(pid int) bool
	// MinAge is how long a zombie must stay one before it is reaped;
	// DefaultMinAge when zero.
	MinAge time.Duration
	// OnReap, when set, is called after each reap, from the reaper's
	// goroutine or from TerminateAll's caller, possibly at the same time.
	OnReap func(pid int, status syscall.WaitStatus)
	// Logger receives a debug line per reap; slog.Default() when nil.
	Logger *slog.Logger
}

// Reaper reaps orphaned children. Its goroutine runs from Start until Stop
// or the end of Start's context.
type Reaper struct {
	opts   Options
	proc   string
	self   int
	cancel context.CancelFunc
	done   chan struct{}
	// seen maps a zombie to when a scan first saw it. Only the reaper's
	// goroutine touches it until done is closed; TerminateAll uses its own.
	seen map[zombie]time.Time
}

// zombie identifies a process across PID reuse.
type zombie struct {
	pid   int
	start uint64 // start time in clock ticks since boot
}

// Start starts reaping zombie children of this process. It is useful as
// PID 1, or as a child subreaper (prctl PR_SET_CHILD_SUBREAPER); as any
// other process it only reaps its own unmanaged children.
func Start(ctx context.Context, opts Options) *Reaper {
	if opts.MinAge <= 0 {
		opts.MinAge = DefaultMinAge
	}
	if opts.IsManaged == nil {
		opts.IsManaged = func(int) bool { return false }
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Reaper{opts: opts, proc: "/proc", self: os.Getpid(), cancel: cancel,
		done: make(chan struct{}), seen: make(map[zombie]time.Time)}
	// Subscribe before returning, so no SIGCHLD after Start is missed.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go r.run(ctx, sigs)
	return r
}

// Stop ends the reaper's goroutine and waits for it. It is idempotent.
func (r *Reaper) Stop() {
	r.cancel()
	<-r.done
}

func (r *Reaper) run(ctx context.Context, sigs chan os.Signal) {
	defer close(r.done)
	defer signal.Stop(sigs)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		last := time.Now()
		wait := sweepEvery
		if due, _ := r.scan(last, r.seen, r.opts.MinAge); due > 0 && due < wait {
			wait = due
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-sigs:
		case <-timer.C:
		}
		if gap := time.Until(last.Add(scanGap)); gap > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(gap):
			}
		}
	}
}

// scan reaps the zombie children that have been seen for minAge and are
// not managed. It returns how long until the next pending zombie is old
// enough (0: none pending) and how many children are still alive.
func (r *Reaper) scan(now time.Time, seen map[zombie]time.Time, minAge time.Duration) (due time.Duration, live int) {
	entries, err := os.ReadDir(r.proc)
	if err != nil {
		r.opts.Logger.Warn("reaper: cannot list processes", "err", err)
		return 0, 0
	}
	present := make(map[zombie]bool)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == r.self {
			continue
		}
		st, err := readStat(filepath.Join(r.proc, e.Name(), "stat"))
		if err != nil || st.ppid != r.self {
			continue // gone, or not our child
		}
		if st.state != 'Z' {
			live++
			continue
		}
		z := zombie{pid: pid, start: st.start}
		present[z] = true
		first, ok := seen[z]
		if !ok {
			first = now
			seen[z] = now
		}
		if age := now.Sub(first); age < minAge {
			if left := minAge - age; due == 0 || left < due {
				due = left
			}
			continue
		}
		if r.opts.IsManaged(pid) {
			continue // its starter will wait for it
		}
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if err != nil || got != pid {
			continue // someone else reaped it, or not yet waitable
		}
		delete(seen, z)
		delete(present, z)
		r.opts.Logger.Debug("reaped orphan", "pid", pid, "status", describe(ws))
		if r.opts.OnReap != nil {
			r.opts.OnReap(pid, ws)
		}
	}
	for z := range seen {
		if !present[z] {
			delete(seen, z)
		}
	}
	return due, live
}

// TerminateAll ends every other process in the PID namespace: SIGTERM to
// all, then, after grace, SIGKILL to whatever is left. It reaps unmanaged
// zombies as they appear, with no minimum age (the managed processes should
// already be stopped), and returns when this process has no live children
// or ctx ends. It refuses to run unless this process is PID 1, where
// kill(-1) cannot reach beyond the namespace. It may run while the
// reaper's goroutine does.
func (r *Reaper) TerminateAll(ctx context.Context, grace time.Duration) error {
	if !IsInit() {
		return errors.New("reaper: TerminateAll needs PID 1")
	}
	seen := make(map[zombie]time.Time)
	_, live := r.scan(time.Now(), seen, 0)
	if live == 0 {
		return nil
	}
	r.opts.Logger.Info("reaper: sending SIGTERM to leftover processes", "children", live)
	if err := syscall.Kill(-1, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("reaper: SIGTERM all: %w", err)
	}
	if r.drain(ctx, seen, grace) {
		return nil
	}
	r.opts.Logger.Info("reaper: processes outlived SIGTERM; killing them", "grace", grace)
	if err := syscall.Kill(-1, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("reaper: SIGKILL all: %w", err)
	}
	if r.drain(ctx, seen, 5*time.Second) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("reaper: waiting for processes to exit: %w", err)
	}
	return errors.New("reaper: processes survived SIGKILL")
}

// drain reaps until no child is alive (true) or d or ctx runs out (false).
func (r *Reaper) drain(ctx context.Context, seen map[zombie]time.Time, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, live := r.scan(time.Now(), seen, 0); live == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}

// stat is what the reaper needs from /proc/<pid>/stat.
type stat struct {
	state byte
	ppid  int
	start uint64
}

func readStat(path string) (stat, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return stat{}, err
	}
	return parseStat(data)
}

// parseStat parses "pid (comm) state ppid ... starttime ...". comm may hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStat(data []byte) (stat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return stat{}, errors.New("reaper: malformed stat: no ')'")
	}
	// After comm: state(3) ppid(4) ... starttime(22); index 0 is state.
	f := bytes.Fields(data[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("reaper: malformed stat: %d fields after comm", len(f))
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return stat{}, fmt.Errorf("reaper: malformed stat ppid: %w", err)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("reaper: malformed stat starttime: %w", err)
	}
	return stat{state: f[0][0], ppid: ppid, start: start}, nil
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return "exit " + strconv.Itoa(ws.ExitStatus())
}
