// Package gitops is the repository workflow behind sandboxd's /v1/git/*
// routes: clone, status, diff, branches, checkout, add, commit, push and
// log, done by the git command line inside the sandbox. It does not import
// net/http.
//
// Paths are sandbox paths confined to the daemon's files root, resolved
// the way package files resolves them; repository discovery never climbs
// above the root. Every ref, revision, remote and path a request names is
// validated and passed after "--end-of-options" or "--", so none can be
// taken for an option. Git runs non-interactively with a command line that
// overrides the repository's hooks, credential helpers and similar
// settings (see baseConfig), under a timeout, with bounded output, and is
// killed with its helpers when the timeout passes or the caller goes away.
//
// Credentials (see askpass.go) never touch disk, an argument list, an
// environment, a log or a response: git's messages are scrubbed of them
// and of any URL's userinfo before they are logged or returned.
//
// It needs git 2.24 or later (--end-of-options).
//
// Errors are errdefs classes (see classify):
//
//	400  malformed input: a ref or branch name, URL, path, identity,
//	     timeout or limit that is not valid; credentials for ssh; a file
//	     where the repository directory is expected
//	403  a path that escapes the root or the repository
//	404  a missing path, or no repository there
//	409  the state forbids it: clone into a non-empty directory, a branch
//	     that exists, local changes a checkout would overwrite, nothing to
//	     commit, unmerged files, a push the remote rejected, a lock held
//	     by another git process
//	413  a diff (or other output) over its limit
//	422  git could not do it: an unknown ref or revision, a remote that is
//	     unreachable, missing or refuses the credentials, a path git does
//	     not know; git not installed
//	504  the command's timeout passed
package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sandboxd/files"
)

// Default timeouts; a request's timeout_ms replaces them.
const (
	DefaultLocalTimeout  = time.Minute      // status, diff, commit, ...
	DefaultRemoteTimeout = 10 * time.Minute // clone, push
)

// Options configure a Service.
type Options struct {
	// Askpass is the program git runs for credentials: an executable that
	// calls Askpass first thing. os.Executable() when empty.
	Askpass string
	// TempDir holds the per-command askpass sockets and temporary
	// indexes; os.TempDir() when empty. It must not be in a workspace.
	TempDir string
	// Logger receives a debug line per git command (scrubbed).
	Logger *slog.Logger
}

// Service runs git for the API over one files root. It is safe for
// concurrent use; commands that change a repository are serialised per
// directory, so two API calls never race for git's locks.
type Service struct {
	root    *files.Root
	askpass string
	tmp     string
	ceiling string
	log     *slog.Logger

	mu    sync.Mutex
	locks map[string]*dirLock
}

// New returns a Service for root.
func New(root *files.Root, opts Options) (*Service, error) {
	if opts.Askpass == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("gitops: own executable: %w", err)
		}
		opts.Askpass = exe
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{
		root:    root,
		askpass: opts.Askpass,
		tmp:     opts.TempDir,
		ceiling: ceilingFor(root.Dir()),
		log:     opts.Logger,
		locks:   map[string]*dirLock{},
	}, nil
}

// repo is a resolved repository directory.
type repo struct {
	path string // the sandbox path, clean
	dir  string // the host path, symlinks resolved
}

// open resolves sandbox path p (DefaultGitPath when empty) to an existing
// directory inside the root. Whether it is in a repository is git's to
// say (classify answers 404).
func (s *Service) open(p string) (repo, error) {
	if p == "" {
		p = sandboxapi.DefaultGitPath
	}
	// Stat checks the path's form and walks it the way the files API does:
	// 400 malformed, 403 escaping, 404 missing.
	if _, err := s.root.Stat(p); err != nil {
		return repo{}, err
	}
	// The last component may be a symlink; resolve it as the kernel will
	// for git and check again that the result is inside the root.
	rootDir := s.root.Dir()
	host, err := filepath.EvalSymlinks(strings.TrimSuffix(rootDir, "/") + p)
	if err != nil {
		return repo{}, errdefs.Wrap(errdefs.ErrNotFound, err, fmt.Sprintf("%q: no such directory", p))
	}
	if host != rootDir && rootDir != "/" && !strings.HasPrefix(host, rootDir+"/") {
		return repo{}, errdefs.Forbiddenf("path %q escapes the root", p)
	}
	fi, err := os.Stat(host)
	switch {
	case err != nil:
		return repo{}, errdefs.Wrap(errdefs.ErrNotFound, err, fmt.Sprintf("%q: no such directory", p))
	case !fi.IsDir():
		return repo{}, errdefs.Invalidf("%q is not a directory", p)
	}
	return repo{path: path.Clean(p), dir: host}, nil
}

