package gitops

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// maxDepth bounds a shallow clone's depth.
const maxDepth = 1 << 30

// Clone clones req.URL into req.Path, checks out req.Ref and creates
// req.Branch there. The directory must be missing (it is created) or
// empty; if anything fails, what the clone put there is removed again.
func (s *Service) Clone(ctx context.Context, req sandboxapi.GitCloneRequest) (sandboxapi.GitCloneResult, error) {
	var res sandboxapi.GitCloneResult
	rm, urlCreds, err := parseRemote(req.URL)
	if err != nil {
		return res, err
	}
	if req.Credentials, err = withURLCredentials(urlCreds, req.Credentials); err != nil {
		return res, err
	}
	c, err := credentials(req.Credentials, rm)
	if err != nil {
		return res, err
	}
	if req.Ref != "" {
		if err := checkRev("ref", req.Ref); err != nil {
			return res, err
		}
	}
	if req.Branch != "" {
		if err := checkBranchName("branch", req.Branch); err != nil {
			return res, err
		}
	}
	if req.Depth < 0 || req.Depth > maxDepth {
		return res, errdefs.Invalidf("depth must be between 0 and %d", maxDepth)
	}
	t, err := timeout(req.TimeoutMS, DefaultRemoteTimeout)
	if err != nil {
		return res, err
	}
	p := req.Path
	if p == "" {
		p = sandboxapi.DefaultGitPath
	}
	// The target's lock (by its host path, as the other commands take it)
	// before it is checked: two clones into one directory must not both
	// find it empty, nor one clean up after the other.
	unlock, err := s.lock(ctx, filepath.Join(s.root.Dir(), path.Clean("/"+p)))
	if err != nil {
		return res, err
	}
	defer unlock()
	created, err := s.prepareCloneDir(ctx, p)
	if err != nil {
		return res, err
	}
	r, err := s.open(p)
	if err != nil {
		return res, err
	}
	ok := false
	defer func() {
		if !ok {
			s.undoClone(context.WithoutCancel(ctx), p, created)
		}
	}()

	// A ref that may be a commit id cannot go to --branch; clone without
	// checking out, then check it out as checkout does (a branch of that
	// name still wins). Everything else is a branch or tag for --branch.
	byID := req.Ref != "" && hexRev.MatchString(req.Ref) && req.Depth == 0
	args := []string{"clone", "--quiet"}
	if req.Depth > 0 {
		args = append(args, "--depth", strconv.Itoa(req.Depth))
	}
	switch {
	case byID:
		args = append(args, "--no-checkout")
	case req.Ref != "":
		args = append(args, "--branch", req.Ref)
	}
	args = append(args, "--", rm.url, r.dir)
	if _, err := s.run(ctx, gitCmd{dir: r.dir, args: args, timeout: t, creds: c}); err != nil {
		if strings.Contains(err.Error(), "not found in upstream") {
			hint := ""
			if hexRev.MatchString(req.Ref) {
				hint = "; a commit id needs a full clone (depth 0)"
			}
			return res, errdefs.Wrap(errdefs.ErrUnprocessable, err, fmt.Sprintf("ref %q is not a branch or tag of %s%s", req.Ref, redactURL(rm.url), hint))
		}
		return res, classify(r.path, err)
	}
	if byID {
		if err := s.checkout(ctx, r, t, req.Ref); err != nil {
			return res, err
		}
	}
	if req.Branch != "" {
		if _, err := s.git(ctx, r, t, false, "switch", "--quiet", "--create", req.Branch); err != nil {
			return res, err
		}
	}
	res.Path = r.path
	if res.Branch, res.Head, err = s.head(ctx, r, t); err != nil {
		return res, err
	}
	ok = true
	return res, nil
}

// prepareCloneDir makes sure p is an empty directory and reports whether
// it created it.
func (s *Service) prepareCloneDir(ctx context.Context, p string) (created bool, err error) {
	fi, err := s.root.Stat(p)
	switch {
	case isNotExist(err):
		_, created, err := s.root.Mkdir(p, true)
		return created, err
	case err != nil:
		return false, err
	case fi.Type != sandboxapi.FileTypeDir && fi.Type != sandboxapi.FileTypeSymlink:
		return false, errdefs.Conflictf("%q exists and is not a directory", p)
	}
	entries, _, err := s.root.List(ctx, p, 1)
	if err != nil {
		return false, err
	}
	if len(entries) > 0 {
		return false, errdefs.Conflictf("%q is not empty: clone needs a missing or empty directory", p)
	}
	return false, nil
}

// undoClone removes what a failed clone left in p: p itself when the
// clone created it, else everything in it (it was empty before).
func (s *Service) undoClone(ctx context.Context, p string, created bool) {
	if created {
		if err := s.root.Remove(p, true); err != nil && !isNotExist(err) {
			s.log.Warn("git clone: removing the failed clone", "path", p, "err", err)
		}
		return
	}
	entries, _, err := s.root.List(ctx, p, 1)
	if err != nil {
		return
	}
	for _, e := range entries {
		if err := s.root.Remove(path.Join(p, e.Name), true); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			s.log.Warn("git clone: removing the failed clone", "path", e.Path, "err", err)
		}
	}
}
