// Package forward pipes TCP connections made inside a sandbox to unix
// sockets in the sandbox's socket directory (/run/corral, a host directory
// mounted in). A sandbox without network reaches a service the host offers
// this way: the host listens on a socket in that directory, a forward
// listens on 127.0.0.1:port, and a program that only speaks TCP (an agent
// CLI given http://127.0.0.1:port as its API base URL) gets through.
//
// Lifetimes: a Forward lives from Open until Close or Shutdown. Each has one
// goroutine accepting connections and two per open connection (one per
// direction); all of them end when the forward closes, which also closes
// its open connections. Shutdown closes every forward and waits for every
// goroutine. The socket is dialled anew for each connection, so the host
// side may restart (a new control plane listening on the same path) under
// a live forward.
//
// Confinement: the socket must be in Options.Dir after symlinks are
// resolved, and must be a socket. This is hygiene more than a wall: the
// daemon runs as the sandbox's user, so a forward reaches nothing that user
// could not connect to itself.
package forward

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// DefaultDir is the sandbox's socket directory (runtime.SocketDir; the
// daemon does not import the runtime packages).
const DefaultDir = "/run/corral"

// Defaults of Options.
const (
	DefaultMax         = 64
	DefaultMaxConns    = 256
	DefaultDialTimeout = 10 * time.Second
)

// maxSocketPath is the longest path a unix socket address holds
// (sun_path, 108 bytes with its NUL).
const maxSocketPath = 107

// Options configure a Manager.
type Options struct {
	// Dir holds the sockets that may be forwarded; DefaultDir if "".
	Dir string
	// Max caps the open forwards; DefaultMax if 0.
	Max int
	// MaxConns caps the open connections of one forward; more wait in the
	// listen backlog. DefaultMaxConns if 0.
	MaxConns int
	// DialTimeout bounds connecting to the socket; DefaultDialTimeout if 0.
	DialTimeout time.Duration
	// Logger receives connection failures; slog.Default() if nil.
	Logger *slog.Logger
}

// Manager owns the forwards of one daemon. It is safe for concurrent use.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	fwds   map[string]*fwd // by id
	closed bool
	wg     sync.WaitGroup // every goroutine of every forward
}

// fwd is one forward. Its counters and conns are guarded by mu.
type fwd struct {
	id      string
	port    int
	socket  string // as requested
	target  string // socket with symlinks resolved: what is dialled
	created time.Time
	ln      net.Listener
	slots   chan struct{} // one per open connection, MaxConns deep

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	active int64
	total  int64
	closed bool
}

// New returns a Manager; it starts nothing.
func New(o Options) *Manager {
	if o.Dir == "" {
		o.Dir = DefaultDir
	}
	if o.Max <= 0 {
		o.Max = DefaultMax
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Manager{opts: o, log: o.Logger, fwds: map[string]*fwd{}}
}

// Open starts a forward from 127.0.0.1:port (0: a free port) to socket.
// Errors: ErrInvalid for a malformed port or path, ErrForbidden for a
// socket outside Dir or a privileged port, ErrUnprocessable for a path
// that is not a socket, ErrConflict for a port in use or too many
// forwards, ErrUnavailable after Shutdown.
func (m *Manager) Open(port int, socket string) (sandboxapi.Forward, error) {
	if port < 0 || port > 65535 {
		return sandboxapi.Forward{}, errdefs.Invalidf("listen_port %d is not 0 (any free port) or a port number", port)
	}
	socket, target, err := m.resolve(socket)
	if err != nil {
		return sandboxapi.Forward{}, err
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return sandboxapi.Forward{}, errdefs.Unavailablef("the daemon is shutting down")
	case len(m.fwds) >= m.opts.Max:
		m.mu.Unlock()
		return sandboxapi.Forward{}, errdefs.Conflictf("too many forwards (limit %d)", m.opts.Max)
	}
	m.mu.Unlock()

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return sandboxapi.Forward{}, listenError(port, err)
	}
	f := &fwd{
		id: newID(), socket: socket, target: target, created: time.Now().UTC(), ln: ln,
		port:  ln.Addr().(*net.TCPAddr).Port,
		slots: make(chan struct{}, m.opts.MaxConns), conns: map[net.Conn]struct{}{},
	}
	m.mu.Lock()
	if m.closed || len(m.fwds) >= m.opts.Max { // lost a race
		m.mu.Unlock()
		ln.Close()
		return sandboxapi.Forward{}, errdefs.Conflictf("too many forwards (limit %d)", m.opts.Max)
	}
	m.fwds[f.id] = f
	m.wg.Add(1)
	m.mu.Unlock()
	go m.accept(f)
	return f.view(), nil
}

// List returns the forwards, oldest first.
func (m *Manager) List() []sandboxapi.Forward {
	m.mu.Lock()
	all := make([]*fwd, 0, len(m.fwds))
	for _, f := range m.fwds {
		all = append(all, f)
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b *fwd) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]sandboxapi.Forward, len(all))
	for i, f := range all {
		out[i] = f.view()
	}
	return out
}

// Close stops forward id: the listener closes and open connections are
// cut. ErrNotFound if there is no such forward.
func (m *Manager) Close(id string) error {
	m.mu.Lock()
	f := m.fwds[id]
	delete(m.fwds, id)
	m.mu.Unlock()
	if f == nil {
		return errdefs.NotFoundf("no forward %q", id)
	}
	f.close()
	return nil
}

// Shutdown closes every forward, refuses new ones, and waits until every
// goroutine has ended. It is idempotent.
func (m *Manager) Shutdown() {
	m.mu.Lock()
	m.closed = true
	all := m.fwds
	m.fwds = map[string]*fwd{}
	m.mu.Unlock()
	for _, f := range all {
		f.close()
	}
	m.wg.Wait()
}

