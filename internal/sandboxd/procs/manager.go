// Package procs manages the processes of a sandbox: spawn with or without
// a PTY, signal, resize, input, output logs addressed by byte offset, and
// lifecycle events. It does not import net/http.
//
// Lifetimes: a Process lives until it exits and then stays listed (with
// its output log) until it is deleted or evicted as one of the oldest of
// more than Options.MaxExited exited processes. No connection owns a
// process. Each started child has one goroutine that waits for it (on its
// pidfd, in Go's poller: no OS thread is held per child) and one per
// output stream; all end when the child exits. Manager.Close stops every child.
package procs

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sandboxd/outlog"
)

// Options configure a Manager.
type Options struct {
	// KillGrace is the time between SIGTERM and SIGKILL; 5s when zero.
	KillGrace time.Duration
	// MaxProcesses caps running children (managed and exec); 4096 when zero.
	MaxProcesses int
	// MaxExited caps how many exited processes stay listed; 1000 when zero.
	MaxExited int
	Logger    *slog.Logger
}

// Manager owns every managed process.
type Manager struct {
	opts   Options
	events *bus

	// forkMu is held across fork and pid registration; see launch.
	forkMu sync.Mutex
	pids   map[int]struct{} // children not yet reaped by their waiter

	mu      sync.Mutex
	byID    map[string]*Process
	byTag   map[string]*Process // newest process with the tag
	order   []*Process          // creation order
	running int                 // children alive, exec included
	closed  bool
	wg      sync.WaitGroup // one per child waiter
}

// NewManager returns an empty Manager.
func NewManager(opts Options) *Manager {
	if opts.KillGrace <= 0 {
		opts.KillGrace = 5 * time.Second
	}
	if opts.MaxProcesses <= 0 {
		opts.MaxProcesses = 4096
	}
	if opts.MaxExited <= 0 {
		opts.MaxExited = 1000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Manager{
		opts:   opts,
		events: newBus(),
		pids:   map[int]struct{}{},
		byID:   map[string]*Process{},
		byTag:  map[string]*Process{},
	}
}

// Owns reports whether pid is a child the manager will reap itself. The
// PID 1 reaper must leave such children alone.
func (m *Manager) Owns(pid int) bool {
	m.forkMu.Lock()
	defer m.forkMu.Unlock()
	_, ok := m.pids[pid]
	return ok
}

// Running returns the number of running children, exec included.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running
}

// reserve takes a slot for a new child, or fails when closed or full.
func (m *Manager) reserve() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errdefs.Unavailablef("sandboxd is shutting down")
	}
	if m.running >= m.opts.MaxProcesses {
		return errdefs.Conflictf("too many running processes (limit %d)", m.opts.MaxProcesses)
	}
	m.running++
	return nil
}

func (m *Manager) release() {
	m.mu.Lock()
	m.running--
	m.mu.Unlock()
}

// Spawn starts a managed process.
func (m *Manager) Spawn(req sandboxapi.SpawnRequest) (*Process, error) {
	if err := validateSpawn(&req); err != nil {
		return nil, err
	}
	cmd, err := resolve(req.Command, req.Args, req.Cwd, req.Env, req.PTY != nil)
	if err != nil {
		return nil, err
	}
	if err := m.reserve(); err != nil {
		return nil, err
	}
	size := int(req.BufferBytes)
	if size == 0 {
		size = DefaultBufferBytes
	}
	p := &Process{id: newID(), tag: req.Tag, label: req.Label, cmd: cmd, isPTY: req.PTY != nil,
		created: time.Now().UTC(), log: outlog.New(size), m: m, done: make(chan struct{})}
	spec := launchSpec{cmd: cmd, stdin: req.Stdin}
	if req.PTY != nil {
		spec.pty = &[2]int{req.PTY.Rows, req.PTY.Cols}
		p.rows, p.cols = req.PTY.Rows, req.PTY.Cols
	}

	// The tag check and the publication happen under mu so two spawns
	// cannot both take a tag.
	m.mu.Lock()
	if req.Tag != "" {
		if old := m.byTag[req.Tag]; old != nil && !old.Exited() {
			m.mu.Unlock()
			m.release()
			return nil, errdefs.Conflictf("tag %q is taken by running process %s", req.Tag, old.id)
		}
	}
	run, err := m.launch(spec, p.log.Write)
	if err != nil {
		m.mu.Unlock()
		m.release()
		return nil, err
	}
	p.run = run
	m.byID[p.id] = p
	if p.tag != "" {
		m.byTag[p.tag] = p
	}
	m.order = append(m.order, p)
	m.events.publish(sandboxapi.EventProcessCreated, p.Snapshot())
	m.mu.Unlock()

	var timer *time.Timer
	if req.TimeoutMS > 0 {
		timer = time.AfterFunc(time.Duration(req.TimeoutMS)*time.Millisecond, func() {
			killTree(run.pid, run.pgid, syscall.SIGKILL)
		})
	}
	m.wg.Go(func() {
		<-run.done
		if timer != nil {
			timer.Stop()
		}
		code, sig := exitStatus(run.state)
		now := time.Now().UTC()
		p.mu.Lock()
		p.exited, p.exitCode, p.signal, p.exitedAt = true, code, sig, &now
		p.mu.Unlock()
		p.log.Close()
		m.release()
		m.events.publish(sandboxapi.EventProcessExited, p.Snapshot())
		close(p.done)
		m.evictExited()
	})
	return p, nil
}

