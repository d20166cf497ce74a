package files

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// DefaultFileMode is the mode of a new file written without one.
	DefaultFileMode fs.FileMode = 0o644
	// dirMode is the mode of directories created on the way (umask applies).
	dirMode fs.FileMode = 0o755
	// MaxEditSize caps the file Edit reads into memory.
	MaxEditSize = 64 << 20
	// copyBufSize is the buffer of every streaming copy: large enough that
	// a 64 MiB body takes a few hundred syscalls, not thousands.
	copyBufSize = 256 << 10
	// tempInfix marks the temporary files of atomic writes.
	tempInfix = ".corral-tmp-"
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// copyBuffered copies src to dst through a pooled buffer, hiding ReadFrom
// and WriteTo so that the large buffer is really used. It fills the buffer
// before each write: a socket yields a few KiB per read, and a few large
// writes to a file cost far less than many small ones. It reports which
// side failed: readErr from src, writeErr from dst.
func copyBuffered(dst io.Writer, src io.Reader) (n int64, readErr, writeErr error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		nr := 0
		var rerr error
		for nr < len(buf) && rerr == nil {
			var k int
			k, rerr = src.Read(buf[nr:])
			nr += k
		}
		if rerr != nil && rerr != io.EOF {
			return n, rerr, nil
		}
		if nr > 0 {
			nw, werr := dst.Write(buf[:nr])
			n += int64(nw)
			if werr != nil {
				return n, nil, werr
			}
			if nw != nr {
				return n, nil, io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return n, nil, nil
		}
	}
}

// ParseMode parses an octal permission string ("0644", "755") into a mode.
// Only the permission bits (0 to 0777) are accepted.
func ParseMode(s string) (fs.FileMode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return 0, errdefs.Invalidf("mode %q must be octal permission bits between 0000 and 0777", s)
	}
	return fs.FileMode(v), nil
}

// Open opens the regular file at sandbox path p for reading, following
// symlinks. A directory or a special file is ErrInvalid. The caller closes
// the file.
func (r *Root) Open(p string) (*os.File, fs.FileInfo, error) {
	f, fi, _, err := r.openRegular(p)
	return f, fi, err
}

// openRegular is Open, also returning the resolved name.
func (r *Root) openRegular(p string) (*os.File, fs.FileInfo, string, error) {
	name, err := r.resolve(p, true)
	if err != nil {
		return nil, nil, "", err
	}
	// O_NONBLOCK: opening a FIFO must not block; it is refused below.
	f, err := r.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, "", mapErr(p, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = mapErr(p, err)
	case fi.IsDir():
		err = errdefs.Invalidf("%s is a directory", quote(p))
	case !fi.Mode().IsRegular():
		err = errdefs.Invalidf("%s is not a regular file", quote(p))
	}
	if err != nil {
		f.Close()
		return nil, nil, "", err
	}
	return f, fi, name, nil
}

// WriteOptions tune WriteFile.
type WriteOptions struct {
	// Mode is the new file's permission bits when ModeSet; otherwise an
	// existing file keeps its mode and a new one gets DefaultFileMode.
	Mode    fs.FileMode
	ModeSet bool
}

// WriteFile replaces the file at sandbox path p with everything read from
// src, creating missing parent directories. It streams src into a
// temporary file beside the target and renames it into place, so a reader
// sees the old file or the new one, never a part; on any failure the
// temporary file is removed. A symlink at p is followed: its target is
// replaced. A read error from src is ErrInvalid with src's error as cause.
func (r *Root) WriteFile(p string, src io.Reader, opts WriteOptions) (sandboxapi.FileInfo, error) {
	name, err := r.resolve(p, true)
	if err != nil {
		return sandboxapi.FileInfo{}, err
	}
	if name == "." {
		return sandboxapi.FileInfo{}, errdefs.Invalidf("%s is a directory", quote(p))
	}
	dir, _ := splitName(name)
	if err := r.mkdirParents(p, dir); err != nil {
		return sandboxapi.FileInfo{}, err
	}
	mode := opts.Mode
	fi, err := r.root.Lstat(name)
	switch {
	case err == nil && fi.IsDir():
		return sandboxapi.FileInfo{}, errdefs.Invalidf("%s is a directory", quote(p))
	case err == nil && !opts.ModeSet:
		mode = fi.Mode()
	case err != nil && !opts.ModeSet:
		mode = DefaultFileMode
	}
	err = r.replace(p, name, mode, func(w io.Writer) error {
		_, rerr, werr := copyBuffered(w, src)
		if rerr != nil {
			return errdefs.Wrap(errdefs.ErrInvalid, rerr, "reading the request body failed")
		}
		return werr
	})
	if err != nil {
		return sandboxapi.FileInfo{}, err
	}
	return r.info(p, name)
}

