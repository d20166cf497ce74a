package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// initTimeout bounds the start of a server and its initialize handshake.
	initTimeout = 60 * time.Second
	// shutdownGrace is how long a server may take to shut down and exit
	// before its process group is killed.
	shutdownGrace = 3 * time.Second
	// maxDocs bounds the documents kept open in one server; the least
	// recently used is closed beyond it.
	maxDocs = 256
	// stderrTail is how much of a server's stderr is kept, to explain a
	// failure.
	stderrTail = 16 << 10
)

// Server is one language server process and the client state that goes
// with it: the documents it has open (full text and version) and the
// diagnostics it last published per document.
//
// Lifetime: start runs the process (in its own process group) with one
// goroutine waiting for it from the start, so the PID 1 reaper never
// takes its exit status, one reading its stderr, the Conn's reader, and,
// once the server asks for file events, a watcher forwarding them. stop
// asks the server to shut down and exit, kills the process group after
// shutdownGrace, and waits for all of them.
type Server struct {
	id       string
	lang     string
	root     string // sandbox path of the workspace
	rootHost string
	argv     []string
	created  time.Time
	ps       paths
	log      *slog.Logger

	cmd     *exec.Cmd
	conn    *Conn
	exited  chan struct{} // closed when the process has been waited for
	stderr  *tailBuffer
	errDone chan struct{} // closed when stderr is drained
	errR    *os.File

	name, version string
	caps          map[string]json.RawMessage

	// docMu serialises document syncs, so versions only grow and each
	// didOpen/didChange is sent in order.
	docMu sync.Mutex
	docs  map[string]*document // by URI

	diagMu sync.Mutex
	pubSeq uint64                // publications so far
	pubs   map[string]*published // latest per URI
	pubCh  chan struct{}         // closed and replaced on every publication

	watcher  *watcher
	stopOnce sync.Once
}

// document is the server's copy of one document.
type document struct {
	version int
	text    string
	sentSeq uint64 // pubSeq when this version was sent
	used    time.Time
}

// published is one publishDiagnostics.
type published struct {
	version *int
	seq     uint64
	diags   []diagnostic
}

// maxStoredDiags bounds the diagnostics kept per document.
const maxStoredDiags = 1000

// start runs the server and completes the initialize handshake.
func (s *Server) start(ctx context.Context) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return err
	}
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Dir = s.rootHost
	cmd.Env = childEnv(os.Environ())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return errdefs.Wrap(errdefs.ErrUnprocessable, err, fmt.Sprintf("cannot run %s: %v", s.argv[0], errors.Unwrap(err)))
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	s.stderr, s.errR, s.errDone = &tailBuffer{max: stderrTail}, errR, make(chan struct{})
	go func() {
		defer close(s.errDone)
		_, _ = io.Copy(s.stderr, errR)
	}()
	s.conn = NewConn(outR, inW, s, 0)

	ictx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	if err := s.initialize(ictx); err != nil {
		s.stop(context.Background())
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errdefs.Wrap(errdefs.ErrUnprocessable, err, fmt.Sprintf("the %s language server did not start: %s", s.lang, s.failure(err)))
	}
	return nil
}

// failure explains why the server failed: its stderr, else err.
func (s *Server) failure(err error) string {
	msg := strings.TrimSpace(s.stderr.String())
	if msg == "" {
		return err.Error()
	}
	if len(msg) > 2048 {
		msg = "…" + msg[len(msg)-2048:]
	}
	return msg
}

// clientCapabilities is what this client supports: full-text sync,
// versioned diagnostics, location links, markdown hover, hierarchical
// symbols, configuration and watched files by registration.
var clientCapabilities = map[string]any{
	"workspace": map[string]any{
		"configuration":          true,
		"workspaceFolders":       true,
		"didChangeWatchedFiles":  map[string]any{"dynamicRegistration": true, "relativePatternSupport": true},
		"didChangeConfiguration": map[string]any{"dynamicRegistration": false},
	},
	"textDocument": map[string]any{
		"synchronization":    map[string]any{"dynamicRegistration": false, "didSave": false},
		"publishDiagnostics": map[string]any{"versionSupport": true},
		"definition":         map[string]any{"linkSupport": true},
		"references":         map[string]any{},
		"hover":              map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
		"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
		"diagnostic":         map[string]any{"dynamicRegistration": false, "relatedDocumentSupport": false},
	},
	"window":  map[string]any{"workDoneProgress": true},
	"general": map[string]any{"positionEncodings": []string{"utf-16"}},
}

func (s *Server) initialize(ctx context.Context) error {
	folder := map[string]string{"uri": fileURI(s.rootHost), "name": filepath.Base(s.rootHost)}
	params := map[string]any{
		"processId":        os.Getpid(),
		"clientInfo":       map[string]string{"name": "corral-sandboxd"},
		"rootUri":          fileURI(s.rootHost),
		"rootPath":         s.rootHost,
		"workspaceFolders": []any{folder},
		"capabilities":     clientCapabilities,
	}
	if st := languages[s.lang].settings; st != nil {
		params["initializationOptions"] = st
	}
	var res struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
		ServerInfo   struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	errc := make(chan error, 1)
	go func() { errc <- s.conn.Call(ctx, "initialize", params, &res) }()
	select {
	case err := <-errc:
		if err != nil {
			return err
		}
	case <-s.exited:
		return errors.New("the server exited")
	}
	s.name, s.version, s.caps = res.ServerInfo.Name, res.ServerInfo.Version, res.Capabilities
	if strings.HasPrefix(s.version, "{") {
		// gopls sends its whole build info as JSON; keep the version.
		var bi struct{ Version string }
		if json.Unmarshal([]byte(s.version), &bi) == nil {
			s.version = bi.Version
		}
	}
	return s.conn.Notify("initialized", struct{}{})
}

