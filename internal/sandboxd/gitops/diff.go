package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Diff size limits.
const (
	DefaultDiffBytes = 32 << 20
	MaxDiffBytes     = 256 << 20
)

// DiffOptions select a diff.
type DiffOptions struct {
	Path string
	// Base, when set, is the commit to diff against. With Staged the
	// index is compared with it; without, the whole work tree is, untracked
	// files included (ignored ones not) — a job's changes.patch.
	Base string
	// Staged compares the index (with HEAD, or with Base); without Staged
	// or Base the work tree is compared with the index, as `git diff`.
	Staged bool
	// Paths limit the diff to these paths, relative to Path, literally.
	Paths []string
	// MaxBytes caps the diff: DefaultDiffBytes when 0, at most
	// MaxDiffBytes. A larger diff is ErrTooLarge.
	MaxBytes  int64
	TimeoutMS int64
}

// Diff returns a unified diff that `git apply` takes: binary changes as
// git binary patches, a/ and b/ prefixes whatever the configuration says,
// no external diff or textconv driver. The work tree against Base is
// computed in a temporary copy of the index, so neither HEAD nor the real
// index moves.
func (s *Service) Diff(ctx context.Context, o DiffOptions) ([]byte, error) {
	switch {
	case o.MaxBytes < 0 || o.MaxBytes > MaxDiffBytes:
		return nil, errdefs.Invalidf("max_bytes must be between 1 and %d", MaxDiffBytes)
	case o.MaxBytes == 0:
		o.MaxBytes = DefaultDiffBytes
	}
	if err := checkRelPaths(o.Paths); err != nil {
		return nil, err
	}
	t, err := timeout(o.TimeoutMS, DefaultLocalTimeout)
	if err != nil {
		return nil, err
	}
	r, err := s.open(o.Path)
	if err != nil {
		return nil, err
	}
	// Outside a repository git diff would compare files (--no-index).
	if _, err := s.git(ctx, r, t, true, "rev-parse", "--git-dir"); err != nil {
		return nil, err
	}
	var base string
	if o.Base != "" {
		if base, err = s.resolveCommit(ctx, r, t, "base", o.Base); err != nil {
			return nil, err
		}
	}
	var env []string
	if len(o.Paths) > 0 {
		env = append(env, "GIT_LITERAL_PATHSPECS=1")
	}
	args := []string{"diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/"}
	if base != "" && !o.Staged {
		index, cleanup, err := s.tempIndex(ctx, r, t)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		env = append(env, "GIT_INDEX_FILE="+index)
		add := append([]string{"add", "--all", "--"}, o.Paths...)
		if _, err := s.local(ctx, r, gitCmd{args: add, env: env, timeout: t}); err != nil {
			return nil, err
		}
	}
	if base != "" || o.Staged {
		args = append(args, "--cached")
	}
	if base != "" {
		args = append(args, "--end-of-options", base)
	}
	args = append(append(args, "--"), o.Paths...)
	patch, err := s.localBytes(ctx, r, gitCmd{args: args, env: env, timeout: t, readOnly: true, maxOut: o.MaxBytes})
	if errors.Is(err, errdefs.ErrTooLarge) {
		return nil, errdefs.TooLargef("the diff is larger than max_bytes (%d); raise it (at most %d) or narrow the diff with paths", o.MaxBytes, MaxDiffBytes)
	}
	return patch, err
}

// tempIndex copies r's index to a private temporary file and returns its
// path and the function that removes it. Starting from the real index
// keeps git's stat cache, so only changed files are read again.
func (s *Service) tempIndex(ctx context.Context, r repo, t time.Duration) (string, func(), error) {
	out, err := s.git(ctx, r, t, true, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", nil, err
	}
	src := strings.TrimSpace(out)
	if !filepath.IsAbs(src) {
		src = filepath.Join(r.dir, src)
	}
	dir, err := os.MkdirTemp(s.tmp, "corral-index-")
	if err != nil {
		return "", nil, fmt.Errorf("gitops: temporary index: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	dst := filepath.Join(dir, "index")
	if err := copyFile(dst, src); err != nil && !errors.Is(err, fs.ErrNotExist) {
		cleanup()
		return "", nil, fmt.Errorf("gitops: temporary index: %w", err)
	}
	return dst, cleanup, nil
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
