package sandboxapi

import "time"

// Languages of POST /v1/lsp/servers.
const (
	LanguageGo         = "go"
	LanguagePython     = "python"
	LanguageTypeScript = "typescript"
)

// LSPStartRequest is the body of POST /v1/lsp/servers: start a language
// server for Language with the workspace Root, an absolute sandbox path
// to a directory.
type LSPStartRequest struct {
	Language string `json:"language"`
	Root     string `json:"root"`
}

// LSPServer describes a running (or exited) language server. Command is
// the command line it runs; Name and Version are what the server said
// about itself.
type LSPServer struct {
	ID        string    `json:"id"`
	Language  string    `json:"language"`
	Root      string    `json:"root"`
	Command   []string  `json:"command"`
	PID       int       `json:"pid,omitempty"`
	Name      string    `json:"name,omitempty"`
	Version   string    `json:"version,omitempty"`
	Status    string    `json:"status"` // "running" or "exited"
	CreatedAt time.Time `json:"created_at"`
}

// LSPServerList is the body of GET /v1/lsp/servers.
type LSPServerList struct {
	Servers []LSPServer `json:"servers"`
}

// LSPPosition is a position in a document as LSP counts it: zero-based
// line, and character in UTF-16 code units.
type LSPPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// LSPRange is a half-open range of positions.
type LSPRange struct {
	Start LSPPosition `json:"start"`
	End   LSPPosition `json:"end"`
}

// LSPDiagnosticsRequest is the body of POST /v1/lsp/servers/{id}/diagnostics.
// Path is the document: an absolute sandbox path, or one relative to the
// server's root. Text, when set, is the document's content to check (it
// need not be saved); otherwise the file is read from disk. TimeoutMS
// bounds the wait for the server (default 30000).
type LSPDiagnosticsRequest struct {
	Path      string  `json:"path"`
	Text      *string `json:"text,omitempty"`
	TimeoutMS int     `json:"timeout_ms,omitempty"`
}

// LSPDiagnostic is one problem a server reports. Severity is "error",
// "warning", "information" or "hint".
type LSPDiagnostic struct {
	Range    LSPRange `json:"range"`
	Severity string   `json:"severity,omitempty"`
	Code     string   `json:"code,omitempty"`
	Source   string   `json:"source,omitempty"`
	Message  string   `json:"message"`
}

// LSPDiagnostics answers a diagnostics request. Version is the document
// version the server was given. Complete is true when the server has
// published diagnostics for that version (then an empty list means the
// file is clean); false when it had not within the timeout, in which
// case Diagnostics are the latest it published, possibly for older
// content, or none.
type LSPDiagnostics struct {
	Path        string          `json:"path"`
	URI         string          `json:"uri"`
	Version     int             `json:"version"`
	Complete    bool            `json:"complete"`
	Diagnostics []LSPDiagnostic `json:"diagnostics"`
}

// LSPPositionRequest is the body of definition, references and hover
// (POST /v1/lsp/servers/{id}/{method}), and, without a position, of
// symbols. Path and Text are as in LSPDiagnosticsRequest.
// IncludeDeclaration applies to references.
type LSPPositionRequest struct {
	Path               string  `json:"path"`
	Line               int     `json:"line"`
	Character          int     `json:"character"`
	Text               *string `json:"text,omitempty"`
	IncludeDeclaration bool    `json:"include_declaration,omitempty"`
	TimeoutMS          int     `json:"timeout_ms,omitempty"`
}

// LSPLocation is a range in a document. Path is the sandbox path when
// the document lies under the daemon's root (empty otherwise, for
// instance for the Go standard library outside it); URI is always set.
type LSPLocation struct {
	Path  string   `json:"path,omitempty"`
	URI   string   `json:"uri"`
	Range LSPRange `json:"range"`
}

// LSPLocations answers definition and references.
type LSPLocations struct {
	Locations []LSPLocation `json:"locations"`
}

// LSPHover answers hover: Contents is the text the server gave, in Kind
// ("markdown" or "plaintext"); empty when there is nothing to say.
type LSPHover struct {
	Contents string    `json:"contents"`
	Kind     string    `json:"kind,omitempty"`
	Range    *LSPRange `json:"range,omitempty"`
}

// LSPSymbol is one symbol of a document, flattened in document order:
// Depth is its nesting level (0 for top-level symbols). Kind is the LSP
// symbol kind's name in lower case ("function", "struct", "method", ...).
type LSPSymbol struct {
	Name           string   `json:"name"`
	Kind           string   `json:"kind"`
	Detail         string   `json:"detail,omitempty"`
	Depth          int      `json:"depth"`
	Range          LSPRange `json:"range"`
	SelectionRange LSPRange `json:"selection_range"`
}

// LSPSymbols answers symbols (textDocument/documentSymbol).
type LSPSymbols struct {
	Symbols []LSPSymbol `json:"symbols"`
}
