package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/store"
)

// Secrets is what the job engine needs of the tenant secrets service
// (internal/secrets): values by name, for a job about to run.
type Secrets interface {
	Resolve(ctx context.Context, tenantID string, names []string) (map[string]string, error)
}

// The repository flow (seed 003): at creating, the repository is cloned
// into /workspace at repo.ref and the job's branch corral/<job id> is
// created there, the commit it starts from recorded as refs/corral/base
// (what changes.patch is diffed against); at completing, every change is
// committed with the agent's summary as the message, the branch is
// pushed, and a pull request is opened through the forge. The token of
// repo.secret serves the clone, the push and the pull request; it reaches
// sandboxd only in the body of the clone and push requests (sandboxd
// hands it to git through its askpass socket) and never the log.
const (
	baseRef        = "refs/corral/base"
	repoGitTimeout = 10 * time.Minute
	commitName     = "Corral"
	commitEmail    = "corral@localhost"
)

// Branch is the branch of job id's changes.
func Branch(jobID string) string { return "corral/" + jobID }

// resolveSecrets returns the values of the job's secrets and of its
// repository's token secret (by name), and adds them to the redactor.
func (r *runner) resolveSecrets(ctx context.Context, req *cpapi.JobRequest) (map[string]string, error) {
	names := append([]string{}, req.Secrets...)
	if req.Repo != nil && req.Repo.Secret != "" {
		names = append(names, req.Repo.Secret)
	}
	if len(names) == 0 {
		return nil, nil
	}
	if r.m.opts.Secrets == nil {
		return nil, &failure{reason: cpapi.ReasonInfra, msg: "this control plane has no secrets store"}
	}
	vals, err := r.m.opts.Secrets.Resolve(ctx, r.tenant, names)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &failure{reason: cpapi.ReasonSecret, msg: safeMessage(err, "reading the job's secrets failed"), err: err}
	}
	for _, v := range vals {
		r.addSecret(v)
	}
	return vals, nil
}

// repoToken is the repository's token, "" without one.
func (r *runner) repoToken(ctx context.Context, req *cpapi.JobRequest) (string, error) {
	if req.Repo == nil || req.Repo.Secret == "" {
		return "", nil
	}
	vals, err := r.resolveSecrets(ctx, &cpapi.JobRequest{Repo: req.Repo})
	if err != nil {
		return "", err
	}
	return vals[req.Repo.Secret], nil
}

func credentials(token string) *sandboxapi.GitCredentials {
	if token == "" {
		return nil
	}
	return &sandboxapi.GitCredentials{Password: token}
}

// prepareWorkspace readies the sandbox's workspace before the agent runs:
// for a repository job, the clone and the job's branch. A clone already
// there (the control plane stopped while creating) is kept if it is on
// the job's branch.
func (r *runner) prepareWorkspace(ctx context.Context, req *cpapi.JobRequest) error {
	if req.Repo == nil {
		return nil
	}
	token, err := r.repoToken(ctx, req)
	if err != nil {
		return err
	}
	cl, err := r.client(ctx)
	if err != nil {
		return err
	}
	branch := Branch(r.id)
	res, err := cl.GitClone(ctx, sandboxapi.GitCloneRequest{URL: req.Repo.URL, Path: runtime.WorkspaceDir, Ref: req.Repo.Ref,
		Branch: branch, Credentials: credentials(token), TimeoutMS: repoGitTimeout.Milliseconds()})
	head := ""
	switch {
	case err == nil:
		head = res.Head
	case errors.Is(err, client.ErrConflict):
		st, serr := cl.GitStatus(ctx, runtime.WorkspaceDir)
		if serr != nil || st.Branch != branch {
			return &failure{reason: cpapi.ReasonCloneFailed, msg: "the workspace is not empty and holds no clone of this job", err: err}
		}
		head = st.Head
	case errors.Is(err, client.ErrInvalid), errors.Is(err, client.ErrUnprocessable), errors.Is(err, client.ErrForbidden),
		errors.Is(err, client.ErrTimeout):
		return &failure{reason: cpapi.ReasonCloneFailed, msg: "cloning " + req.Repo.URL + " failed: " + apiDetail(err), err: err}
	default:
		return r.sandboxErr(ctx, err, "cloning the repository failed")
	}
	// The base of changes.patch: kept if it exists (a resumed job).
	if _, err := cl.Exec(ctx, sandboxapi.ExecRequest{Command: "git",
		Args: []string{"-C", runtime.WorkspaceDir, "update-ref", baseRef, head, ""}}); err != nil {
		return r.sandboxErr(ctx, err, "recording the base commit failed")
	}
	_ = r.emit(ctx, event(cpapi.EventMessage, cpapi.MessageData{Role: "system",
		Text: fmt.Sprintf("Cloned %s at %s into %s on branch %s.", req.Repo.URL, short(head), runtime.WorkspaceDir, branch)}))
	return nil
}

