// Package webui serves Corral's web UI: the single-page application that
// `make web` builds from web/ (TypeScript, React, xterm.js) into
// static/dist, embedded into the binary with go:embed. corral up mounts it
// at / next to the API (Register).
//
// The UI answers its page (/), its assets (/assets/...) and its
// client-side routes (/login, /jobs/..., /sandboxes/...), which all get
// index.html so deep links and reloads work; the API paths stay the
// API's. Assets have content-hashed names and are cached for a year;
// index.html is revalidated on every load. Everything is sent with a strict
// Content-Security-Policy: scripts only from this origin, no inline
// script, which is what keeps the bearer token the UI holds away from
// injected code.
//
// When the binary was built before the UI (no static/dist/index.html),
// every UI path answers 503 with a page saying how to build it.
//
// A UI is immutable once made; it is safe for concurrent use.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/problem"
)

//go:embed static
var static embed.FS

// Patterns are the ServeMux patterns the UI answers. They name the UI's
// own paths, never a catch-all, so unknown API paths keep their
// problem+json 404 and 405 answers.
var Patterns = []string{
	"GET /{$}",
	"GET /assets/",
	"GET /favicon.svg",
	"GET /login",
	"GET /jobs",
	"GET /jobs/",
	"GET /sandboxes",
	"GET /sandboxes/",
}

// ContentSecurityPolicy is sent with every UI response. Styles may be
// inline (the terminal emulator sizes its cells with a style element);
// scripts may not. frame-src lets the desktop tab show a sandbox's noVNC
// page, which the control plane serves from this origin.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; frame-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// UI is the web UI's handler.
type UI struct {
	files fs.FS // the built assets, index.html at the root; nil if not built
	index *asset

	mu     sync.Mutex
	assets map[string]*asset // by path, made on first request
}

// asset is one file with its validators and, made on first demand, its
// gzipped form.
type asset struct {
	name string
	data []byte
	etag string

	gzOnce sync.Once
	gz     []byte // nil when compressing does not pay
	gzETag string
}

// New returns the UI embedded in the binary.
func New() *UI {
	dist, err := fs.Sub(static, "static/dist")
	if err != nil {
		panic(err) // a constant, valid path
	}
	return NewFS(dist)
}

// NewFS returns a UI serving the built assets in fsys (index.html at its
// root, the rest under assets/). Tests give it their own files.
func NewFS(fsys fs.FS) *UI {
	u := &UI{assets: map[string]*asset{}}
	if b, err := fs.ReadFile(fsys, "index.html"); err == nil {
		u.files = fsys
		u.index = newAsset("index.html", b)
	}
	return u
}

// Built reports whether the binary holds a built UI.
func (u *UI) Built() bool { return u.files != nil }

// Register mounts the UI on mux under Patterns.
func (u *UI) Register(mux *http.ServeMux) {
	for _, p := range Patterns {
		mux.Handle(p, u)
	}
}

// ServeHTTP serves an asset, or index.html for any other UI path.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if u.files == nil {
		if strings.HasPrefix(r.URL.Path, "/assets/") {
			problem.Write(w, r, errdefs.NotFoundf("the web UI is not built into this binary; run `make web` and rebuild"))
			return
		}
		notBuilt(w)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	if strings.HasPrefix(name, "assets/") || name == "favicon.svg" {
		a, err := u.asset(name)
		if err != nil {
			problem.Write(w, r, err)
			return
		}
		if name == "favicon.svg" {
			h.Set("Cache-Control", "public, max-age=86400")
		} else {
			h.Set("Cache-Control", "public, max-age=31536000, immutable") // content-hashed names
		}
		u.serve(w, r, a)
		return
	}
	// The page itself, for every client-side route.
	h.Set("Cache-Control", "no-cache")
	u.serve(w, r, u.index)
}

// asset returns the file at name, loading it on first use.
func (u *UI) asset(name string) (*asset, error) {
	clean := path.Clean(name)
	if clean != name || !fs.ValidPath(name) {
		return nil, errdefs.NotFoundf("no such asset: %s", name)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if a := u.assets[name]; a != nil {
		return a, nil
	}
	b, err := fs.ReadFile(u.files, name)
	if err != nil {
		return nil, errdefs.NotFoundf("no such asset: %s", name)
	}
	a := newAsset(name, b)
	u.assets[name] = a
	return a, nil
}

func newAsset(name string, data []byte) *asset {
	sum := sha256.Sum256(data)
	return &asset{name: name, data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// compressed returns a's gzip form, or nil when it does not pay (small or
// already compressed files).
func (a *asset) compressed() ([]byte, string) {
	a.gzOnce.Do(func() {
		if len(a.data) < 1024 || !compressible(a.name) {
			return
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(a.data)
		if zw.Close() == nil && buf.Len() < len(a.data)*9/10 {
			a.gz = buf.Bytes()
			a.gzETag = strings.TrimSuffix(a.etag, `"`) + `-gz"`
		}
	})
	return a.gz, a.gzETag
}

func compressible(name string) bool {
	switch path.Ext(name) {
	case ".js", ".css", ".html", ".svg", ".json", ".map", ".txt":
		return true
	}
	return false
}

// serve writes a, gzipped when the client takes it; ServeContent answers
// HEAD, Range and If-None-Match.
func (u *UI) serve(w http.ResponseWriter, r *http.Request, a *asset) {
	h := w.Header()
	ctype := mime.TypeByExtension(path.Ext(a.name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h.Set("Content-Type", ctype)
	data, etag := a.data, a.etag
	if gz, gzETag := a.compressed(); gz != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			data, etag = gz, gzETag
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data)) // the ETag validates
}

// acceptsGzip reports whether r's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// notBuilt answers a UI path of a binary built without the UI.
func notBuilt(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, notBuiltPage)
}

const notBuiltPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Corral — web UI not built</title>
<style>body{font:16px/1.55 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1.25rem;color:#22241f;background:#f6f5f2}
code,pre{font-family:ui-monospace,monospace;background:#ebe9e3;border-radius:4px;padding:.1em .35em}pre{padding:.8rem 1rem}
@media (prefers-color-scheme:dark){body{color:#e6e6e0;background:#161816}code,pre{background:#262a26}}</style></head>
<body>
<h1>Corral's web UI is not built into this binary</h1>
<p>The control plane is running and its API works (see <a href="/openapi.json">/openapi.json</a>),
but this <code>corral</code> was built before the web UI's assets were.</p>
<p>In the repository, build the UI and the binary, then restart <code>corral up</code> and reload this page:</p>
<pre>make web     # npm ci and vite build in web/ (needs Node.js 20+ and npm)
make build   # also runs make web
make up      # builds everything and runs the control plane</pre>
<p>The assets go to <code>internal/webui/static/dist</code>, which <code>go build</code> embeds.</p>
</body></html>
`
