package bwrap

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// reachable checks that uid:gid (with no supplementary groups) can reach
// path: search permission on every directory above it, and read (plus
// search, for a directory) on path itself. bwrap opens mount sources as
// that user, and its own error ("Can't find source path") does not say
// which directory is in the way.
func reachable(path string, uid, gid int) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	need := fs.FileMode(4) // read
	if fi.IsDir() {
		need = 5 // read + search
	}
	if !allowed(fi, uid, gid, need) {
		return fmt.Errorf("%s is not readable by uid %d", path, uid)
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if !allowed(fi, uid, gid, 1) {
			return fmt.Errorf("uid %d cannot enter %s (mode %v) on the way to %s", uid, dir, fi.Mode().Perm(), path)
		}
		if dir == "/" {
			return nil
		}
	}
}

// allowed applies the owner/group/other permission bits of fi for uid:gid
// to need (rwx as 4/2/1). uid 0 passes, as the kernel lets it.
func allowed(fi fs.FileInfo, uid, gid int, need fs.FileMode) bool {
	if uid == 0 {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == uid:
		perm >>= 6
	case int(st.Gid) == gid:
		perm >>= 3
	}
	return perm&need == need
}

// binary returns the corral binary as the sandbox user can reach it: the
// configured one, or else a copy under the state directory named by its
// content hash (made once per Runtime; a copy that exists is reused).
func (r *Runtime) binary() (string, error) {
	r.binOnce.Do(func() {
		uid, gid := r.hostIDs()
		if reachable(r.cfg.Binary, uid, gid) == nil {
			r.bin = r.cfg.Binary
			return
		}
		r.bin, r.binErr = installCopy(r.cfg.Binary, filepath.Join(r.cfg.StateDir, ".bin"))
	})
	return r.bin, r.binErr
}

// installCopy copies file into dir as corral-<sha256 prefix>, mode 0755,
// atomically, unless that copy already exists.
func installCopy(file, dir string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", file, err)
	}
	dst := filepath.Join(dir, "corral-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".corral-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, f); err != nil {
		tmp.Close()
		return "", fmt.Errorf("copy %s: %w", file, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return dst, os.Rename(tmp.Name(), dst)
}

// seedDir makes dst a directory owned by uid:gid holding a copy of src's
// directories, regular files and symlinks (a template's home directory:
// dot files, a few KB). A missing src gives an empty dst.
func seedDir(src, dst string, uid, gid int) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	chown := func(p string) error {
		if os.Geteuid() != 0 {
			return nil
		}
		return os.Lchown(p, uid, gid)
	}
	if err := chown(dst); err != nil {
		return err
	}
	if _, err := os.Lstat(src); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == src {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.Mkdir(out, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			var target string
			if target, err = os.Readlink(p); err == nil {
				err = os.Symlink(target, out)
			}
		case d.Type().IsRegular():
			err = copyFile(p, out, info.Mode().Perm())
		default:
			return nil // devices, sockets, fifos: not in a home template
		}
		if err != nil {
			return err
		}
		return chown(out)
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// logTail returns up to the last n bytes of a file, for error messages.
func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}
