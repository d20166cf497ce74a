package files

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Move renames sandbox path from to to (symlinks themselves, not their
// targets) and describes the result. An existing to is ErrConflict unless
// overwrite; even then a non-empty directory is not replaced. Across
// filesystems (EXDEV) the tree is copied, then the source removed.
func (r *Root) Move(from, to string, overwrite bool) (sandboxapi.FileInfo, error) {
	src, err := r.resolve(from, false)
	if err != nil {
		return sandboxapi.FileInfo{}, err
	}
	dst, err := r.resolve(to, false)
	if err != nil {
		return sandboxapi.FileInfo{}, err
	}
	if src == "." || dst == "." {
		return sandboxapi.FileInfo{}, errdefs.Forbiddenf("the root cannot be moved or replaced")
	}
	srcInfo, err := r.root.Lstat(src)
	if err != nil {
		return sandboxapi.FileInfo{}, mapErr(from, err)
	}
	if src == dst {
		return r.describe(clean(to), dst, srcInfo), nil
	}
	if strings.HasPrefix(dst, src+"/") {
		return sandboxapi.FileInfo{}, errdefs.Invalidf("cannot move %s into itself", quote(from))
	}
	dstInfo, err := r.root.Lstat(dst)
	switch {
	case err == nil && !overwrite:
		return sandboxapi.FileInfo{}, errdefs.Conflictf("%s already exists; set overwrite=true to replace it", quote(to))
	case err == nil && dstInfo.IsDir() != srcInfo.IsDir():
		return sandboxapi.FileInfo{}, errdefs.Conflictf("cannot replace %s: one is a directory and the other is not", quote(to))
	}
	err = r.root.Rename(src, dst)
	if errors.Is(err, syscall.EXDEV) {
		err = r.moveAcross(src, dst)
	}
	switch {
	case errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, fs.ErrExist):
		return sandboxapi.FileInfo{}, errdefs.Wrap(errdefs.ErrConflict, err, quote(to)+": a non-empty directory cannot be replaced")
	case err != nil:
		return sandboxapi.FileInfo{}, mapErr(to, err)
	}
	return r.info(to, dst)
}

// moveAcross moves resolved src to dst where rename cannot: it copies the
// tree (files, directories, symlinks; modes kept) beside dst, renames the
// copy into place, then removes src.
func (r *Root) moveAcross(src, dst string) error {
	dir, base := splitName(dst)
	tmp, tmpName, err := r.createTemp(dir, base)
	if err != nil {
		return err
	}
	tmp.Close()
	if err := r.root.Remove(tmpName); err != nil {
		return err
	}
	if err := r.copyTree(src, tmpName); err != nil {
		r.root.RemoveAll(tmpName)
		return err
	}
	if err := r.root.Rename(tmpName, dst); err != nil {
		r.root.RemoveAll(tmpName)
		return err
	}
	return r.root.RemoveAll(src)
}

// copyTree copies resolved src (a file, symlink or directory tree) to the
// new name dst.
func (r *Root) copyTree(src, dst string) error {
	info, err := r.root.Lstat(src)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		dir, base := splitName(src)
		parent, err := r.root.OpenRoot(dir)
		if err != nil {
			return err
		}
		defer parent.Close()
		return r.copyEntry(entry{rel: "", dir: parent, name: base, info: info}, dst)
	}
	if err := r.root.Mkdir(dst, info.Mode().Perm()|0o700); err != nil {
		return err
	}
	sub, err := r.root.OpenRoot(src)
	if err != nil {
		return err
	}
	defer sub.Close()
	err = walk(context.Background(), sub, "", func(e entry) error {
		return r.copyEntry(e, dst+"/"+e.rel)
	})
	if err != nil {
		return err
	}
	return r.root.Chmod(dst, info.Mode().Perm())
}

// copyEntry copies one walked entry to resolved name to (not recursing).
func (r *Root) copyEntry(e entry, to string) error {
	switch e.info.Mode().Type() {
	case fs.ModeDir:
		return r.root.Mkdir(to, e.info.Mode().Perm()|0o700)
	case fs.ModeSymlink:
		target, err := e.dir.Readlink(e.name)
		if err != nil {
			return err
		}
		return r.root.Symlink(target, to)
	case 0:
		in, err := e.dir.OpenFile(e.name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := r.root.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil { // copy_file_range where possible
			out.Close()
			return err
		}
		return out.Close()
	}
	return nil // sockets, devices, FIFOs are not carried across
}