// evictExited forgets the oldest exited processes beyond MaxExited.
func (m *Manager) evictExited() {
	m.mu.Lock()
	var exited int
	for _, p := range m.order {
		if p.Exited() {
			exited++
		}
	}
	var gone []*Process
	for i := 0; i < len(m.order) && exited > m.opts.MaxExited; {
		if p := m.order[i]; p.Exited() {
			m.forgetLocked(p)
			gone = append(gone, p)
			exited--
			continue
		}
		i++
	}
	m.mu.Unlock()
	for _, p := range gone {
		m.events.publish(sandboxapi.EventProcessDeleted, p.Snapshot())
	}
}

// forgetLocked removes p from the indexes. mu is held.
func (m *Manager) forgetLocked(p *Process) {
	delete(m.byID, p.id)
	if m.byTag[p.tag] == p {
		delete(m.byTag, p.tag)
	}
	for i, q := range m.order {
		if q == p {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
}

// Get finds a process by id or tag.
func (m *Manager) Get(ref string) (*Process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.byID[ref]; p != nil {
		return p, nil
	}
	if p := m.byTag[ref]; p != nil {
		return p, nil
	}
	return nil, errdefs.NotFoundf("no process with id or tag %q", ref)
}

// Filter selects processes in List; zero fields match everything.
type Filter struct {
	Status string // "running" or "exited"
	Tag    string
	PTY    *bool
}

// List returns snapshots of the matching processes, oldest first.
func (m *Manager) List(f Filter) []sandboxapi.Process {
	m.mu.Lock()
	ps := append([]*Process(nil), m.order...)
	m.mu.Unlock()
	out := []sandboxapi.Process{}
	for _, p := range ps {
		s := p.Snapshot()
		if (f.Status != "" && s.Status != f.Status) || (f.Tag != "" && s.Tag != f.Tag) || (f.PTY != nil && s.PTY != *f.PTY) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// Delete stops the process if it runs (SIGTERM, SIGKILL after the grace
// period, reaped) and forgets it.
func (m *Manager) Delete(ctx context.Context, ref string) error {
	p, err := m.Get(ref)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { p.terminate(m.opts.KillGrace); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		// The caller left; the process is still stopped and forgotten.
		go func() { <-done; m.forget(p) }()
		return ctx.Err()
	}
	m.forget(p)
	return nil
}

func (m *Manager) forget(p *Process) {
	m.mu.Lock()
	_, present := m.byID[p.id]
	if present {
		m.forgetLocked(p)
	}
	m.mu.Unlock()
	if present {
		m.events.publish(sandboxapi.EventProcessDeleted, p.Snapshot())
	}
}

// Events returns lifecycle events after seq `after`, at most max of them;
// gap is set when older ones were dropped. With none available, wait is
// closed when the next one is published.
func (m *Manager) Events(after uint64, max int) (evs []Event, gap bool, wait <-chan struct{}) {
	return m.events.since(after, max)
}

// Close refuses new processes, stops every running one and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.wg.Wait()
		return
	}
	m.closed = true
	ps := append([]*Process(nil), m.order...)
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { p.terminate(m.opts.KillGrace) })
	}
	wg.Wait()
	m.wg.Wait()
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func newID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "p_" + strings.ToLower(idEncoding.EncodeToString(b))
}

// LastEventSeq is the sequence number of the newest event, 0 if none.
func (m *Manager) LastEventSeq() uint64 { return m.events.last() }
