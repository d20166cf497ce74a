package files

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// install moves the finished temporary file tmpBase over base, both in
// resolved directory dir, atomically.
//
// It exchanges the two names (renameat2 RENAME_EXCHANGE) and then unlinks
// the old file, instead of renaming over it: ext4 (auto_da_alloc) forces
// the new file's blocks to be allocated and written back when a rename
// replaces an existing file, which costs more than the whole upload; an
// exchange does not. Readers see the old file or the new one either way.
// Where the exchange is not possible (no file yet, or a filesystem without
// RENAME_EXCHANGE) it falls back to a plain rename.
func (r *Root) install(dir, tmpBase, base string) error {
	d, err := r.root.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	rc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	err = rc.Control(func(fd uintptr) {
		dfd := int(fd)
		opErr = unix.Renameat2(dfd, tmpBase, dfd, base, unix.RENAME_EXCHANGE)
		switch {
		case opErr == nil:
			if opErr = unix.Unlinkat(dfd, tmpBase, 0); errors.Is(opErr, syscall.EISDIR) {
				// A directory appeared at base meanwhile: put it back.
				unix.Renameat2(dfd, tmpBase, dfd, base, unix.RENAME_EXCHANGE)
				unix.Unlinkat(dfd, tmpBase, 0)
			}
		case errors.Is(opErr, syscall.ENOENT), errors.Is(opErr, syscall.EINVAL),
			errors.Is(opErr, syscall.ENOSYS), errors.Is(opErr, syscall.EOPNOTSUPP):
			opErr = unix.Renameat(dfd, tmpBase, dfd, base)
		}
	})
	if err != nil {
		return err
	}
	return opErr
}
