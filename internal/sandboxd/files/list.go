package files

import (
	"context"
	"os"
	"slices"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// MaxListDepth caps List's depth.
	MaxListDepth = 20
	// MaxListEntries caps the entries List returns; beyond it the listing
	// is truncated.
	MaxListEntries = 10000
)

// listCap is MaxListEntries, lowered by tests.
var listCap = MaxListEntries

// List describes the entries below the directory at sandbox path p (a
// symlink to a directory is followed), down to depth levels (1 = the
// directory's own entries). Symlinks inside are listed, not followed.
//
// The directory is read breadth-first, so when there are more than
// MaxListEntries entries the shallow ones are kept and truncated is true.
// Entries are returned in tree order: each directory followed by its
// contents, names sorted bytewise.
func (r *Root) List(ctx context.Context, p string, depth int) (entries []sandboxapi.FileInfo, truncated bool, err error) {
	if depth < 1 || depth > MaxListDepth {
		return nil, false, errdefs.Invalidf("depth must be between 1 and %d", MaxListDepth)
	}
	name, err := r.resolve(p, true)
	if err != nil {
		return nil, false, err
	}
	fi, err := r.root.Lstat(name)
	if err != nil {
		return nil, false, mapErr(p, err)
	}
	if !fi.IsDir() {
		return nil, false, errdefs.Invalidf("%s is not a directory", quote(p))
	}
	type dir struct{ path, name string }
	level := []dir{{clean(p), name}}
	entries = []sandboxapi.FileInfo{}
	for d := 1; d <= depth && len(level) > 0 && !truncated; d++ {
		var next []dir
		for _, parent := range level {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
			sub, err := r.root.OpenRoot(parent.name)
			if err != nil {
				if parent.name != name && skippable(err) {
					continue // vanished or unreadable below the top
				}
				return nil, false, mapErr(parent.path, err)
			}
			start := len(entries)
			var full bool
			entries, full = listDir(sub, parent.path, entries)
			sub.Close()
			for _, e := range entries[start:] {
				if e.Type == sandboxapi.FileTypeDir && d < depth {
					next = append(next, dir{e.Path, childName(parent.name, e.Name)})
				}
			}
			if full {
				truncated = true
				break
			}
		}
		level = next
	}
	slices.SortFunc(entries, func(a, b sandboxapi.FileInfo) int { return comparePaths(a.Path, b.Path) })
	return entries, truncated, nil
}

// listDir appends the entries of dir (at sandbox path p) to out, stopping
// at MaxListEntries; full reports that it stopped early.
func listDir(dir *os.Root, p string, out []sandboxapi.FileInfo) (_ []sandboxapi.FileInfo, full bool) {
	names, err := readDirNames(dir)
	if err != nil && len(names) == 0 {
		return out, false
	}
	for _, n := range names {
		if len(out) >= listCap {
			return out, true
		}
		info, err := dir.Lstat(n)
		if err != nil {
			continue // vanished since readdir
		}
		fi := sandboxapi.FileInfo{
			Path:  join(p, n),
			Name:  n,
			Type:  fileType(info.Mode()),
			Size:  info.Size(),
			Mode:  FormatMode(info.Mode()),
			MTime: info.ModTime().UTC(),
		}
		if fi.Type == sandboxapi.FileTypeSymlink {
			fi.Target, _ = dir.Readlink(n)
		}
		out = append(out, fi)
	}
	return out, false
}

// comparePaths orders sandbox paths in tree order: component by component,
// so "/a/b" sorts before "/a-c" ('/' ranks below every other byte).
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		switch {
		case ca == '/':
			return -1
		case cb == '/':
			return 1
		case ca < cb:
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}
