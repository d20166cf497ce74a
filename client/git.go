package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// The repository workflow (/v1/git/*). Every call works on the repository
// directory named by its path, a sandbox path like the files API's; ""
// means the daemon's default, sandboxapi.DefaultGitPath (/workspace).
// Errors the daemon reports match the usual classes: ErrConflict for a
// non-empty clone target, an existing branch, nothing to commit or a
// rejected push; ErrUnprocessable for an unknown ref or a remote that
// cannot be reached or refuses the credentials; ErrNotFound when there is
// no repository. Credentials travel in the request body and are used for
// that one command only.

// GitClone clones a repository into req.Path (missing or empty).
func (c *Client) GitClone(ctx context.Context, req sandboxapi.GitCloneRequest) (*sandboxapi.GitCloneResult, error) {
	var res sandboxapi.GitCloneResult
	if err := c.call(ctx, http.MethodPost, "/git/clone", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GitStatus describes the repository at path: branch, head, upstream
// distance and every changed or untracked file.
func (c *Client) GitStatus(ctx context.Context, path string) (*sandboxapi.GitStatus, error) {
	var st sandboxapi.GitStatus
	if err := c.call(ctx, http.MethodGet, "/git/status", pathQuery(path), nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// GitDiffOptions select a diff; the zero value is `git diff` (work tree
// against the index).
type GitDiffOptions struct {
	// Base diffs against that commit: the whole work tree, untracked files
	// included (a job's changes), or with Staged the index.
	Base string
	// Staged compares the index with HEAD (or with Base).
	Staged bool
	// Paths limit the diff, relative to the repository directory.
	Paths []string
	// MaxBytes caps the diff (the daemon's default when 0); a larger one
	// is ErrTooLarge.
	MaxBytes int64
}

// GitDiff returns a unified diff of the repository at path that `git
// apply` takes, binary changes included. No change is an empty diff.
func (c *Client) GitDiff(ctx context.Context, path string, opts GitDiffOptions) ([]byte, error) {
	q := pathQuery(path)
	if opts.Base != "" {
		q.Set("base", opts.Base)
	}
	if opts.Staged {
		q.Set("staged", "true")
	}
	if opts.MaxBytes > 0 {
		q.Set("max_bytes", strconv.FormatInt(opts.MaxBytes, 10))
	}
	if len(opts.Paths) > 0 {
		q["paths"] = opts.Paths
	}
	req, err := c.newRequest(ctx, http.MethodGet, c.endpoint("/git/diff", q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	patch, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: GET %s: reading the diff: %w", req.URL.Path, err)
	}
	return patch, nil
}

// GitBranches lists the local branches of the repository at path, and
// with all the remote-tracking ones too.
func (c *Client) GitBranches(ctx context.Context, path string, all bool) (*sandboxapi.GitBranchList, error) {
	q := pathQuery(path)
	if all {
		q.Set("all", "true")
	}
	var list sandboxapi.GitBranchList
	if err := c.call(ctx, http.MethodGet, "/git/branches", q, nil, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// GitCreateBranch creates a branch (and switches to it with
// req.Checkout).
func (c *Client) GitCreateBranch(ctx context.Context, req sandboxapi.GitCreateBranchRequest) (*sandboxapi.GitHead, error) {
	var res sandboxapi.GitHead
	if err := c.call(ctx, http.MethodPost, "/git/branches", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GitCheckout switches to a branch, tag or commit, or to a new branch
// with req.Create. Local changes are never discarded: a switch that would
// lose them is ErrConflict.
func (c *Client) GitCheckout(ctx context.Context, req sandboxapi.GitCheckoutRequest) (*sandboxapi.GitHead, error) {
	var res sandboxapi.GitHead
	if err := c.call(ctx, http.MethodPost, "/git/checkout", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GitAdd stages paths, or every change with req.All.
func (c *Client) GitAdd(ctx context.Context, req sandboxapi.GitAddRequest) error {
	return c.call(ctx, http.MethodPost, "/git/add", nil, req, nil)
}

// GitCommit commits the staged changes (every change with req.All).
func (c *Client) GitCommit(ctx context.Context, req sandboxapi.GitCommitRequest) (*sandboxapi.GitCommitResult, error) {
	var res sandboxapi.GitCommitResult
	if err := c.call(ctx, http.MethodPost, "/git/commit", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GitPush pushes a branch to a remote or URL.
func (c *Client) GitPush(ctx context.Context, req sandboxapi.GitPushRequest) (*sandboxapi.GitPushResult, error) {
	var res sandboxapi.GitPushResult
	if err := c.call(ctx, http.MethodPost, "/git/push", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GitLogOptions select the commits of GitLog.
type GitLogOptions struct {
	// Ref is where history starts (HEAD when empty); a range such as
	// "main..feature" works too.
	Ref string
	// Limit caps the commits (the daemon's default, 50, when 0).
	Limit int
}

// GitLog lists the commits of the repository at path, newest first.
func (c *Client) GitLog(ctx context.Context, path string, opts GitLogOptions) (*sandboxapi.GitLog, error) {
	q := pathQuery(path)
	if opts.Ref != "" {
		q.Set("ref", opts.Ref)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var log sandboxapi.GitLog
	if err := c.call(ctx, http.MethodGet, "/git/log", q, nil, &log); err != nil {
		return nil, err
	}
	return &log, nil
}

// pathQuery is the query naming a repository directory ("" for the
// daemon's default).
func pathQuery(path string) url.Values {
	q := url.Values{}
	if path != "" {
		q.Set("path", path)
	}
	return q
}