// Notify handles the server's notifications.
func (s *Server) Notify(method string, params json.RawMessage) {
	switch method {
	case "textDocument/publishDiagnostics":
		var p publishDiagnosticsParams
		if err := json.Unmarshal(params, &p); err != nil {
			s.log.Debug("lsp: bad publishDiagnostics", "server", s.id, "err", err)
			return
		}
		s.publish(p)
	case "window/logMessage", "window/showMessage":
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(params, &p)
		if len(p.Message) > 512 {
			p.Message = p.Message[:512] + "…"
		}
		s.log.Debug("lsp: server message", "server", s.id, "message", p.Message)
	}
}

// Request answers the server's requests. Every one gets an answer, or
// the server may wait for it forever.
func (s *Server) Request(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "workspace/configuration":
		var p struct {
			Items []struct {
				Section string `json:"section"`
			} `json:"items"`
		}
		_ = json.Unmarshal(params, &p)
		l := languages[s.lang]
		out := make([]map[string]any, len(p.Items))
		for i, it := range p.Items {
			out[i] = map[string]any{} // the server's defaults
			if it.Section == l.section && l.settings != nil {
				out[i] = l.settings
			}
		}
		return out, nil
	case "client/registerCapability":
		s.register(params)
		return nil, nil
	case "window/workDoneProgress/create", "client/unregisterCapability", "window/showMessageRequest",
		"workspace/semanticTokens/refresh", "workspace/codeLens/refresh", "workspace/inlayHint/refresh",
		"workspace/inlineValue/refresh", "workspace/diagnostic/refresh", "workspace/foldingRange/refresh":
		return nil, nil
	case "workspace/workspaceFolders":
		return []any{map[string]string{"uri": fileURI(s.rootHost), "name": filepath.Base(s.rootHost)}}, nil
	case "window/showDocument":
		return map[string]bool{"success": false}, nil
	case "workspace/applyEdit":
		return map[string]any{"applied": false, "failureReason": "this client does not apply edits"}, nil
	}
	return nil, &RPCError{Code: codeMethodNotFound, Message: "unsupported method " + method}
}

func (s *Server) publish(p publishDiagnosticsParams) {
	if len(p.Diagnostics) > maxStoredDiags {
		p.Diagnostics = p.Diagnostics[:maxStoredDiags]
	}
	s.diagMu.Lock()
	defer s.diagMu.Unlock()
	s.pubSeq++
	s.pubs[p.URI] = &published{version: p.Version, seq: s.pubSeq, diags: p.Diagnostics}
	close(s.pubCh)
	s.pubCh = make(chan struct{})
}

// running reports whether the server process is alive.
func (s *Server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Describe describes the server.
func (s *Server) Describe() sandboxapi.LSPServer { return s.wire() }

// wire describes the server.
func (s *Server) wire() sandboxapi.LSPServer {
	status := "running"
	if !s.running() {
		status = "exited"
	}
	return sandboxapi.LSPServer{
		ID: s.id, Language: s.lang, Root: s.root, Command: slices.Clone(s.argv), PID: s.cmd.Process.Pid,
		Name: s.name, Version: s.version, Status: status, CreatedAt: s.created.UTC(),
	}
}

// stop shuts the server down: shutdown and exit, then SIGKILL to its
// process group after shutdownGrace; it waits for every goroutine of the
// server. It is idempotent.
func (s *Server) stop(ctx context.Context) {
	s.stopOnce.Do(func() {
		if s.running() {
			sctx, cancel := context.WithTimeout(ctx, shutdownGrace)
			if err := s.conn.Call(sctx, "shutdown", nil, nil); err == nil {
				_ = s.conn.Notify("exit", nil)
			}
			select {
			case <-s.exited:
			case <-sctx.Done():
			}
			cancel()
		}
		// The group too: children the server started (go list, node
		// workers) must not outlive it.
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		s.conn.Close() // waits for request handlers: none registers a watch after
		s.docMu.Lock()
		w := s.watcher
		s.docMu.Unlock()
		if w != nil {
			w.close()
		}
		s.errR.Close()
		<-s.errDone
	})
}

// exitedErr is the error of an operation on a server that has exited.
func (s *Server) exitedErr() error {
	msg := fmt.Sprintf("the %s language server has exited", s.lang)
	if st := s.cmd.ProcessState; st != nil {
		msg += " (" + st.String() + ")"
	}
	if tail := strings.TrimSpace(s.stderr.String()); tail != "" {
		if len(tail) > 1024 {
			tail = "…" + tail[len(tail)-1024:]
		}
		msg += ": " + tail
	}
	return errdefs.Conflictf("%s; delete it and start another", msg)
}

// childEnv is env without the daemon's token.
func childEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "CORRAL_SANDBOX_TOKEN=")
	})
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
