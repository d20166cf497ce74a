package files

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Extract unpacks a tar or gzip-compressed tar read from src into the
// directory at sandbox path p, creating it (and its parents) if missing.
//
// Nothing is written outside p: every write goes through an os.Root opened
// on p, so even a symlink planted earlier cannot redirect one. Beyond that,
// entries are checked as they come: a name that is absolute or climbs out
// of p with `..`, a symlink whose target is absolute or leads out of p
// (lexically or through symlinks already there), and a hard link to a name
// outside p are ErrForbidden; a hard link to something other than a
// regular file already extracted, and a malformed archive, are ErrInvalid.
// Extraction stops at the first refused entry; the entries before it stay.
// Once all entries are in, every symlink is checked again, since a later
// entry can make an earlier link's path lead out; such links are removed
// and the result is ErrForbidden. An existing file is
// replaced (unlinked, then created, so a hard link elsewhere is untouched);
// an existing directory is merged into. Modes (permission bits only; a
// directory's owner always keeps rwx) and modification times are kept;
// owners are not.
func (r *Root) Extract(ctx context.Context, p string, src io.Reader) (sandboxapi.ArchiveResult, error) {
	var res sandboxapi.ArchiveResult
	name, err := r.resolve(p, true)
	if err != nil {
		return res, err
	}
	if fi, err := r.root.Lstat(name); err == nil && !fi.IsDir() {
		return res, errdefs.Conflictf("%s is not a directory", quote(p))
	}
	if err := r.mkdirParents(p, name); err != nil {
		return res, err
	}
	dst, err := r.root.OpenRoot(name)
	if err != nil {
		return res, mapErr(p, err)
	}
	defer dst.Close()

	br := bufio.NewReaderSize(src, copyBufSize)
	magic, _ := br.Peek(4)
	var in io.Reader = br
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		gz, err := gzip.NewReader(br)
		if err != nil {
			return res, errdefs.Wrap(errdefs.ErrInvalid, err, "malformed gzip stream")
		}
		defer gz.Close()
		in = gz
	case bytes.HasPrefix(magic, []byte("PK\x03\x04")):
		return res, errdefs.Invalidf("zip archives cannot be uploaded; send tar or tar.gz")
	}
	x := &extractor{dst: dst, p: clean(p)}
	tr := tar.NewReader(in)
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, errdefs.Wrap(errdefs.ErrInvalid, err, "malformed archive")
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // metadata (git archive writes one), not an entry
		}
		wrote, err := x.entry(h, tr)
		if err != nil {
			return res, err
		}
		if wrote {
			res.Entries++
		} else {
			res.Skipped++
		}
	}
	return res, x.finish()
}

// extractor writes entries into dst, the destination directory.
type extractor struct {
	dst   *os.Root
	p     string // dst's sandbox path, for messages
	dirs  []dirMeta
	links []symlinkEntry
}

// symlinkEntry is a symlink the archive created.
type symlinkEntry struct{ name, entryName, target string }

// dirMeta is a directory's mode and mtime, applied once its contents are
// written (writing into a directory changes its mtime; a read-only mode
// would stop the writes).
type dirMeta struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
}

// entry extracts one entry; wrote is false for a skipped type.
func (x *extractor) entry(h *tar.Header, body io.Reader) (wrote bool, err error) {
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeCont, tar.TypeGNUSparse: // the reader expands sparse files
		h.Typeflag = tar.TypeReg
	case tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
	default:
		return false, nil // devices, FIFOs
	}
	name, err := x.entryName(h.Name)
	if err != nil {
		return false, err
	}
	if name == "." {
		if h.Typeflag != tar.TypeDir {
			return false, errdefs.Invalidf("archive entry %q has no name", h.Name)
		}
		return true, nil // the destination itself
	}
	if dir, _ := splitName(name); dir != "." {
		if err := x.dst.MkdirAll(dir, dirMode); err != nil {
			return false, x.mapErr(h.Name, err)
		}
	}
	mode := fs.FileMode(h.Mode) & fs.ModePerm
	switch h.Typeflag {
	case tar.TypeDir:
		err = x.mkdir(name)
		// The owner keeps full access, so the tree stays manageable.
		x.dirs = append(x.dirs, dirMeta{name, mode | 0o700, h.ModTime})
	case tar.TypeReg:
		err = x.file(name, h.Name, mode, h.ModTime, body)
	case tar.TypeSymlink:
		err = x.symlink(name, h.Name, h.Linkname)
	case tar.TypeLink:
		err = x.link(name, h.Name, h.Linkname)
	}
	if err != nil {
		return false, x.mapErr(h.Name, err)
	}
	return true, nil
}