// replace atomically replaces resolved name (of sandbox path p) with what
// fill writes: a temporary file in the same directory, given mode, then
// renamed over name. The temporary file never outlives a failure.
func (r *Root) replace(p, name string, mode fs.FileMode, fill func(w io.Writer) error) (err error) {
	dir, base := splitName(name)
	tmp, tmpName, err := r.createTemp(dir, base)
	if err != nil {
		return mapErr(p, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			r.root.Remove(tmpName)
		}
	}()
	if err := fill(tmp); err != nil {
		return mapErr(p, err)
	}
	if err := tmp.Chmod(mode.Perm() | mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return mapErr(p, err)
	}
	if err := tmp.Close(); err != nil {
		return mapErr(p, err)
	}
	_, tmpBase := splitName(tmpName)
	if err := r.install(dir, tmpBase, base); err != nil {
		return mapErr(p, err)
	}
	return nil
}

// createTemp creates an empty, private temporary file in resolved dir,
// named after base so that a leftover is recognisable.
func (r *Root) createTemp(dir, base string) (*os.File, string, error) {
	if len(base) > 128 {
		base = base[:128]
	}
	var rnd [8]byte
	for range 10 {
		rand.Read(rnd[:])
		name := childName(dir, "."+base+tempInfix+hex.EncodeToString(rnd[:]))
		f, err := r.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", errors.New("files: could not create a unique temporary file")
}

// mkdirParents creates resolved directory dir and its parents for
// sandbox path p. A parent that is not a directory is ErrConflict.
func (r *Root) mkdirParents(p, dir string) error {
	if dir == "." {
		return nil
	}
	err := r.root.MkdirAll(dir, dirMode)
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
		return errdefs.Wrap(errdefs.ErrConflict, err, quote(p)+": a parent is not a directory")
	}
	return mapErr(p, err)
}

// Remove deletes the file, symlink or directory at sandbox path p (a
// symlink itself, not its target). A non-empty directory needs recursive,
// else it is ErrConflict. The root itself cannot be removed (ErrForbidden).
func (r *Root) Remove(p string, recursive bool) error {
	name, err := r.resolve(p, false)
	if err != nil {
		return err
	}
	if name == "." {
		return errdefs.Forbiddenf("%s is the root and cannot be deleted", quote(p))
	}
	fi, err := r.root.Lstat(name)
	if err != nil {
		return mapErr(p, err)
	}
	if recursive && fi.IsDir() {
		return mapErr(p, r.root.RemoveAll(name))
	}
	err = r.root.Remove(name)
	if fi.IsDir() && (errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, fs.ErrExist)) {
		return errdefs.Wrap(errdefs.ErrConflict, err, quote(p)+": directory not empty; set recursive=true")
	}
	return mapErr(p, err)
}

// Mkdir creates the directory at sandbox path p and reports whether it did.
// Without parents the parent must exist (else ErrNotFound) and p must not
// (else ErrConflict). With parents, missing parents are created and an
// existing directory is success (created=false), as with `mkdir -p`.
func (r *Root) Mkdir(p string, parents bool) (fi sandboxapi.FileInfo, created bool, err error) {
	name, err := r.resolve(p, parents)
	if err != nil {
		return fi, false, err
	}
	if parents {
		st, err := r.root.Lstat(name)
		switch {
		case err == nil && st.IsDir():
			return r.describe(clean(p), name, st), false, nil
		case err == nil:
			return fi, false, errdefs.Conflictf("%s already exists and is not a directory", quote(p))
		}
		if err := r.mkdirParents(p, name); err != nil {
			return fi, false, err
		}
	} else {
		if name == "." {
			return fi, false, errdefs.Conflictf("%s already exists", quote(p))
		}
		err := r.root.Mkdir(name, dirMode)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fi, false, errdefs.Wrap(errdefs.ErrNotFound, err, quote(p)+": parent does not exist; set parents=true")
		case err != nil:
			return fi, false, mapErr(p, err)
		}
	}
	fi, err = r.info(p, name)
	return fi, err == nil, err
}

// Edit replaces oldText with newText in the file at sandbox path p and
// returns the number of replacements. oldText must occur exactly once
// unless all is set; not found or ambiguous is ErrConflict. The file (at
// most MaxEditSize bytes) is rewritten atomically and keeps its mode.
func (r *Root) Edit(p, oldText, newText string, all bool) (int, error) {
	if oldText == "" {
		return 0, errdefs.Invalidf("old_text must not be empty")
	}
	f, fi, name, err := r.openRegular(p)
	if err != nil {
		return 0, err
	}
	if fi.Size() > MaxEditSize {
		f.Close()
		return 0, errdefs.TooLargef("%s is larger than %d bytes, the edit limit", quote(p), MaxEditSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEditSize+1))
	f.Close()
	if err != nil {
		return 0, mapErr(p, err)
	}
	if len(data) > MaxEditSize {
		return 0, errdefs.TooLargef("%s is larger than %d bytes, the edit limit", quote(p), MaxEditSize)
	}
	old := []byte(oldText)
	n := bytes.Count(data, old)
	switch {
	case n == 0:
		return 0, errdefs.Conflictf("old_text was not found in %s", quote(p))
	case n > 1 && !all:
		return 0, errdefs.Conflictf("old_text occurs %d times in %s; add context to make it unique or set replace_all", n, quote(p))
	}
	if oldText == newText {
		return n, nil
	}
	out := bytes.Replace(data, old, []byte(newText), -1)
	err = r.replace(p, name, fi.Mode(), func(w io.Writer) error {
		_, err := w.Write(out)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
