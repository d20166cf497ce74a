package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// DefaultTimeout bounds a request whose body gives none.
	DefaultTimeout = 30 * time.Second
	// MaxTimeout caps timeout_ms.
	MaxTimeout = 10 * time.Minute
	// maxResults bounds the locations and symbols of one answer.
	maxResults = 5000
)

// open makes the server's copy of the document at sandbox path p
// (relative to the server's root when not absolute) current: the text
// given, or the file's content. It returns the document's URI, sandbox
// path and state after the sync.
func (s *Server) open(p string, text *string) (uri, sp string, d document, sent bool, err error) {
	sp, host, disk, err := s.ps.document(p, s.root, text == nil)
	if err != nil {
		return "", "", document{}, false, err
	}
	if text != nil {
		disk = *text
	}
	uri = fileURI(host)
	d, sent, err = s.sync(uri, languages[s.lang].languageID(sp), disk)
	return uri, sp, d, sent, err
}

// sync sends didOpen or didChange (full text, next version) unless the
// server has this text already, and says whether it sent anything.
func (s *Server) sync(uri, languageID, text string) (document, bool, error) {
	if !s.running() {
		return document{}, false, s.exitedErr()
	}
	s.docMu.Lock()
	defer s.docMu.Unlock()
	d := s.docs[uri]
	if d != nil && d.text == text {
		d.used = time.Now()
		return *d, false, nil
	}
	s.diagMu.Lock()
	seq := s.pubSeq
	s.diagMu.Unlock()
	var err error
	if d == nil {
		s.closeOldest()
		d = &document{version: 1}
		err = s.conn.Notify("textDocument/didOpen", didOpenParams{TextDocument: textDocumentItem{
			URI: uri, LanguageID: languageID, Version: d.version, Text: text}})
	} else {
		d.version++
		err = s.conn.Notify("textDocument/didChange", didChangeParams{
			TextDocument:   versionedTextDocumentIdentifier{URI: uri, Version: d.version},
			ContentChanges: []contentChange{{Text: text}},
		})
	}
	if err != nil {
		return document{}, false, s.callErr(err, "sync")
	}
	d.text, d.sentSeq, d.used = text, seq, time.Now()
	s.docs[uri] = d
	return *d, true, nil
}

// closeOldest closes the least recently used document when maxDocs are
// open. docMu is held.
func (s *Server) closeOldest() {
	if len(s.docs) < maxDocs {
		return
	}
	var oldest string
	for uri, d := range s.docs {
		if oldest == "" || d.used.Before(s.docs[oldest].used) {
			oldest = uri
		}
	}
	_ = s.conn.Notify("textDocument/didClose", map[string]any{"textDocument": textDocumentIdentifier{URI: oldest}})
	delete(s.docs, oldest)
}

// closedTime is a channel that is always ready.
var closedTime = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// current reports whether publication p is about version d of its
// document: a versioned publication for that version or a later one, or
// an unversioned one that came after d was sent.
func current(p *published, d document) bool {
	if p == nil {
		return false
	}
	if p.version != nil {
		return *p.version >= d.version
	}
	return p.seq > d.sentSeq
}

