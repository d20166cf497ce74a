// Package lsp runs language servers inside the sandbox and speaks the
// Language Server Protocol to them on the API's behalf: gopls for Go,
// pyright or pylsp for Python, typescript-language-server for
// TypeScript. A server is started for a workspace root; the API then asks
// it for a document's diagnostics, a definition, references, hover text
// and document symbols, with paths in the sandbox's terms and confined to
// the files root like the files API. It does not import net/http.
//
// The client side is done properly: JSON-RPC 2.0 framed with
// Content-Length headers and bounded message sizes, the initialize /
// initialized handshake, full-text document sync with growing versions,
// versioned diagnostics, answers to every request a server sends
// (configuration, progress, registrations), file-change notifications
// for the watch a server registers, and shutdown/exit before a kill.
//
// Lifetimes: a Manager owns its servers; each lives until it is stopped
// (DELETE) or the Manager is closed (sandboxd shutdown), and stays listed
// as exited if it dies by itself.
package lsp

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sandboxd/files"
)

// DefaultMaxServers caps the servers of a Manager.
const DefaultMaxServers = 16

// Options configure a Manager.
type Options struct {
	// Root confines every path; the files API's root.
	Root *files.Root
	// MaxServers caps the servers, exited ones included; DefaultMaxServers
	// when 0.
	MaxServers int
	// Lookup finds an executable by name; $PATH plus the usual install
	// directories when nil.
	Lookup func(name string) (string, error)
	// Logger receives lifecycle logs; slog.Default() when nil.
	Logger *slog.Logger
}

// Manager owns the language servers. Its methods are safe for concurrent
// use.
type Manager struct {
	opts Options
	ps   paths

	mu       sync.Mutex
	servers  map[string]*Server // started servers
	starting int                // servers being started, counted against MaxServers
	closed   bool
}

// NewManager returns a Manager with no servers.
func NewManager(opts Options) *Manager {
	if opts.MaxServers <= 0 {
		opts.MaxServers = DefaultMaxServers
	}
	if opts.Lookup == nil {
		opts.Lookup = lookup
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Manager{opts: opts, ps: paths{root: opts.Root}, servers: map[string]*Server{}}
}

// Start starts a language server for req.Language over the workspace
// req.Root and completes its handshake.
func (m *Manager) Start(ctx context.Context, req sandboxapi.LSPStartRequest) (sandboxapi.LSPServer, error) {
	argv, err := command(req.Language, m.opts.Lookup)
	if err != nil {
		return sandboxapi.LSPServer{}, err
	}
	if req.Root == "" {
		return sandboxapi.LSPServer{}, errdefs.Invalidf("root is required")
	}
	root, rootHost, err := m.ps.dir(req.Root)
	if err != nil {
		return sandboxapi.LSPServer{}, err
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return sandboxapi.LSPServer{}, errdefs.Unavailablef("sandboxd is shutting down")
	case len(m.servers)+m.starting >= m.opts.MaxServers:
		m.mu.Unlock()
		return sandboxapi.LSPServer{}, errdefs.Conflictf("too many language servers (limit %d); delete some first", m.opts.MaxServers)
	}
	s := &Server{
		id: newID(), lang: req.Language, root: root, rootHost: rootHost, argv: argv,
		created: time.Now(), ps: m.ps, log: m.opts.Logger,
		docs: map[string]*document{}, pubs: map[string]*published{}, pubCh: make(chan struct{}),
	}
	m.starting++
	m.mu.Unlock()

	err = s.start(ctx)
	m.mu.Lock()
	m.starting--
	closed := m.closed
	if err == nil && !closed {
		m.servers[s.id] = s
	}
	m.mu.Unlock()
	if err != nil {
		return sandboxapi.LSPServer{}, err
	}
	if closed {
		s.stop(context.Background())
		return sandboxapi.LSPServer{}, errdefs.Unavailablef("sandboxd is shutting down")
	}
	m.opts.Logger.Info("lsp: server started", "id", s.id, "language", s.lang, "root", s.root, "command", argv[0], "pid", s.cmd.Process.Pid)
	return s.wire(), nil
}

// Server returns the started server with id, or ErrNotFound.
func (m *Manager) Server(id string) (*Server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.servers[id]
	if !ok {
		return nil, errdefs.NotFoundf("no language server %q", id)
	}
	return s, nil
}

// List describes the servers, oldest first.
func (m *Manager) List() []sandboxapi.LSPServer {
	m.mu.Lock()
	var ss []*Server
	for _, s := range m.servers {
		ss = append(ss, s)
	}
	m.mu.Unlock()
	slices.SortFunc(ss, func(a, b *Server) int { return a.created.Compare(b.created) })
	out := make([]sandboxapi.LSPServer, 0, len(ss))
	for _, s := range ss {
		out = append(out, s.wire())
	}
	return out
}

// Stop shuts the server with id down and forgets it.
func (m *Manager) Stop(ctx context.Context, id string) error {
	m.mu.Lock()
	s, ok := m.servers[id]
	delete(m.servers, id)
	m.mu.Unlock()
	if !ok {
		return errdefs.NotFoundf("no language server %q", id)
	}
	s.stop(ctx)
	m.opts.Logger.Info("lsp: server stopped", "id", id)
	return nil
}

// Close stops every server, at the same time, and refuses new ones.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	var ss []*Server
	for _, s := range m.servers {
		ss = append(ss, s)
	}
	clear(m.servers)
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop(context.Background())
		}()
	}
	wg.Wait()
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func newID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "ls_" + idEncoding.EncodeToString(b)
}
