package lsp

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/sandboxd/files"
)

// LSP FileChangeType values.
const (
	fileCreated = 1
	fileChanged = 2
	fileDeleted = 3
)

// maxEventBatch bounds the changes sent in one didChangeWatchedFiles.
const maxEventBatch = 1000

// watcher forwards file changes under a server's root to the server as
// workspace/didChangeWatchedFiles, once the server registers for them,
// so it learns about edits made outside it (the files API, a shell)
// to files it has not opened. Its goroutine runs from start until close.
type watcher struct {
	s *Server

	mu    sync.Mutex
	globs []*regexp.Regexp
	watch *files.Watch
	done  chan struct{}
}

// register handles client/registerCapability: the watched-files
// registration gives the globs and starts the watch.
func (s *Server) register(params json.RawMessage) {
	var p struct {
		Registrations []struct {
			Method          string `json:"method"`
			RegisterOptions struct {
				Watchers []struct {
					GlobPattern json.RawMessage `json:"globPattern"`
				} `json:"watchers"`
			} `json:"registerOptions"`
		} `json:"registrations"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return
	}
	var globs []*regexp.Regexp
	for _, r := range p.Registrations {
		if r.Method != "workspace/didChangeWatchedFiles" {
			continue
		}
		for _, w := range r.RegisterOptions.Watchers {
			if re := globRegexp(w.GlobPattern); re != nil {
				globs = append(globs, re)
			}
		}
	}
	if len(globs) == 0 {
		return
	}
	s.docMu.Lock()
	w := s.watcher
	if w == nil {
		w = &watcher{s: s}
		s.watcher = w
	}
	s.docMu.Unlock()
	w.add(globs)
}

// add adds globs and starts the watch if it is not running.
func (w *watcher) add(globs []*regexp.Regexp) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.globs = append(w.globs, globs...)
	if w.watch != nil || w.done != nil {
		return
	}
	fw, err := w.s.ps.root.Watch(w.s.root, true)
	if err != nil {
		// Too many directories, inotify exhausted: the server still works,
		// it only misses changes to files it has not opened.
		w.s.log.Warn("lsp: cannot watch the workspace", "server", w.s.id, "root", w.s.root, "err", err)
		w.done = make(chan struct{})
		close(w.done)
		return
	}
	w.watch, w.done = fw, make(chan struct{})
	go w.run(fw)
}

func (w *watcher) run(fw *files.Watch) {
	defer close(w.done)
	events := fw.Events()
	for ev := range events {
		var changes []map[string]any
		for {
			if c, ok := w.change(ev); ok {
				changes = append(changes, c)
			}
			if len(changes) >= maxEventBatch {
				break
			}
			var more bool
			select {
			case ev, more = <-events:
			default:
			}
			if !more {
				break
			}
		}
		if len(changes) > 0 {
			_ = w.s.conn.Notify("workspace/didChangeWatchedFiles", map[string]any{"changes": changes})
		}
	}
}

// change turns a file event into an LSP FileEvent, if a glob wants it.
func (w *watcher) change(ev files.Event) (map[string]any, bool) {
	var typ int
	switch ev.Kind {
	case sandboxapi.FSEventCreate:
		typ = fileCreated
	case sandboxapi.FSEventWrite:
		typ = fileChanged
	case sandboxapi.FSEventRemove, sandboxapi.FSEventRename:
		typ = fileDeleted
	default:
		return nil, false
	}
	host := filepath.Join(w.s.ps.root.Dir(), ev.Path)
	w.mu.Lock()
	globs := w.globs
	w.mu.Unlock()
	for _, g := range globs {
		if g.MatchString(host) {
			return map[string]any{"uri": fileURI(host), "type": typ}, true
		}
	}
	return nil, false
}

// close stops the watch and waits for the goroutine.
func (w *watcher) close() {
	w.mu.Lock()
	fw, done := w.watch, w.done
	w.mu.Unlock()
	if fw != nil {
		fw.Close()
	}
	if done != nil {
		<-done
	}
}

// globRegexp compiles an LSP GlobPattern — a pattern string, or a
// RelativePattern {baseUri, pattern} — into a regexp over host paths.
// Globs: `*` and `?` within a path segment, `**` across segments,
// `{a,b}` alternatives, `[...]` classes.
func globRegexp(raw json.RawMessage) *regexp.Regexp {
	var pattern, base string
	if err := json.Unmarshal(raw, &pattern); err != nil {
		var rp struct {
			BaseURI json.RawMessage `json:"baseUri"` // a URI or a WorkspaceFolder
			Pattern string          `json:"pattern"`
		}
		if err := json.Unmarshal(raw, &rp); err != nil {
			return nil
		}
		var b string
		if json.Unmarshal(rp.BaseURI, &b) != nil {
			var f struct {
				URI string `json:"uri"`
			}
			_ = json.Unmarshal(rp.BaseURI, &f)
			b = f.URI
		}
		if u, err := url.Parse(b); err == nil && u.Scheme == "file" {
			base = strings.TrimSuffix(filepath.Clean(u.Path), "/")
		}
		pattern = rp.Pattern
	}
	if pattern == "" {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("^")
	if base != "" {
		sb.WriteString(regexp.QuoteMeta(base) + "/")
	} else if !strings.HasPrefix(pattern, "/") && !strings.HasPrefix(pattern, "**") {
		sb.WriteString("(?:.*/)?")
	}
	inBraces := false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '*' && i+1 < len(pattern) && pattern[i+1] == '*':
			i++
			if i+1 < len(pattern) && pattern[i+1] == '/' {
				i++
				sb.WriteString("(?:.*/)?")
			} else {
				sb.WriteString(".*")
			}
		case c == '*':
			sb.WriteString("[^/]*")
		case c == '?':
			sb.WriteString("[^/]")
		case c == '{':
			inBraces = true
			sb.WriteString("(?:")
		case c == '}' && inBraces:
			inBraces = false
			sb.WriteString(")")
		case c == ',' && inBraces:
			sb.WriteString("|")
		case c == '[':
			j := strings.IndexByte(pattern[i:], ']')
			if j < 0 {
				sb.WriteString(`\[`)
				continue
			}
			class := pattern[i+1 : i+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			sb.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j
		default:
			sb.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	sb.WriteString("$")
	re, err := regexp.Compile(sb.String())
	if err != nil {
		return nil
	}
	return re
}
