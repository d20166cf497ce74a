package lsp

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// The subset of the Language Server Protocol (3.17) this client speaks.

type position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type lspRange struct {
	Start position `json:"start"`
	End   position `json:"end"`
}

func (r lspRange) wire() sandboxapi.LSPRange {
	return sandboxapi.LSPRange{
		Start: sandboxapi.LSPPosition{Line: r.Start.Line, Character: r.Start.Character},
		End:   sandboxapi.LSPPosition{Line: r.End.Line, Character: r.End.Character},
	}
}

type textDocumentIdentifier struct {
	URI string `json:"uri"`
}

type textDocumentItem struct {
	URI        string `json:"uri"`
	LanguageID string `json:"languageId"`
	Version    int    `json:"version"`
	Text       string `json:"text"`
}

type versionedTextDocumentIdentifier struct {
	URI     string `json:"uri"`
	Version int    `json:"version"`
}

type didOpenParams struct {
	TextDocument textDocumentItem `json:"textDocument"`
}

type contentChange struct {
	Text string `json:"text"` // the whole document: full sync
}

type didChangeParams struct {
	TextDocument   versionedTextDocumentIdentifier `json:"textDocument"`
	ContentChanges []contentChange                 `json:"contentChanges"`
}

type textDocumentPositionParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
	Position     position               `json:"position"`
}

type referenceParams struct {
	textDocumentPositionParams
	Context struct {
		IncludeDeclaration bool `json:"includeDeclaration"`
	} `json:"context"`
}

type documentSymbolParams struct {
	TextDocument textDocumentIdentifier `json:"textDocument"`
}

type diagnostic struct {
	Range    lspRange        `json:"range"`
	Severity int             `json:"severity,omitempty"`
	Code     json.RawMessage `json:"code,omitempty"` // integer or string
	Source   string          `json:"source,omitempty"`
	Message  string          `json:"message"`
}

var severities = [...]string{1: "error", 2: "warning", 3: "information", 4: "hint"}

func (d diagnostic) wire() sandboxapi.LSPDiagnostic {
	out := sandboxapi.LSPDiagnostic{Range: d.Range.wire(), Source: d.Source, Message: d.Message}
	if d.Severity > 0 && d.Severity < len(severities) {
		out.Severity = severities[d.Severity]
	}
	if len(d.Code) > 0 && string(d.Code) != "null" {
		var s string
		if json.Unmarshal(d.Code, &s) == nil {
			out.Code = s
		} else {
			out.Code = string(d.Code)
		}
	}
	return out
}

type publishDiagnosticsParams struct {
	URI         string       `json:"uri"`
	Version     *int         `json:"version,omitempty"`
	Diagnostics []diagnostic `json:"diagnostics"`
}

// location is a Location or a LocationLink: definition may answer with
// either.
type location struct {
	URI                  string    `json:"uri"`
	Range                *lspRange `json:"range"`
	TargetURI            string    `json:"targetUri"`
	TargetRange          *lspRange `json:"targetRange"`
	TargetSelectionRange *lspRange `json:"targetSelectionRange"`
}

// decodeLocations reads Location | Location[] | LocationLink[] | null.
func decodeLocations(raw json.RawMessage) ([]location, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	if strings.HasPrefix(s, "{") {
		var l location
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, err
		}
		return []location{l}, nil
	}
	var ls []location
	err := json.Unmarshal(raw, &ls)
	return ls, err
}

type hover struct {
	Contents json.RawMessage `json:"contents"`
	Range    *lspRange       `json:"range,omitempty"`
}

// hoverText flattens hover contents (MarkupContent, MarkedString or
// MarkedString[]) into text and its kind.
func hoverText(raw json.RawMessage) (text, kind string) {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "" || s == "null":
		return "", ""
	case strings.HasPrefix(s, `"`):
		_ = json.Unmarshal(raw, &text)
		return text, "markdown"
	case strings.HasPrefix(s, "["):
		var parts []json.RawMessage
		_ = json.Unmarshal(raw, &parts)
		var out []string
		for _, p := range parts {
			if t, _ := hoverText(p); t != "" {
				out = append(out, t)
			}
		}
		return strings.Join(out, "\n\n"), "markdown"
	}
	var mc struct {
		Kind     string `json:"kind"`
		Value    string `json:"value"`
		Language string `json:"language"` // a MarkedString {language, value}
	}
	_ = json.Unmarshal(raw, &mc)
	if mc.Language != "" {
		return "```" + mc.Language + "\n" + mc.Value + "\n```", "markdown"
	}
	if mc.Kind == "" {
		mc.Kind = "plaintext"
	}
	return mc.Value, mc.Kind
}

// documentSymbol is a DocumentSymbol or a SymbolInformation: servers
// answer documentSymbol with either kind of list.
type documentSymbol struct {
	Name           string           `json:"name"`
	Detail         string           `json:"detail,omitempty"`
	Kind           int              `json:"kind"`
	Range          *lspRange        `json:"range"`
	SelectionRange *lspRange        `json:"selectionRange"`
	Children       []documentSymbol `json:"children"`
	Location       *location        `json:"location"`      // SymbolInformation
	ContainerName  string           `json:"containerName"` // SymbolInformation
}

var symbolKinds = [...]string{
	1: "file", "module", "namespace", "package", "class", "method", "property", "field",
	"constructor", "enum", "interface", "function", "variable", "constant", "string",
	"number", "boolean", "array", "object", "key", "null", "enum_member", "struct",
	"event", "operator", "type_parameter",
}

func symbolKind(k int) string {
	if k > 0 && k < len(symbolKinds) {
		return symbolKinds[k]
	}
	return strconv.Itoa(k)
}

// flattenSymbols lists symbols depth-first, at most max of them.
func flattenSymbols(syms []documentSymbol, depth, max int, out []sandboxapi.LSPSymbol) []sandboxapi.LSPSymbol {
	for _, s := range syms {
		if len(out) >= max {
			return out
		}
		w := sandboxapi.LSPSymbol{Name: s.Name, Kind: symbolKind(s.Kind), Detail: s.Detail, Depth: depth}
		switch {
		case s.Range != nil:
			w.Range = s.Range.wire()
			w.SelectionRange = w.Range
			if s.SelectionRange != nil {
				w.SelectionRange = s.SelectionRange.wire()
			}
		case s.Location != nil && s.Location.Range != nil:
			w.Range = s.Location.Range.wire()
			w.SelectionRange = w.Range
			if s.ContainerName != "" {
				w.Detail = s.ContainerName
			}
		}
		out = append(out, w)
		out = flattenSymbols(s.Children, depth+1, max, out)
	}
	return out
}
