package desktop

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// maxPage bounds the size of a noVNC page read to inject the shim.
const maxPage = 1 << 20

// shim is the script put first in every noVNC page (see the file).
//
//go:embed novnc_shim.js
var shim string

// NoVNCFile is one file of the noVNC web client, ready to serve. Close it.
type NoVNCFile struct {
	Name    string // the path asked for
	ModTime time.Time
	Content io.ReadSeeker
	// Page is true for an HTML page, which carries the shim.
	Page  bool
	close func() error
}

// Close releases the file.
func (f *NoVNCFile) Close() error { return f.close() }

// NoVNC opens a file of the noVNC web client, by its slash-separated path
// under the noVNC directory. Files are confined to that directory: a path
// that would leave it is ErrForbidden, even through a symlink. Pages
// (.html) carry Corral's shim, which lets them load noVNC's files and
// reach the desktop's VNC WebSocket with the access token the page was
// opened with.
func (d *Desktop) NoVNC(name string) (*NoVNCFile, error) {
	root, err := os.OpenRoot(d.opts.NoVNCDir)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrNotFound, err, "noVNC is not installed in this sandbox (the desktop template has it)")
	}
	defer root.Close()
	if !fs.ValidPath(name) || name == "." {
		if strings.Contains("/"+name+"/", "/../") {
			return nil, errdefs.Forbiddenf("the path %q leaves the noVNC directory", name)
		}
		return nil, errdefs.NotFoundf("no noVNC file %q", name)
	}
	f, err := root.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errdefs.NotFoundf("no noVNC file %q", name)
		}
		return nil, errdefs.Wrap(errdefs.ErrForbidden, err, fmt.Sprintf("the noVNC file %q cannot be opened", name))
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, errdefs.NotFoundf("no noVNC file %q", name)
	}
	if path.Ext(name) != ".html" {
		return &NoVNCFile{Name: name, ModTime: fi.ModTime(), Content: f, close: f.Close}, nil
	}
	defer f.Close()
	html, err := io.ReadAll(io.LimitReader(f, maxPage+1))
	if err != nil {
		return nil, fmt.Errorf("desktop: read noVNC page %s: %w", name, err)
	}
	if len(html) > maxPage {
		return nil, errdefs.TooLargef("the noVNC page %q is over %d bytes", name, maxPage)
	}
	mods, err := modules(root.FS())
	if err != nil {
		return nil, fmt.Errorf("desktop: list noVNC modules: %w", err)
	}
	page := injectShim(html, mods, strings.Count(name, "/"))
	return &NoVNCFile{Name: name, ModTime: fi.ModTime(), Content: strings.NewReader(page), Page: true,
		close: func() error { return nil }}, nil
}

// modules lists noVNC's JavaScript files, the ones a page may import:
// everything but the build tools (utils) and tests.
func modules(fsys fs.FS) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, ".", func(p string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && (p == "utils" || p == "tests" || p == "node_modules"):
			return fs.SkipDir
		case e.Type().IsRegular() && path.Ext(p) == ".js":
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

var (
	headTag = regexp.MustCompile(`(?i)<head(\s[^>]*)?>`)
	tag     = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	urlAttr = regexp.MustCompile(`(?i)(\s)(src|href)(\s*=\s*)("[^"]*"|'[^']*')`)
	// absolute matches a URL that is not relative to the page: with a
	// scheme, from the host's root, a fragment.
	absolute = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*:|/|#)`)
)

// injectShim puts the shim first in the page's head and renames its
// relative src and href attributes to data-corral-src and -href, for the
// shim to restore with the token. depth is how many directories below
// noVNC's root the page is.
func injectShim(html []byte, modules []string, depth int) string {
	mods, _ := json.Marshal(modules) // escapes <, > and &: safe in a script
	rootRef := "./"
	if depth > 0 {
		rootRef = strings.Repeat("../", depth)
	}
	ref, _ := json.Marshal(rootRef)
	script := strings.NewReplacer("__MODULES__", string(mods), "__ROOT__", string(ref)).Replace(shim)
	script = "<script>\n" + script + "</script>\n"

	page := tag.ReplaceAllStringFunc(string(html), func(t string) string {
		return urlAttr.ReplaceAllStringFunc(t, func(a string) string {
			m := urlAttr.FindStringSubmatch(a)
			if v := m[4][1 : len(m[4])-1]; v == "" || absolute.MatchString(v) {
				return a
			}
			return m[1] + "data-corral-" + strings.ToLower(m[2]) + m[3] + m[4]
		})
	})
	if loc := headTag.FindStringIndex(page); loc != nil {
		return page[:loc[1]] + "\n" + script + page[loc[1]:]
	}
	return script + page
}
