package files

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/corral-sh/corral/internal/errdefs"
)

// errEscapeText is the text of os.Root's unexported escape error.
const errEscapeText = "path escapes from parent"

// isEscape reports whether err is os.Root refusing a path that leaves it.
func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == errEscapeText {
			return true
		}
	}
	return false
}

// mapErr turns an OS error about sandbox path p into an errdefs class with
// a message that names p, never a host path. The OS error stays as the
// logged cause. Errors that already have a class pass through.
func mapErr(p string, err error) error {
	if err == nil {
		return nil
	}
	var e *errdefs.Error
	if errors.As(err, &e) {
		return err
	}
	msg, class := classify(err)
	if class == nil {
		return fmt.Errorf("files: %s: %w", p, err)
	}
	return errdefs.Wrap(class, err, fmt.Sprintf("%s: %s", quote(p), msg))
}

// classify names the error class and a client-safe message for an OS error.
func classify(err error) (msg string, class error) {
	switch {
	case isEscape(err):
		return "path escapes the root", errdefs.ErrForbidden
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory", errdefs.ErrNotFound
	case errors.Is(err, syscall.ENOTDIR):
		return "a path component is not a directory", errdefs.ErrNotFound
	case errors.Is(err, syscall.ENOTEMPTY):
		return "directory not empty", errdefs.ErrConflict
	case errors.Is(err, fs.ErrExist):
		return "already exists", errdefs.ErrConflict
	case errors.Is(err, syscall.EISDIR):
		return "is a directory", errdefs.ErrInvalid
	case errors.Is(err, fs.ErrPermission):
		return "permission denied", errdefs.ErrForbidden
	case errors.Is(err, syscall.EROFS):
		return "read-only file system", errdefs.ErrForbidden
	case errors.Is(err, syscall.ELOOP):
		return "too many levels of symbolic links", errdefs.ErrInvalid
	case errors.Is(err, syscall.ENAMETOOLONG):
		return "file name too long", errdefs.ErrInvalid
	case errors.Is(err, syscall.EINVAL):
		return "invalid argument", errdefs.ErrInvalid
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG):
		return "no space left on device", errdefs.ErrTooLarge
	case errors.Is(err, syscall.EBUSY), errors.Is(err, syscall.ETXTBSY):
		return "resource busy", errdefs.ErrConflict
	case errors.Is(err, syscall.EXDEV):
		return "cross-device operation", errdefs.ErrUnprocessable
	}
	return "", nil
}

// quote formats a sandbox path for a message.
func quote(p string) string { return fmt.Sprintf("%q", p) }