// resolve checks socket (an absolute path, or a file name in Dir) and
// returns its absolute path and its target with symlinks resolved.
func (m *Manager) resolve(socket string) (abs, target string, err error) {
	if socket != "" && !filepath.IsAbs(socket) {
		// A bare name is a socket in Dir: callers need not know where Dir
		// is mounted (the local runtime has no /run/corral).
		if strings.ContainsRune(socket, '/') || socket == "." || socket == ".." {
			return "", "", errdefs.Invalidf("socket %q is neither an absolute path nor a file name", socket)
		}
		socket = filepath.Join(m.opts.Dir, socket)
	}
	switch {
	case socket == "":
		return "", "", errdefs.Invalidf("socket is required")
	case len(socket) > maxSocketPath:
		return "", "", errdefs.Invalidf("socket path is longer than %d bytes", maxSocketPath)
	case strings.ContainsRune(socket, 0):
		return "", "", errdefs.Invalidf("socket path holds a NUL byte")
	}
	dir, err := filepath.EvalSymlinks(m.opts.Dir)
	if err != nil {
		return "", "", errdefs.Wrap(errdefs.ErrUnprocessable, err, fmt.Sprintf("the socket directory %s is missing", m.opts.Dir))
	}
	outside := errdefs.Forbiddenf("socket %q is not in %s", socket, m.opts.Dir)
	clean := filepath.Clean(socket)
	if !within(filepath.Clean(m.opts.Dir), clean) && !within(dir, clean) {
		return "", "", outside
	}
	target, err = filepath.EvalSymlinks(clean)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", errdefs.Unprocessablef("no socket at %s", socket)
	}
	if err != nil {
		return "", "", errdefs.Wrap(errdefs.ErrUnprocessable, err, fmt.Sprintf("socket %s cannot be resolved", socket))
	}
	if !within(dir, target) {
		return "", "", outside
	}
	fi, err := os.Stat(target)
	if err != nil {
		return "", "", errdefs.Wrap(errdefs.ErrUnprocessable, err, fmt.Sprintf("socket %s cannot be read", socket))
	}
	if fi.Mode().Type() != os.ModeSocket {
		return "", "", errdefs.Unprocessablef("%s is not a unix socket", socket)
	}
	return clean, target, nil
}

// within reports whether path is strictly inside dir (both clean).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func listenError(port int, err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return errdefs.Wrap(errdefs.ErrConflict, err, fmt.Sprintf("port %d is in use", port))
	case errors.Is(err, syscall.EACCES):
		return errdefs.Wrap(errdefs.ErrForbidden, err, fmt.Sprintf("port %d needs privileges the daemon does not have", port))
	}
	return errdefs.Wrap(errdefs.ErrUnprocessable, err, fmt.Sprintf("cannot listen on port %d", port))
}

// accept serves f's listener until it closes. A connection waits for a
// free slot before it is accepted, so at most MaxConns are open.
func (m *Manager) accept(f *fwd) {
	defer m.wg.Done()
	for {
		f.slots <- struct{}{}
		c, err := f.ln.Accept()
		if err != nil {
			<-f.slots
			if !errors.Is(err, net.ErrClosed) {
				m.log.Warn("forward: accept failed", "id", f.id, "err", err)
			}
			return
		}
		if !f.track(c) {
			c.Close()
			<-f.slots
			return
		}
		m.wg.Add(1)
		go m.pipe(f, c)
	}
}

// pipe connects c to f's socket and copies both ways until both sides are
// done. Each direction half-closes its destination when its source ends,
// so a client that closes its write side still gets the whole answer.
func (m *Manager) pipe(f *fwd, c net.Conn) {
	defer m.wg.Done()
	defer func() { <-f.slots }()
	defer f.untrack(c)
	u, err := net.DialTimeout("unix", f.target, m.opts.DialTimeout)
	if err != nil {
		m.log.Warn("forward: the socket does not answer", "id", f.id, "socket", f.socket, "err", err)
		c.Close()
		return
	}
	if !f.track(u) {
		u.Close()
		c.Close()
		return
	}
	defer f.untrack(u)
	done := make(chan struct{})
	go func() { defer close(done); copyHalf(u, c) }()
	copyHalf(c, u)
	<-done
	c.Close()
	u.Close()
}

// copyHalf copies src to dst, then half-closes dst for writing (or closes
// both if it cannot), so the other direction can finish.
func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	type closeWriter interface{ CloseWrite() error }
	if cw, ok := dst.(closeWriter); ok && err == nil {
		if cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}

// track adds c to f's open connections; false if f is closed.
func (f *fwd) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	if _, ok := c.(*net.TCPConn); ok {
		f.active++
		f.total++
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *fwd) untrack(c net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.conns[c]; !ok {
		return
	}
	delete(f.conns, c)
	if _, ok := c.(*net.TCPConn); ok {
		f.active--
	}
}

// close closes the listener and every open connection; the goroutines
// then end on their own.
func (f *fwd) close() {
	f.mu.Lock()
	f.closed = true
	conns := f.conns
	f.conns = map[net.Conn]struct{}{}
	f.mu.Unlock()
	f.ln.Close()
	for c := range conns {
		c.Close()
	}
}

func (f *fwd) view() sandboxapi.Forward {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sandboxapi.Forward{
		ID: f.id, Port: f.port, Address: f.ln.Addr().String(), Socket: f.socket,
		CreatedAt: f.created, Active: f.active, Total: f.total,
	}
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func newID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "f_" + idEncoding.EncodeToString(b)
}