// dirLock serialises the changing commands on one directory: a slot
// channel, so a caller that goes away stops waiting.
type dirLock struct {
	slot chan struct{}
	refs int // holders and waiters; guarded by Service.mu
}

// lock takes dir's lock and returns its release, or ctx's error if ctx
// ends first.
func (s *Service) lock(ctx context.Context, dir string) (func(), error) {
	s.mu.Lock()
	l := s.locks[dir]
	if l == nil {
		l = &dirLock{slot: make(chan struct{}, 1)}
		s.locks[dir] = l
	}
	l.refs++
	s.mu.Unlock()
	done := func() {
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, dir)
		}
		s.mu.Unlock()
	}
	select {
	case l.slot <- struct{}{}:
		return func() { <-l.slot; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// git runs a local command in r with the default local timeout unless t
// is set, and classifies a failure.
func (s *Service) git(ctx context.Context, r repo, t time.Duration, readOnly bool, args ...string) (string, error) {
	return s.local(ctx, r, gitCmd{args: args, timeout: t, readOnly: readOnly})
}

// local runs c in r and returns its output as text.
func (s *Service) local(ctx context.Context, r repo, c gitCmd) (string, error) {
	out, err := s.localBytes(ctx, r, c)
	return string(out), err
}

// localBytes runs c in r with the default local timeout unless c has one,
// and classifies a failure.
func (s *Service) localBytes(ctx context.Context, r repo, c gitCmd) ([]byte, error) {
	c.dir = r.dir
	if c.timeout == 0 {
		c.timeout = DefaultLocalTimeout
	}
	out, err := s.run(ctx, c)
	if err != nil {
		return nil, classify(r.path, err)
	}
	return out, nil
}

// head returns r's current branch ("" when detached) and commit ("" before
// the first commit).
func (s *Service) head(ctx context.Context, r repo, t time.Duration) (branch, commit string, err error) {
	branch, err = s.git(ctx, r, t, true, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil && !exitCode(err, 1) {
		return "", "", err
	}
	commit, err = s.git(ctx, r, t, true, "rev-parse", "--verify", "--quiet", "HEAD")
	if err != nil && !exitCode(err, 1) {
		return "", "", err
	}
	return strings.TrimSpace(branch), strings.TrimSpace(commit), nil
}

// resolveCommit turns revision rev into a full commit id; an unknown one
// is ErrUnprocessable.
func (s *Service) resolveCommit(ctx context.Context, r repo, t time.Duration, what, rev string) (string, error) {
	if err := checkRev(what, rev); err != nil {
		return "", err
	}
	out, err := s.git(ctx, r, t, true, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if exitCode(err, 1) {
		return "", errdefs.Unprocessablef("%s %q is not a known commit", what, rev)
	}
	return strings.TrimSpace(out), err
}

// exitCode reports whether err is git exiting with code.
func exitCode(err error, code int) bool {
	var f *gitFailure
	return errors.As(err, &f) && f.code == code
}

// patterns map git's messages (LC_ALL=C) to error classes, first match
// wins. Anything else git refuses is ErrUnprocessable.
var patterns = []struct {
	class error
	texts []string
}{
	{errdefs.ErrNotFound, []string{"not a git repository"}},
	{errdefs.ErrConflict, []string{
		"already exists and is not an empty directory", "already exists",
		"would be overwritten", "Please commit your changes or stash them",
		"nothing to commit", "no changes added to commit",
		"unmerged", "you need to resolve your current index first", "conflict",
		"[rejected]", "[remote rejected]", "non-fast-forward", "fetch first", "failed to push some refs",
		".lock': File exists", "Another git process seems to be running", "cannot lock ref",
	}},
	{errdefs.ErrUnprocessable, []string{
		"Authentication failed", "could not read Username", "could not read Password",
		"terminal prompts disabled", "returned error: 401", "returned error: 403",
	}},
}

// classify turns a run error into an errdefs class with git's scrubbed
// message. Errors that already have a class pass through.
func classify(p string, err error) error {
	var f *gitFailure
	if !errors.As(err, &f) {
		return err
	}
	msg := f.message()
	for _, pt := range patterns {
		for _, t := range pt.texts {
			if strings.Contains(msg, t) {
				if pt.class == errdefs.ErrNotFound {
					return errdefs.Wrap(errdefs.ErrNotFound, f, fmt.Sprintf("%q is not in a git repository", p))
				}
				return errdefs.Wrap(pt.class, f, fmt.Sprintf("git %s failed: %s", f.sub, msg))
			}
		}
	}
	return errdefs.Wrap(errdefs.ErrUnprocessable, f, fmt.Sprintf("git %s failed: %s", f.sub, msg))
}

// isNotExist reports whether err is a files error for a missing path.
func isNotExist(err error) bool {
	return errors.Is(err, errdefs.ErrNotFound) || errors.Is(err, fs.ErrNotExist)
}
