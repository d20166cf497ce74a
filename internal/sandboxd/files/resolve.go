package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// MaxPathLen bounds a sandbox path in bytes (PATH_MAX).
	MaxPathLen = 4096
	// maxSymlinks bounds the symlinks followed while resolving one path, as
	// the kernel's ELOOP limit does.
	maxSymlinks = 40
)

// checkPath validates the form of sandbox path p: non-empty, absolute,
// without NUL bytes, at most MaxPathLen bytes.
func checkPath(p string) error {
	switch {
	case p == "":
		return errdefs.Invalidf("path is required")
	case len(p) > MaxPathLen:
		return errdefs.Invalidf("path is longer than %d bytes", MaxPathLen)
	case strings.IndexByte(p, 0) >= 0:
		return errdefs.Invalidf("path %q contains a NUL byte", p)
	case p[0] != '/':
		return errdefs.Invalidf("path %q must be absolute", p)
	}
	return nil
}

// resolve turns sandbox path p into a clean name relative to the root ("."
// for the root itself) whose directory components are real directories,
// with every symlink on the way followed. follow says whether a symlink in
// the last component is followed too (open, write) or named itself (lstat,
// remove, rename).
//
// `..` applies to the directory reached so far, as in the kernel, so
// "/link/.." is the parent of link's target. A `..` above the root, or a
// symlink whose target leaves the root, is ErrForbidden. Components that do
// not exist are kept as written, so the operation itself reports
// not-found (or creates them).
func (r *Root) resolve(p string, follow bool) (string, error) {
	if err := checkPath(p); err != nil {
		return "", err
	}
	return resolveIn(r.root, p, follow, r.hostRel)
}

// resolveIn is resolve within any os.Root. abs maps an absolute symlink
// target to a name in root, or reports that it lies outside; with abs nil
// every absolute target is outside.
func resolveIn(root *os.Root, p string, follow bool, abs func(string) (string, bool)) (string, error) {
	var done []string // resolved components: real directories, then the last
	todo := splitPath(p)
	links := 0
	missingAt := -1 // index in done of the first component that does not exist
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			if len(done) == 0 {
				return "", errdefs.Forbiddenf("path %q escapes the root", p)
			}
			done = done[:len(done)-1]
			if len(done) <= missingAt {
				missingAt = -1
			}
			continue
		}
		if missingAt >= 0 || (len(todo) == 0 && !follow) {
			done = append(done, c)
			continue
		}
		name := joinNames(done, c)
		fi, err := root.Lstat(name)
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			missingAt = len(done)
			done = append(done, c)
			continue
		default:
			return "", mapErr(p, err)
		}
		if fi.Mode().Type() != fs.ModeSymlink {
			done = append(done, c)
			continue
		}
		if links++; links > maxSymlinks {
			return "", errdefs.Invalidf("too many levels of symbolic links in %q", p)
		}
		target, err := root.Readlink(name)
		if err != nil {
			return "", mapErr(p, err)
		}
		if filepath.IsAbs(target) {
			var rel string
			ok := abs != nil
			if ok {
				rel, ok = abs(target)
			}
			if !ok {
				return "", errdefs.Forbiddenf("path %q: symlink %q points outside the root", p, "/"+name)
			}
			done = done[:0]
			target = rel
		}
		todo = append(splitPath(target), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

// hostRel returns host path target relative to the root, if it lies inside.
func (r *Root) hostRel(target string) (string, bool) {
	t := filepath.Clean(target)
	if r.dir == "/" {
		return strings.TrimPrefix(t, "/"), true
	}
	if t == r.dir {
		return "", true
	}
	return strings.CutPrefix(t, r.dir+"/")
}

// hostPath returns the host path of resolved name.
func (r *Root) hostPath(name string) string { return filepath.Join(r.dir, name) }

// sandboxPath returns the sandbox path of host path h, if it lies inside.
func (r *Root) sandboxPath(h string) (string, bool) {
	rel, ok := r.hostRel(h)
	if !ok {
		return "", false
	}
	return "/" + rel, true
}

// splitPath splits p into its components, dropping empty ones and ".".
func splitPath(p string) []string {
	parts := strings.Split(p, "/")
	out := parts[:0]
	for _, c := range parts {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

func joinNames(dir []string, c string) string {
	if len(dir) == 0 {
		return c
	}
	return strings.Join(dir, "/") + "/" + c
}

// splitName splits resolved name into its directory ("." at the top) and
// base.
func splitName(name string) (dir, base string) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ".", name
	}
	return name[:i], name[i+1:]
}

// childName joins a resolved directory name and a child.
func childName(dir, child string) string {
	if dir == "." {
		return child
	}
	return dir + "/" + child
}
