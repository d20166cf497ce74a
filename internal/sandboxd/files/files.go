// Package files is the confined filesystem behind sandboxd's files API
// (DESIGN.md §2). A Root is one directory tree; every operation takes an
// absolute sandbox path ("/workspace/a.txt"), resolves it under the root and
// acts through an os.Root, so neither `..` nor a symlink can reach outside.
//
// Confinement has two layers. resolve walks the path itself, following
// symlinks the way the kernel would for a process that sees the same mount
// namespace (a relative target is relative to the link's directory; an
// absolute target is a host path, allowed only when it lies inside the
// root), and refuses anything that leaves the root with ErrForbidden. The
// symlink-free name it produces is then used with os.Root, which refuses on
// its own any escape a concurrent change could introduce between the two.
//
// Errors are errdefs classes with client-safe messages that name sandbox
// paths, never host paths. Nothing here fsyncs: writes are atomic (temporary
// file + rename) but not durable across a power loss, which is the right
// trade for a sandbox whose disk is itself disposable.
package files

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// Root is a confined directory tree. Its methods are safe for concurrent use.
type Root struct {
	root *os.Root
	// dir is the root's absolute host path with symlinks evaluated; it
	// decides whether an absolute symlink target lies inside the root and
	// turns watch events back into sandbox paths.
	dir string
}

// Open opens dir as a Root. dir must be an existing directory.
func Open(dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("files: root %q: %w", dir, err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("files: root %q: %w", dir, err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("files: root %q: %w", dir, err)
	}
	return &Root{root: r, dir: abs}, nil
}

// Close releases the root's directory handle.
func (r *Root) Close() error { return r.root.Close() }

// Dir returns the root's host path.
func (r *Root) Dir() string { return r.dir }

// Stat describes the path p without following a symlink in its last
// component (lstat), so a symlink is reported as one, with its target.
func (r *Root) Stat(p string) (sandboxapi.FileInfo, error) {
	name, err := r.resolve(p, false)
	if err != nil {
		return sandboxapi.FileInfo{}, err
	}
	return r.info(p, name)
}

// info lstats the resolved name and describes it under sandbox path p.
func (r *Root) info(p, name string) (sandboxapi.FileInfo, error) {
	fi, err := r.root.Lstat(name)
	if err != nil {
		return sandboxapi.FileInfo{}, mapErr(p, err)
	}
	return r.describe(clean(p), name, fi), nil
}

// describe converts fi (of resolved name) into the wire FileInfo at
// sandbox path p, reading a symlink's target.
func (r *Root) describe(p, name string, fi fs.FileInfo) sandboxapi.FileInfo {
	out := sandboxapi.FileInfo{
		Path:  p,
		Name:  path.Base(p),
		Type:  fileType(fi.Mode()),
		Size:  fi.Size(),
		Mode:  FormatMode(fi.Mode()),
		MTime: fi.ModTime().UTC(),
	}
	if out.Type == sandboxapi.FileTypeSymlink {
		if t, err := r.root.Readlink(name); err == nil {
			out.Target = t
		}
	}
	return out
}

func fileType(m fs.FileMode) string {
	switch m.Type() {
	case 0:
		return sandboxapi.FileTypeFile
	case fs.ModeDir:
		return sandboxapi.FileTypeDir
	case fs.ModeSymlink:
		return sandboxapi.FileTypeSymlink
	}
	return sandboxapi.FileTypeOther
}

// FormatMode renders m's permission bits, with setuid, setgid and sticky,
// as four octal digits ("0644", "1777").
func FormatMode(m fs.FileMode) string {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return fmt.Sprintf("%04o", v)
}

// clean returns the lexical form of sandbox path p used in responses.
// It is a label only; resolve decides what p names.
func clean(p string) string { return path.Clean("/" + p) }

// join returns the sandbox path of child under dir.
func join(dir, child string) string { return path.Join(dir, child) }