// Diagnostics syncs the document and returns the server's diagnostics
// for that content.
//
// A server that offers pull diagnostics (gopls, pyright) is asked for
// them: the answer is for exactly that content, complete. The others
// publish when they like, so this waits until the server has published
// for the document's version, then for its language's settle time more
// (some servers publish a version in stages: syntax, types, analyses;
// each later publication restarts the wait). A timeout is not an error:
// the answer is the latest publication, marked incomplete. A document
// whose content has not changed since the last call, and whose version
// has been published, answers at once.
func (s *Server) Diagnostics(ctx context.Context, req sandboxapi.LSPDiagnosticsRequest) (sandboxapi.LSPDiagnostics, error) {
	timeout, err := timeoutOf(req.TimeoutMS)
	if err != nil {
		return sandboxapi.LSPDiagnostics{}, err
	}
	uri, sp, d, sent, err := s.open(req.Path, req.Text)
	if err != nil {
		return sandboxapi.LSPDiagnostics{}, err
	}
	if s.supports("diagnosticProvider", "") == nil {
		return s.pull(ctx, uri, sp, d, timeout)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var settle <-chan time.Time
	var settleTimer *time.Timer
	defer func() {
		if settleTimer != nil {
			settleTimer.Stop()
		}
	}()
	var lastSeq uint64
	for {
		s.diagMu.Lock()
		p, changed := s.pubs[uri], s.pubCh
		s.diagMu.Unlock()
		complete := current(p, d)
		if complete && !sent && lastSeq == 0 {
			settle = closedTime // nothing changed: the latest publication stands
		} else if complete && p.seq != lastSeq {
			lastSeq = p.seq
			if settleTimer == nil {
				settleTimer = time.NewTimer(languages[s.lang].settle)
			} else {
				settleTimer.Reset(languages[s.lang].settle)
			}
			settle = settleTimer.C
		}
		select {
		case <-changed:
			continue
		case <-settle:
		case <-deadline.C:
		case <-s.exited:
			return sandboxapi.LSPDiagnostics{}, s.exitedErr()
		case <-ctx.Done():
			return sandboxapi.LSPDiagnostics{}, ctx.Err()
		}
		out := sandboxapi.LSPDiagnostics{Path: sp, URI: uri, Version: d.version, Complete: complete, Diagnostics: []sandboxapi.LSPDiagnostic{}}
		if p != nil {
			for _, dg := range p.diags {
				out.Diagnostics = append(out.Diagnostics, dg.wire())
			}
		}
		return out, nil
	}
}

// pull asks the server for the document's diagnostics
// (textDocument/diagnostic): the answer is for the content just synced,
// complete. On a timeout it falls back to the latest publication, marked
// incomplete.
func (s *Server) pull(ctx context.Context, uri, sp string, d document, timeout time.Duration) (sandboxapi.LSPDiagnostics, error) {
	out := sandboxapi.LSPDiagnostics{Path: sp, URI: uri, Version: d.version, Diagnostics: []sandboxapi.LSPDiagnostic{}}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var report struct {
		Kind  string       `json:"kind"`
		Items []diagnostic `json:"items"`
	}
	err := s.conn.Call(cctx, "textDocument/diagnostic", documentSymbolParams{TextDocument: textDocumentIdentifier{URI: uri}}, &report)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		s.diagMu.Lock()
		p := s.pubs[uri]
		s.diagMu.Unlock()
		if p != nil {
			for _, dg := range p.diags {
				out.Diagnostics = append(out.Diagnostics, dg.wire())
			}
		}
		return out, nil
	}
	if err != nil {
		return sandboxapi.LSPDiagnostics{}, s.callErr(err, "textDocument/diagnostic")
	}
	out.Complete = true
	for i, dg := range report.Items {
		if i >= maxStoredDiags {
			break
		}
		out.Diagnostics = append(out.Diagnostics, dg.wire())
	}
	return out, nil
}

// positionCall syncs the document, checks the position against it and
// calls method with params made from the position.
func (s *Server) positionCall(ctx context.Context, req sandboxapi.LSPPositionRequest, method, capability string, params func(textDocumentPositionParams) any) (json.RawMessage, error) {
	if err := s.supports(capability, method); err != nil {
		return nil, err
	}
	timeout, err := timeoutOf(req.TimeoutMS)
	if err != nil {
		return nil, err
	}
	if req.Line < 0 || req.Character < 0 {
		return nil, errdefs.Invalidf("line and character must not be negative")
	}
	uri, sp, d, _, err := s.open(req.Path, req.Text)
	if err != nil {
		return nil, err
	}
	if lines := strings.Count(d.text, "\n") + 1; req.Line >= lines {
		return nil, errdefs.Invalidf("line %d is past the end of %s (%d lines; lines count from 0)", req.Line, sp, lines)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var raw json.RawMessage
	p := textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: uri}, Position: position{Line: req.Line, Character: req.Character}}
	if err := s.conn.Call(cctx, method, params(p), &raw); err != nil {
		return nil, s.callErr(err, method)
	}
	return raw, nil
}

// Definition answers textDocument/definition.
func (s *Server) Definition(ctx context.Context, req sandboxapi.LSPPositionRequest) (sandboxapi.LSPLocations, error) {
	raw, err := s.positionCall(ctx, req, "textDocument/definition", "definitionProvider", func(p textDocumentPositionParams) any { return p })
	if err != nil {
		return sandboxapi.LSPLocations{}, err
	}
	return s.locations(raw)
}

// References answers textDocument/references.
func (s *Server) References(ctx context.Context, req sandboxapi.LSPPositionRequest) (sandboxapi.LSPLocations, error) {
	raw, err := s.positionCall(ctx, req, "textDocument/references", "referencesProvider", func(p textDocumentPositionParams) any {
		rp := referenceParams{textDocumentPositionParams: p}
		rp.Context.IncludeDeclaration = req.IncludeDeclaration
		return rp
	})
	if err != nil {
		return sandboxapi.LSPLocations{}, err
	}
	return s.locations(raw)
}

