package gitops

import (
	"context"
	"strings"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// The identity of commits whose request names no author, in a repository
// whose configuration has none either.
const (
	DefaultAuthorName  = "Corral"
	DefaultAuthorEmail = "corral@localhost"
)

// CreateBranch creates branch req.Name at req.From (HEAD when empty),
// without an upstream, and switches to it with req.Checkout.
func (s *Service) CreateBranch(ctx context.Context, req sandboxapi.GitCreateBranchRequest) (sandboxapi.GitHead, error) {
	var res sandboxapi.GitHead
	if err := checkBranchName("name", req.Name); err != nil {
		return res, err
	}
	from := req.From
	if from == "" {
		from = "HEAD"
	}
	t, err := timeout(req.TimeoutMS, DefaultLocalTimeout)
	if err != nil {
		return res, err
	}
	r, err := s.open(req.Path)
	if err != nil {
		return res, err
	}
	unlock, err := s.lock(ctx, r.dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	commit, err := s.resolveCommit(ctx, r, t, "from", from)
	if err != nil {
		return res, err
	}
	if req.Checkout {
		_, err = s.git(ctx, r, t, false, "switch", "--quiet", "--no-track", "--create", req.Name, "--end-of-options", commit)
	} else {
		_, err = s.git(ctx, r, t, false, "branch", "--no-track", "--end-of-options", req.Name, commit)
	}
	if err != nil {
		return res, err
	}
	return sandboxapi.GitHead{Branch: req.Name, Head: commit}, nil
}

// Checkout switches to req.Ref, or with req.Create to a new branch made at
// req.From. It never discards local changes: a switch that would is
// ErrConflict.
func (s *Service) Checkout(ctx context.Context, req sandboxapi.GitCheckoutRequest) (sandboxapi.GitHead, error) {
	if req.Create {
		return s.CreateBranch(ctx, sandboxapi.GitCreateBranchRequest{
			Path: req.Path, Name: req.Ref, From: req.From, Checkout: true, TimeoutMS: req.TimeoutMS,
		})
	}
	var res sandboxapi.GitHead
	if req.From != "" {
		return res, errdefs.Invalidf("from applies only with create")
	}
	if err := checkRev("ref", req.Ref); err != nil {
		return res, err
	}
	t, err := timeout(req.TimeoutMS, DefaultLocalTimeout)
	if err != nil {
		return res, err
	}
	r, err := s.open(req.Path)
	if err != nil {
		return res, err
	}
	unlock, err := s.lock(ctx, r.dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	if err := s.checkout(ctx, r, t, req.Ref); err != nil {
		return res, err
	}
	res.Branch, res.Head, err = s.head(ctx, r, t)
	return res, err
}

// checkout switches r to ref: a local branch, a remote's branch of that
// name (as a new tracking branch), else any commit, detached.
func (s *Service) checkout(ctx context.Context, r repo, t time.Duration, ref string) error {
	if checkBranchName("ref", ref) == nil {
		_, err := s.git(ctx, r, t, false, "switch", "--quiet", "--end-of-options", ref)
		if err == nil {
			return nil
		}
		if msg := err.Error(); !strings.Contains(msg, "a branch is expected") && !strings.Contains(msg, "invalid reference") {
			return err
		}
	}
	commit, err := s.resolveCommit(ctx, r, t, "ref", ref)
	if err != nil {
		return err
	}
	_, err = s.git(ctx, r, t, false, "switch", "--quiet", "--detach", "--end-of-options", commit)
	return err
}

// Add stages req.Paths, or everything with req.All (new and deleted files
// included).
func (s *Service) Add(ctx context.Context, req sandboxapi.GitAddRequest) error {
	switch {
	case req.All && len(req.Paths) > 0:
		return errdefs.Invalidf("give paths or all, not both")
	case !req.All && len(req.Paths) == 0:
		return errdefs.Invalidf("paths (or all) is required")
	}
	if err := checkRelPaths(req.Paths); err != nil {
		return err
	}
	t, err := timeout(req.TimeoutMS, DefaultLocalTimeout)
	if err != nil {
		return err
	}
	r, err := s.open(req.Path)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx, r.dir)
	if err != nil {
		return err
	}
	defer unlock()
	_, err = s.local(ctx, r, gitCmd{
		args:    append([]string{"add", "--all", "--"}, req.Paths...),
		env:     []string{"GIT_LITERAL_PATHSPECS=1"},
		timeout: t,
	})
	return err
}

// Commit records the staged changes (every change with req.All). Nothing
// to commit is ErrConflict unless req.AllowEmpty.
func (s *Service) Commit(ctx context.Context, req sandboxapi.GitCommitRequest) (sandboxapi.GitCommitResult, error) {
	var res sandboxapi.GitCommitResult
	switch {
	case strings.TrimSpace(req.Message) == "":
		return res, errdefs.Invalidf("message is required")
	case len(req.Message) > maxMessageLen || strings.IndexByte(req.Message, 0) >= 0:
		return res, errdefs.Invalidf("message must be at most %d bytes, without NUL", maxMessageLen)
	}
	if err := checkIdentity(req.Author); err != nil {
		return res, err
	}
	t, err := timeout(req.TimeoutMS, DefaultLocalTimeout)
	if err != nil {
		return res, err
	}
	r, err := s.open(req.Path)
	if err != nil {
		return res, err
	}
	unlock, err := s.lock(ctx, r.dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	if req.All {
		if _, err := s.git(ctx, r, t, false, "add", "--all"); err != nil {
			return res, err
		}
	}
	if !req.AllowEmpty {
		_, err := s.git(ctx, r, t, true, "diff", "--cached", "--quiet", "--no-ext-diff")
		switch {
		case err == nil:
			hint := "stage changes with add, or set all"
			if req.All {
				hint = "the work tree has no changes"
			}
			return res, errdefs.Conflictf("nothing to commit: %s (or set allow_empty)", hint)
		case !exitCode(err, 1):
			return res, err
		}
	}
	env, err := s.identity(ctx, r, t, req.Author)
	if err != nil {
		return res, err
	}
	args := []string{"commit", "--quiet", "--no-verify", "--file=-"}
	if req.AllowEmpty {
		args = append(args, "--allow-empty")
	}
	if _, err := s.local(ctx, r, gitCmd{args: args, env: env, stdin: req.Message, timeout: t}); err != nil {
		return res, err
	}
	res.Branch, res.Commit, err = s.head(ctx, r, t)
	return res, err
}

// identity is the environment naming a commit's author and committer: id,
// or what the repository configures, completed with the defaults.
func (s *Service) identity(ctx context.Context, r repo, t time.Duration, id *sandboxapi.GitIdentity) ([]string, error) {
	if id != nil {
		return []string{
			"GIT_AUTHOR_NAME=" + id.Name, "GIT_AUTHOR_EMAIL=" + id.Email,
			"GIT_COMMITTER_NAME=" + id.Name, "GIT_COMMITTER_EMAIL=" + id.Email,
		}, nil
	}
	var env []string
	for _, k := range []struct{ key, def, author, committer string }{
		{"user.name", DefaultAuthorName, "GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"},
		{"user.email", DefaultAuthorEmail, "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"},
	} {
		_, err := s.git(ctx, r, t, true, "config", "--get", k.key)
		switch {
		case exitCode(err, 1):
			env = append(env, k.author+"="+k.def, k.committer+"="+k.def)
		case err != nil:
			return nil, err
		}
	}
	return env, nil
}