// complete ends a repository job's work in the sandbox: commit everything
// on the job's branch, push it, open the pull request; res gets the
// branch, the commit and the pull request's URL. Without changes there is
// no commit and no pull request, and the summary says so. Each step is
// safe to repeat after a crash: an existing commit is pushed again (a
// no-op) and the forge returns the open pull request.
func (r *runner) complete(ctx context.Context, req *cpapi.JobRequest, cl *client.Client, res *store.JobResult) error {
	if req.Repo == nil {
		return nil
	}
	token, err := r.repoToken(ctx, req)
	if err != nil {
		return err
	}
	branch := Branch(r.id)
	summary := strings.TrimSpace(res.Summary)
	title := firstLine(summary, 72)
	if title == "" {
		title = "Changes of Corral job " + r.id
	}
	commit, err := cl.GitCommit(ctx, sandboxapi.GitCommitRequest{Path: runtime.WorkspaceDir, All: true,
		Message: title + "\n\n" + summary + "\n\nCorral job " + r.id + "\n", Author: &sandboxapi.GitIdentity{Name: commitName, Email: commitEmail},
		TimeoutMS: repoGitTimeout.Milliseconds()})
	head := ""
	switch {
	case err == nil:
		head = commit.Commit
	case errors.Is(err, client.ErrConflict): // nothing to commit: maybe done before a crash
		st, serr := cl.GitStatus(ctx, runtime.WorkspaceDir)
		if serr != nil {
			return r.sandboxErr(ctx, serr, "reading the repository's status failed")
		}
		base, berr := r.baseCommit(ctx, cl)
		if berr != nil {
			return berr
		}
		if st.Head == base {
			res.Summary = strings.TrimSpace(res.Summary + "\n\nNo changes: nothing was committed and no pull request was opened.")
			return nil
		}
		head = st.Head
	default:
		return r.sandboxErr(ctx, err, "committing the changes failed")
	}
	res.Branch, res.Commit = branch, head
	if _, err := cl.GitPush(ctx, sandboxapi.GitPushRequest{Path: runtime.WorkspaceDir, URL: req.Repo.URL,
		Branch: branch, Credentials: credentials(token), TimeoutMS: repoGitTimeout.Milliseconds()}); err != nil {
		if errors.Is(err, client.ErrConflict) || errors.Is(err, client.ErrUnprocessable) || errors.Is(err, client.ErrInvalid) ||
			errors.Is(err, client.ErrForbidden) || errors.Is(err, client.ErrTimeout) {
			return &failure{reason: cpapi.ReasonPushFailed, msg: "pushing " + branch + " failed: " + apiDetail(err), err: err}
		}
		return r.sandboxErr(ctx, err, "pushing the branch failed")
	}
	if r.m.opts.Forge == nil || token == "" {
		res.Summary = strings.TrimSpace(res.Summary + "\n\nPushed " + branch + "; no pull request was opened (that needs a forge and repo.secret holding its token).")
		return nil
	}
	pr, err := r.m.opts.Forge.CreatePullRequest(ctx, forge.PullRequest{RepoURL: req.Repo.URL, Head: branch, Base: req.Repo.Ref,
		Title: title, Body: summary + "\n\n---\nOpened by Corral for job " + r.id + ".", Token: token})
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return &failure{reason: cpapi.ReasonPRFailed, msg: "opening the pull request failed: " + err.Error(), err: err}
	}
	res.PRURL = pr.URL
	return r.emit(ctx, event(cpapi.EventMessage, cpapi.MessageData{Role: "system",
		Text: fmt.Sprintf("Pushed %s (%s) and opened %s.", branch, short(head), pr.URL)}))
}

// baseCommit reads refs/corral/base.
func (r *runner) baseCommit(ctx context.Context, cl *client.Client) (string, error) {
	out, err := cl.Exec(ctx, sandboxapi.ExecRequest{Command: "git", Args: []string{"-C", runtime.WorkspaceDir, "rev-parse", "-q", "--verify", baseRef}})
	if err != nil {
		return "", r.sandboxErr(ctx, err, "reading the base commit failed")
	}
	return strings.TrimSpace(out.Stdout), nil
}

// agentEnv is the environment of the agent's processes: the job's env and
// its secrets.
func (r *runner) agentEnv(ctx context.Context, req *cpapi.JobRequest) (map[string]string, error) {
	env := make(map[string]string, len(req.Env)+len(req.Secrets))
	for k, v := range req.Env {
		env[k] = v
	}
	if len(req.Secrets) > 0 {
		vals, err := r.resolveSecrets(ctx, &cpapi.JobRequest{Secrets: req.Secrets})
		if err != nil {
			return nil, err
		}
		for _, n := range req.Secrets {
			env[n] = vals[n]
		}
	}
	return env, nil
}

func firstLine(s string, max int) string {
	line, _, _ := strings.Cut(s, "\n")
	line = strings.TrimSpace(line)
	if len(line) > max {
		line = strings.ToValidUTF8(line[:max-1], "") + "…"
	}
	return line
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
