package lsp

import (
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sandboxd/files"
)

// MaxDocument bounds a document read from disk.
const MaxDocument = 16 << 20

// paths maps the API's sandbox paths to the host paths (and file URIs)
// a language server sees, and back, confined to the files root: a path
// that leaves the root through `..` or a symlink is ErrForbidden, exactly
// as in the files API, whose Root does the checking and the reading.
type paths struct {
	root *files.Root
}

// abs makes p absolute: relative paths are relative to base. It does not
// clean the result, so that the files root still sees (and refuses) a
// `..` that climbs out of it.
func abs(p, base string) string {
	if p != "" && !strings.HasPrefix(p, "/") {
		return strings.TrimSuffix(base, "/") + "/" + p
	}
	return p
}

// dir resolves the sandbox path of a directory: its clean sandbox path
// and its real host path.
func (ps paths) dir(p string) (string, string, error) {
	fi, err := ps.root.Stat(p)
	if err != nil {
		return "", "", err
	}
	host, err := ps.real(p)
	if err != nil {
		return "", "", err
	}
	if fi.Type != "dir" {
		if st, serr := os.Stat(host); serr != nil || !st.IsDir() {
			return "", "", errdefs.Invalidf("%q is not a directory", p)
		}
	}
	return path.Clean(p), host, nil
}

// document resolves a document's sandbox path p (relative to base when
// not absolute) and returns its clean sandbox path and host path, and,
// when read is set, its content read through the root. A document given
// by its text need not exist on disk, but its directory must.
func (ps paths) document(p, base string, read bool) (sp, host, text string, err error) {
	if p == "" {
		return "", "", "", errdefs.Invalidf("path is required")
	}
	sp = abs(p, base)
	if read {
		f, fi, err := ps.root.Open(sp)
		if err != nil {
			return "", "", "", err
		}
		defer f.Close()
		if fi.Size() > MaxDocument {
			return "", "", "", errdefs.TooLargef("%q is %d bytes; documents are limited to %d", sp, fi.Size(), MaxDocument)
		}
		b, err := io.ReadAll(io.LimitReader(f, MaxDocument+1))
		if err != nil {
			return "", "", "", errdefs.Wrap(errdefs.ErrUnprocessable, err, "reading "+sp+" failed")
		}
		if len(b) > MaxDocument {
			return "", "", "", errdefs.TooLargef("%q is over %d bytes", sp, MaxDocument)
		}
		text = string(b)
	} else if fi, err := ps.root.Stat(sp); err == nil && fi.Type == "dir" {
		return "", "", "", errdefs.Invalidf("%q is a directory", sp)
	} else if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return "", "", "", err
	} else if err != nil {
		if _, _, err := ps.dir(path.Dir(sp)); err != nil {
			return "", "", "", err
		}
	}
	host, err = ps.real(sp)
	return path.Clean(sp), host, text, err
}

// real returns the host path of sandbox path p with every symlink
// followed (a missing last component is kept as it is), or ErrForbidden
// when that leaves the root.
func (ps paths) real(p string) (string, error) {
	dir := ps.root.Dir()
	// Not cleaned first: EvalSymlinks applies `..` to the directory
	// reached so far, as the kernel (and the files root) does.
	host := strings.TrimSuffix(dir, "/") + "/" + strings.TrimPrefix(p, "/")
	r, err := filepath.EvalSymlinks(host)
	if errors.Is(err, fs.ErrNotExist) {
		var parent string
		if parent, err = filepath.EvalSymlinks(filepath.Dir(host)); err == nil {
			r = filepath.Join(parent, filepath.Base(host))
		}
	}
	if err != nil {
		return "", errdefs.Wrap(errdefs.ErrNotFound, err, p+": no such file or directory")
	}
	if !within(r, dir) {
		return "", errdefs.Forbiddenf("path %q escapes the root", p)
	}
	return r, nil
}

func within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// sandboxPath turns a file URI from a server into a sandbox path; "" when
// it is not a file under the root.
func (ps paths) sandboxPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	p := filepath.Clean(u.Path)
	dir := ps.root.Dir()
	switch {
	case dir == "/":
		return p
	case p == dir:
		return "/"
	case strings.HasPrefix(p, dir+"/"):
		return p[len(dir):]
	}
	return ""
}

// fileURI is the file URI of host path p.
func fileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: p}).String()
}
