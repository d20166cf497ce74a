package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// Language servers (/v1/lsp/*). Paths are absolute sandbox paths or
// relative to the server's root; positions are zero-based lines and
// UTF-16 characters, as in LSP.

func lspPath(id, sub string) string { return "/lsp/servers/" + url.PathEscape(id) + sub }

// StartLanguageServer starts a language server for a workspace root and
// returns it once initialized (POST /v1/lsp/servers). ErrUnprocessable
// when the sandbox has no server for the language.
func (c *Client) StartLanguageServer(ctx context.Context, req sandboxapi.LSPStartRequest) (*sandboxapi.LSPServer, error) {
	var s sandboxapi.LSPServer
	if err := c.call(ctx, http.MethodPost, "/lsp/servers", nil, req, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// LanguageServers lists the language servers (GET /v1/lsp/servers).
func (c *Client) LanguageServers(ctx context.Context) ([]sandboxapi.LSPServer, error) {
	var l sandboxapi.LSPServerList
	if err := c.call(ctx, http.MethodGet, "/lsp/servers", nil, nil, &l); err != nil {
		return nil, err
	}
	return l.Servers, nil
}

// GetLanguageServer describes one server (GET /v1/lsp/servers/{id}).
func (c *Client) GetLanguageServer(ctx context.Context, id string) (*sandboxapi.LSPServer, error) {
	var s sandboxapi.LSPServer
	if err := c.call(ctx, http.MethodGet, lspPath(id, ""), nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// StopLanguageServer shuts a server down (DELETE /v1/lsp/servers/{id}).
func (c *Client) StopLanguageServer(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, lspPath(id, ""), nil, nil, nil)
}

// LSPDiagnostics returns the problems the server finds in a document, the
// file's content or req.Text. Complete false means the server had not
// published for this content within the timeout.
func (c *Client) LSPDiagnostics(ctx context.Context, id string, req sandboxapi.LSPDiagnosticsRequest) (*sandboxapi.LSPDiagnostics, error) {
	var d sandboxapi.LSPDiagnostics
	if err := c.call(ctx, http.MethodPost, lspPath(id, "/diagnostics"), nil, req, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// LSPDefinition finds where the symbol at a position is defined.
func (c *Client) LSPDefinition(ctx context.Context, id string, req sandboxapi.LSPPositionRequest) ([]sandboxapi.LSPLocation, error) {
	return c.lspLocations(ctx, id, "/definition", req)
}

// LSPReferences finds the uses of the symbol at a position.
func (c *Client) LSPReferences(ctx context.Context, id string, req sandboxapi.LSPPositionRequest) ([]sandboxapi.LSPLocation, error) {
	return c.lspLocations(ctx, id, "/references", req)
}

func (c *Client) lspLocations(ctx context.Context, id, sub string, req sandboxapi.LSPPositionRequest) ([]sandboxapi.LSPLocation, error) {
	var l sandboxapi.LSPLocations
	if err := c.call(ctx, http.MethodPost, lspPath(id, sub), nil, req, &l); err != nil {
		return nil, err
	}
	return l.Locations, nil
}

// LSPHover returns the server's description of the symbol at a position.
func (c *Client) LSPHover(ctx context.Context, id string, req sandboxapi.LSPPositionRequest) (*sandboxapi.LSPHover, error) {
	var h sandboxapi.LSPHover
	if err := c.call(ctx, http.MethodPost, lspPath(id, "/hover"), nil, req, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// LSPSymbols lists a document's symbols, flattened with their depth; only
// req.Path (and req.Text) matter.
func (c *Client) LSPSymbols(ctx context.Context, id string, req sandboxapi.LSPPositionRequest) ([]sandboxapi.LSPSymbol, error) {
	var s sandboxapi.LSPSymbols
	if err := c.call(ctx, http.MethodPost, lspPath(id, "/symbols"), nil, req, &s); err != nil {
		return nil, err
	}
	return s.Symbols, nil
}
