package gitops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// DefaultRemote is the remote a push goes to when it names neither a
// remote nor a URL.
const DefaultRemote = "origin"

// Push pushes a local branch to a remote (or URL). A push the remote
// rejects (not a fast-forward, a hook declining it) is ErrConflict with
// the remote's reason; refused credentials are ErrUnprocessable.
func (s *Service) Push(ctx context.Context, req sandboxapi.GitPushRequest) (sandboxapi.GitPushResult, error) {
	var res sandboxapi.GitPushResult
	var dest remote // the destination when URL pins it
	var urlCreds *sandboxapi.GitCredentials
	switch {
	case req.URL != "" && req.Remote != "":
		return res, errdefs.Invalidf("give remote or url, not both")
	case req.URL != "":
		var err error
		if dest, urlCreds, err = parseRemote(req.URL); err != nil {
			return res, err
		}
		if req.Credentials, err = withURLCredentials(urlCreds, req.Credentials); err != nil {
			return res, err
		}
	case req.Remote == "":
		req.Remote = DefaultRemote
	}
	if req.Remote != "" {
		if err := checkRemoteName(req.Remote); err != nil {
			return res, err
		}
	}
	if req.Branch != "" {
		if err := checkBranchName("branch", req.Branch); err != nil {
			return res, err
		}
	}
	if req.RemoteBranch != "" {
		if err := checkBranchName("remote_branch", req.RemoteBranch); err != nil {
			return res, err
		}
	}
	if req.Credentials != nil && req.Credentials.Password == "" {
		return res, errdefs.Invalidf("credentials.password is required")
	}
	t, err := timeout(req.TimeoutMS, DefaultRemoteTimeout)
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

	if req.Branch == "" {
		if req.Branch, _, err = s.head(ctx, r, 0); err != nil {
			return res, err
		}
		if req.Branch == "" {
			return res, errdefs.Conflictf("HEAD is detached: name the branch to push")
		}
	}
	if req.RemoteBranch == "" {
		req.RemoteBranch = req.Branch
	}
	commit, err := s.git(ctx, r, 0, true, "rev-parse", "--verify", "--quiet", "refs/heads/"+req.Branch)
	if exitCode(err, 1) {
		return res, errdefs.Unprocessablef("branch %q does not exist", req.Branch)
	} else if err != nil {
		return res, err
	}
	target := dest.url
	if target == "" {
		target = req.Remote
	}
	var c *creds
	if req.Credentials != nil {
		if dest.url == "" {
			// The remote's URL as configured, before any insteadOf
			// rewriting: credentials go to that host or nowhere.
			if dest, err = s.remoteURL(ctx, r, req.Remote); err != nil {
				return res, err
			}
		}
		if c, err = credentials(req.Credentials, dest); err != nil {
			return res, err
		}
	}

	args := []string{"push", "--porcelain", "--no-verify"}
	if req.Force {
		args = append(args, "--force")
	}
	if req.SetUpstream {
		args = append(args, "--set-upstream")
	}
	dst := "refs/heads/" + req.RemoteBranch
	args = append(args, "--end-of-options", target, "refs/heads/"+req.Branch+":"+dst)
	out, err := s.run(ctx, gitCmd{dir: r.dir, args: args, timeout: t, creds: c})
	var f *gitFailure
	if errors.As(err, &f) {
		if flag, summary, ok := pushStatus(f.stdout, dst); ok && flag == "!" {
			if strings.Contains(summary, "fetch first") || strings.Contains(summary, "non-fast-forward") {
				summary += ": the remote branch has commits the local one lacks (force overwrites them)"
			}
			return res, errdefs.Wrap(errdefs.ErrConflict, f, fmt.Sprintf("push rejected: %s%s", summary, remoteMessages(f.stderr)))
		}
	}
	if err != nil {
		return res, classify(r.path, err)
	}
	flag, _, _ := pushStatus(string(out), dst)
	return sandboxapi.GitPushResult{
		Remote:       redactURL(target),
		Branch:       req.Branch,
		RemoteBranch: req.RemoteBranch,
		Commit:       strings.TrimSpace(commit),
		UpToDate:     flag == "=",
	}, nil
}

// remoteURL reads the push URL of remote name as configured.
func (s *Service) remoteURL(ctx context.Context, r repo, name string) (remote, error) {
	for _, key := range []string{"remote." + name + ".pushurl", "remote." + name + ".url"} {
		out, err := s.git(ctx, r, 0, true, "config", "--get", key)
		if exitCode(err, 1) {
			continue
		}
		if err != nil {
			return remote{}, err
		}
		rm, _, err := parseRemote(strings.TrimSpace(out))
		if err != nil {
			return remote{}, errdefs.Invalidf("remote %q: its URL is not one credentials can be sent to", name)
		}
		return rm, nil
	}
	return remote{}, errdefs.Unprocessablef("remote %q does not exist", name)
}

// pushStatus finds dst's line in `git push --porcelain` output
// ("<flag>\t<from>:<to>\t<summary>") and returns its flag and summary.
func pushStatus(out, dst string) (flag, summary string, ok bool) {
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) == 3 && strings.HasSuffix(f[1], ":"+dst) {
			return f[0], f[2], true
		}
	}
	return "", "", false
}

// remoteMessages collects what the remote said ("remote: ..." lines).
func remoteMessages(stderr string) string {
	var msgs []string
	for l := range strings.SplitSeq(stderr, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "remote:"); ok && strings.TrimSpace(m) != "" {
			msgs = append(msgs, strings.TrimSpace(m))
		}
	}
	if len(msgs) == 0 {
		return ""
	}
	s := "; remote: " + strings.Join(msgs, "; ")
	if len(s) > maxDetail {
		s = s[:maxDetail] + "..."
	}
	return s
}
