package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/llm"
)

// LSP asks the sandbox's language servers (sandboxd /v1/lsp/*) about
// code: diagnostics (compile errors), definition, references, hover and
// document symbols. A server per language starts on first use, rooted
// at the workspace.
type LSP struct {
	env *Env

	mu      sync.Mutex
	servers map[string]string // language → server id
}

// NewLSP returns the lsp tool of env.
func NewLSP(env *Env) *LSP { return &LSP{env: env, servers: map[string]string{}} }

// Spec implements Tool.
func (l *LSP) Spec() llm.Tool {
	return llm.Tool{Name: "lsp", Description: "Code intelligence from a language server (Go: gopls; Python: pylsp; " +
		"TypeScript/JavaScript: typescript-language-server, where installed). Actions: diagnostics (errors and warnings of path), " +
		"definition, references, hover (at line and character, both 1-based), symbols (the outline of path).",
		Schema: json.RawMessage(`{"type":"object","properties":{
"action":{"type":"string","enum":["diagnostics","definition","references","hover","symbols"]},
"path":{"type":"string","minLength":1},
"line":{"type":"integer","minimum":1},
"character":{"type":"integer","minimum":1}},
"required":["action","path"],"additionalProperties":false,
"allOf":[{"if":{"properties":{"action":{"enum":["definition","references","hover"]}}},"then":{"required":["line","character"]}}]}`)}
}

// languageOf names the language server for a file.
func languageOf(p string) string {
	switch strings.ToLower(path.Ext(p)) {
	case ".go":
		return sandboxapi.LanguageGo
	case ".py":
		return sandboxapi.LanguagePython
	case ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs":
		return sandboxapi.LanguageTypeScript
	}
	return ""
}

// Run implements Tool.
func (l *LSP) Run(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Action    string `json:"action"`
		Path      string `json:"path"`
		Line      int    `json:"line"`
		Character int    `json:"character"`
	}
	if err := decode(input, &in); err != nil {
		return Result{}, err
	}
	p := abs(l.env.Workdir, in.Path)
	lang := languageOf(p)
	if lang == "" {
		return Errorf("no language server for %s (Go, Python and TypeScript/JavaScript files have one)", path.Base(p)), nil
	}
	id, err := l.server(ctx, lang)
	if err != nil {
		return requestError(err, "starting the "+lang+" language server")
	}
	cl := l.env.Sandbox
	pos := sandboxapi.LSPPositionRequest{Path: p, Line: in.Line - 1, Character: in.Character - 1}
	switch in.Action {
	case "diagnostics":
		d, err := cl.LSPDiagnostics(ctx, id, sandboxapi.LSPDiagnosticsRequest{Path: p})
		if err != nil {
			return requestError(err, "diagnostics")
		}
		if len(d.Diagnostics) == 0 {
			return Result{Output: "no problems reported in " + p}, nil
		}
		var b strings.Builder
		for _, g := range d.Diagnostics {
			fmt.Fprintf(&b, "%s:%d:%d: %s: %s\n", p, g.Range.Start.Line+1, g.Range.Start.Character+1, g.Severity, g.Message)
		}
		return Result{Output: b.String()}, nil
	case "definition", "references":
		var locs []sandboxapi.LSPLocation
		if in.Action == "definition" {
			locs, err = cl.LSPDefinition(ctx, id, pos)
		} else {
			pos.IncludeDeclaration = true
			locs, err = cl.LSPReferences(ctx, id, pos)
		}
		if err != nil {
			return requestError(err, in.Action)
		}
		if len(locs) == 0 {
			return Result{Output: "nothing found"}, nil
		}
		var b strings.Builder
		for _, loc := range locs {
			where := loc.Path
			if where == "" {
				where = loc.URI
			}
			fmt.Fprintf(&b, "%s:%d:%d\n", where, loc.Range.Start.Line+1, loc.Range.Start.Character+1)
		}
		return Result{Output: b.String()}, nil
	case "hover":
		h, err := cl.LSPHover(ctx, id, pos)
		if err != nil {
			return requestError(err, "hover")
		}
		if h.Contents == "" {
			return Result{Output: "nothing to say about that position"}, nil
		}
		return Result{Output: h.Contents}, nil
	case "symbols":
		syms, err := cl.LSPSymbols(ctx, id, sandboxapi.LSPPositionRequest{Path: p})
		if err != nil {
			return requestError(err, "symbols")
		}
		var b strings.Builder
		for _, s := range syms {
			fmt.Fprintf(&b, "%s%s %s (line %d)\n", strings.Repeat("  ", s.Depth), s.Kind, s.Name, s.SelectionRange.Start.Line+1)
		}
		return Result{Output: b.String()}, nil
	}
	return Errorf("unknown action %q", in.Action), nil
}

// server returns the id of lang's server, starting it once.
func (l *LSP) server(ctx context.Context, lang string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id, ok := l.servers[lang]; ok {
		if s, err := l.env.Sandbox.GetLanguageServer(ctx, id); err == nil && s.Status == "running" {
			return id, nil
		}
	}
	s, err := l.env.Sandbox.StartLanguageServer(ctx, sandboxapi.LSPStartRequest{Language: lang, Root: l.env.Workdir})
	if err != nil {
		return "", err
	}
	l.servers[lang] = s.ID
	return s.ID, nil
}