// entryName validates an entry name and returns it cleaned, relative to
// dst ("." for dst itself).
func (x *extractor) entryName(n string) (string, error) {
	switch {
	case strings.IndexByte(n, 0) >= 0:
		return "", errdefs.Invalidf("archive entry %q contains a NUL byte", n)
	case strings.HasPrefix(n, "/"):
		return "", errdefs.Forbiddenf("archive entry %q is absolute", n)
	}
	c := path.Clean(n)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", errdefs.Forbiddenf("archive entry %q escapes %s", n, quote(x.p))
	}
	return c, nil
}

func (x *extractor) mkdir(name string) error {
	fi, err := x.dst.Lstat(name)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		if err := x.dst.Remove(name); err != nil {
			return err
		}
	}
	return x.dst.Mkdir(name, dirMode)
}

// clear unlinks whatever non-directory is at name, so the next create does
// not write through a symlink or into another hard link's inode.
func (x *extractor) clear(name, entryName string) error {
	fi, err := x.dst.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return errdefs.Conflictf("archive entry %q would replace a directory", entryName)
	}
	return x.dst.Remove(name)
}

func (x *extractor) file(name, entryName string, mode fs.FileMode, mtime time.Time, body io.Reader) error {
	if err := x.clear(name, entryName); err != nil {
		return err
	}
	// O_EXCL: never follow a symlink that appeared at name meanwhile.
	f, err := x.dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, rerr, werr := copyBuffered(f, body)
	if rerr != nil {
		f.Close()
		return errdefs.Wrap(errdefs.ErrInvalid, rerr, "malformed archive")
	}
	if werr == nil {
		werr = f.Chmod(mode)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	if !mtime.IsZero() {
		x.dst.Chtimes(name, mtime, mtime)
	}
	return nil
}

func (x *extractor) symlink(name, entryName, target string) error {
	switch {
	case target == "" || strings.IndexByte(target, 0) >= 0:
		return errdefs.Invalidf("archive symlink %q has an invalid target", entryName)
	case strings.HasPrefix(target, "/"):
		return errdefs.Forbiddenf("archive symlink %q has an absolute target %q", entryName, target)
	}
	if x.escapes(name, target) {
		return errdefs.Forbiddenf("archive symlink %q points outside %s", entryName, quote(x.p))
	}
	if err := x.clear(name, entryName); err != nil {
		return err
	}
	if err := x.dst.Symlink(target, name); err != nil {
		return err
	}
	x.links = append(x.links, symlinkEntry{name, entryName, target})
	return nil
}

// escapes reports whether symlink target, placed at name, leads out of
// dst: lexically, or through symlinks already in dst.
func (x *extractor) escapes(name, target string) bool {
	dir, _ := splitName(name)
	if t := path.Join(dir, target); t == ".." || strings.HasPrefix(t, "../") {
		return true
	}
	_, err := resolveIn(x.dst, "/"+dir+"/"+target, true, nil)
	return errors.Is(err, errdefs.ErrForbidden) // a loop or a missing target is no escape
}

func (x *extractor) link(name, entryName, target string) error {
	old, err := x.entryName(target)
	if err != nil {
		return errdefs.Forbiddenf("archive hard link %q points outside %s", entryName, quote(x.p))
	}
	fi, err := x.dst.Lstat(old)
	if err != nil || !fi.Mode().IsRegular() {
		if isEscape(err) {
			return err
		}
		return errdefs.Invalidf("archive hard link %q must name a regular file extracted before it", entryName)
	}
	if err := x.clear(name, entryName); err != nil {
		return err
	}
	return x.dst.Link(old, name)
}

// finish checks the symlinks again, now that every entry is in place (a
// later entry can turn an earlier symlink's path into an escape), removing
// any that leads out of dst; then it applies the directories' modes and
// times, deepest first.
func (x *extractor) finish() error {
	var bad *symlinkEntry
	for i, l := range x.links {
		if t, err := x.dst.Readlink(l.name); err != nil || t != l.target {
			continue // replaced by a later entry
		}
		if x.escapes(l.name, l.target) {
			x.dst.Remove(l.name)
			if bad == nil {
				bad = &x.links[i]
			}
		}
	}
	if bad != nil {
		return errdefs.Forbiddenf("archive symlink %q points outside %s", bad.entryName, quote(x.p))
	}
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		if err := x.dst.Chmod(d.name, d.mode); err != nil {
			return x.mapErr(d.name, err)
		}
		if !d.mtime.IsZero() {
			x.dst.Chtimes(d.name, d.mtime, d.mtime)
		}
	}
	return nil
}

// mapErr describes an error about archive entry n as one about its
// sandbox path.
func (x *extractor) mapErr(n string, err error) error {
	if isEscape(err) {
		return errdefs.Wrap(errdefs.ErrForbidden, err, fmt.Sprintf("archive entry %q leads outside %s", n, quote(x.p)))
	}
	return mapErr(join(x.p, n), err)
}
