package sandboxd

import (
	"context"
	"net/http"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/sandboxd/lsp"
)

// maxLSPBody bounds an LSP request body: a document's text, JSON-escaped.
const maxLSPBody = 2*lsp.MaxDocument + 64<<10

// lspAPI serves /v1/lsp/*: language servers over the files root. The
// servers belong to the lsp.Manager, which the Server closes on shutdown
// (shutdown and exit, then a kill); operations end when shutdown begins.
//
// Paths are absolute sandbox paths, or relative to the server's root;
// positions are LSP's (zero-based lines, UTF-16 characters). Statuses,
// where the contract leaves them open:
//
//	400  malformed body; an unknown language; a position past the end of
//	     the document; a root that is not a directory
//	403  a path (root or document) that escapes the files root
//	404  an unknown server id; a missing root or document
//	409  the server has exited (detail: its stderr); too many servers
//	413  a document over 16 MiB
//	422  no server for the language in the sandbox; a server that fails
//	     to start; a method the server does not support; an error the
//	     server answered
//	504  the server did not answer within timeout_ms
//
// Diagnostics do not fail on a timeout: they answer with complete=false.
type lspAPI struct {
	m    *lsp.Manager
	life context.Context // ends when shutdown begins
}

func newLSPAPI(s *Server) *lspAPI {
	life, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.stopping
		cancel()
	}()
	return &lspAPI{m: lsp.NewManager(lsp.Options{Root: s.files.root, Logger: s.log}), life: life}
}

func (a *lspAPI) close() { a.m.Close() }

func (a *lspAPI) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(a.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// startServer answers POST /v1/lsp/servers: 201 with the server once it
// has completed the initialize handshake.
func (a *lspAPI) startServer(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.LSPStartRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	srv, err := a.m.Start(ctx, req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusCreated, srv)
	return nil
}

// listServers answers GET /v1/lsp/servers.
func (a *lspAPI) listServers(w http.ResponseWriter, r *http.Request) error {
	httpjson.Write(w, http.StatusOK, sandboxapi.LSPServerList{Servers: a.m.List()})
	return nil
}

// getServer answers GET /v1/lsp/servers/{id}.
func (a *lspAPI) getServer(w http.ResponseWriter, r *http.Request) error {
	s, err := a.m.Server(r.PathValue("id"))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, s.Describe())
	return nil
}

// stopServer answers DELETE /v1/lsp/servers/{id}: 204 once it has exited.
func (a *lspAPI) stopServer(w http.ResponseWriter, r *http.Request) error {
	if err := a.m.Stop(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// diagnostics answers POST /v1/lsp/servers/{id}/diagnostics.
func (a *lspAPI) diagnostics(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.LSPDiagnosticsRequest
	if err := httpjson.Decode(w, r, &req, maxLSPBody); err != nil {
		return err
	}
	s, err := a.m.Server(r.PathValue("id"))
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	out, err := s.Diagnostics(ctx, req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}

// positionRoute makes the handler of a request about a position (or, for
// symbols, a document) that answers with call's result.
func positionRoute[T any](a *lspAPI, call func(*lsp.Server, context.Context, sandboxapi.LSPPositionRequest) (T, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req sandboxapi.LSPPositionRequest
		if err := httpjson.Decode(w, r, &req, maxLSPBody); err != nil {
			return err
		}
		s, err := a.m.Server(r.PathValue("id"))
		if err != nil {
			return err
		}
		ctx, cancel := a.ctx(r)
		defer cancel()
		out, err := call(s, ctx, req)
		if err != nil {
			return err
		}
		httpjson.Write(w, http.StatusOK, out)
		return nil
	}
}

func (a *lspAPI) definition() func(http.ResponseWriter, *http.Request) error {
	return positionRoute(a, (*lsp.Server).Definition)
}

func (a *lspAPI) references() func(http.ResponseWriter, *http.Request) error {
	return positionRoute(a, (*lsp.Server).References)
}

func (a *lspAPI) hover() func(http.ResponseWriter, *http.Request) error {
	return positionRoute(a, (*lsp.Server).Hover)
}

func (a *lspAPI) symbols() func(http.ResponseWriter, *http.Request) error {
	return positionRoute(a, (*lsp.Server).Symbols)
}
