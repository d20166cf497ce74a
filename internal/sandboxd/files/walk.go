package files

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"syscall"
)

// entry is one file met by walk.
type entry struct {
	rel  string      // slash-separated path relative to the walk's start
	dir  *os.Root    // the directory holding it, valid during the callback
	name string      // its name in dir
	info fs.FileInfo // lstat: a symlink is reported, never followed
}

// errSkipDir, returned by a walk callback for a directory, skips its
// contents.
var errSkipDir = errors.New("skip this directory")

// walk visits the tree below dir depth-first, entries of a directory in
// name order, calling fn before descending into each directory. Symlinks
// are never followed, and every directory is entered through an os.Root
// opened from its parent, so a concurrent swap of a directory for a symlink
// cannot lead the walk out of dir. Entries that vanish or cannot be read
// during the walk are skipped. It stops at fn's first error (other than
// errSkipDir) or when ctx ends, returning that error.
func walk(ctx context.Context, dir *os.Root, rel string, fn func(entry) error) error {
	names, err := readDirNames(dir)
	if err != nil {
		if skippable(err) {
			return nil
		}
		return err
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := dir.Lstat(n)
		if err != nil {
			if skippable(err) {
				continue
			}
			return err
		}
		e := entry{rel: path.Join(rel, n), dir: dir, name: n, info: info}
		switch err := fn(e); {
		case errors.Is(err, errSkipDir):
			continue
		case err != nil:
			return err
		}
		if !info.IsDir() {
			continue
		}
		sub, err := dir.OpenRoot(n)
		if err != nil {
			if skippable(err) {
				continue
			}
			return err
		}
		err = walk(ctx, sub, e.rel, fn)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// readDirNames returns the sorted names in dir.
func readDirNames(dir *os.Root) ([]string, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// skippable reports whether a walk may pass over err: the entry vanished,
// changed type under the walk, or is not readable by this process.
func skippable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) || isEscape(err)
}