func (s *Server) locations(raw json.RawMessage) (sandboxapi.LSPLocations, error) {
	ls, err := decodeLocations(raw)
	if err != nil {
		return sandboxapi.LSPLocations{}, fmt.Errorf("lsp: decoding locations: %w", err)
	}
	out := sandboxapi.LSPLocations{Locations: []sandboxapi.LSPLocation{}}
	for _, l := range ls {
		if len(out.Locations) >= maxResults {
			break
		}
		uri, r := l.URI, l.Range
		if l.TargetURI != "" {
			uri, r = l.TargetURI, l.TargetSelectionRange
			if r == nil {
				r = l.TargetRange
			}
		}
		if r == nil {
			continue
		}
		out.Locations = append(out.Locations, sandboxapi.LSPLocation{Path: s.ps.sandboxPath(uri), URI: uri, Range: r.wire()})
	}
	return out, nil
}

// Hover answers textDocument/hover.
func (s *Server) Hover(ctx context.Context, req sandboxapi.LSPPositionRequest) (sandboxapi.LSPHover, error) {
	raw, err := s.positionCall(ctx, req, "textDocument/hover", "hoverProvider", func(p textDocumentPositionParams) any { return p })
	if err != nil {
		return sandboxapi.LSPHover{}, err
	}
	var h hover
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return sandboxapi.LSPHover{}, nil
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return sandboxapi.LSPHover{}, fmt.Errorf("lsp: decoding hover: %w", err)
	}
	out := sandboxapi.LSPHover{}
	out.Contents, out.Kind = hoverText(h.Contents)
	if h.Range != nil {
		r := h.Range.wire()
		out.Range = &r
	}
	return out, nil
}

// Symbols answers textDocument/documentSymbol, flattened.
func (s *Server) Symbols(ctx context.Context, req sandboxapi.LSPPositionRequest) (sandboxapi.LSPSymbols, error) {
	if err := s.supports("documentSymbolProvider", "textDocument/documentSymbol"); err != nil {
		return sandboxapi.LSPSymbols{}, err
	}
	timeout, err := timeoutOf(req.TimeoutMS)
	if err != nil {
		return sandboxapi.LSPSymbols{}, err
	}
	uri, _, _, _, err := s.open(req.Path, req.Text)
	if err != nil {
		return sandboxapi.LSPSymbols{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var syms []documentSymbol
	if err := s.conn.Call(cctx, "textDocument/documentSymbol", documentSymbolParams{TextDocument: textDocumentIdentifier{URI: uri}}, &syms); err != nil {
		return sandboxapi.LSPSymbols{}, s.callErr(err, "textDocument/documentSymbol")
	}
	return sandboxapi.LSPSymbols{Symbols: flattenSymbols(syms, 0, maxResults, []sandboxapi.LSPSymbol{})}, nil
}

// supports checks that the server announced capability.
func (s *Server) supports(capability, method string) error {
	v := strings.TrimSpace(string(s.caps[capability]))
	if v == "" || v == "false" || v == "null" {
		return errdefs.Unprocessablef("the %s language server (%s) does not support %s", s.lang, s.name, method)
	}
	return nil
}

// callErr classes the error of a call to the server.
func (s *Server) callErr(err error, method string) error {
	var re *RPCError
	switch {
	case !s.running():
		return s.exitedErr()
	case errors.As(err, &re):
		return errdefs.Wrap(errdefs.ErrUnprocessable, err, fmt.Sprintf("%s: the language server answered: %s", method, re.Message))
	case errors.Is(err, context.DeadlineExceeded):
		return errdefs.Wrap(errdefs.ErrTimeout, err, method+": the language server did not answer in time")
	case errors.Is(err, context.Canceled):
		return err
	}
	return fmt.Errorf("lsp: %s: %w", method, err)
}

// timeoutOf turns timeout_ms into a duration.
func timeoutOf(ms int) (time.Duration, error) {
	switch {
	case ms == 0:
		return DefaultTimeout, nil
	case ms < 0:
		return 0, errdefs.Invalidf("timeout_ms must not be negative")
	case time.Duration(ms)*time.Millisecond > MaxTimeout:
		return 0, errdefs.Invalidf("timeout_ms must be at most %d", MaxTimeout.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}
