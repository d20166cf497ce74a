package sandboxapi

import "time"

// DefaultGitPath is the repository directory a /v1/git/* request works on
// when it names none: the sandbox's workspace.
const DefaultGitPath = "/workspace"

// GitCredentials authenticate one clone or push over HTTP(S). They serve
// that one git command and are released only to the host of its URL; they
// are never written to disk, put on a command line, logged or returned.
// Username defaults to "x-access-token" (what GitHub expects with a token;
// most servers accept any name with a token).
type GitCredentials struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password"`
}

// GitIdentity names a commit's author (and committer).
type GitIdentity struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// GitCloneRequest is the body of POST /v1/git/clone. Path is the directory
// to clone into (DefaultGitPath when empty); it must be missing or empty.
// Ref is a branch, tag or commit id to check out (the remote's default
// branch when empty); a commit id cannot be combined with Depth. Branch,
// when set, is created at the checked-out commit and checked out. URL is
// http(s)://, ssh://, git:// or scp-like user@host:path. The userinfo of
// an http(s) URL is taken out of it (git's configuration never holds it):
// user:password becomes the Credentials, a user name alone names
// Credentials' user, or without Credentials is a token (https://TOKEN@host).
type GitCloneRequest struct {
	URL         string          `json:"url"`
	Path        string          `json:"path,omitempty"`
	Ref         string          `json:"ref,omitempty"`
	Depth       int             `json:"depth,omitempty"`
	Branch      string          `json:"branch,omitempty"`
	Credentials *GitCredentials `json:"credentials,omitempty"`
	TimeoutMS   int64           `json:"timeout_ms,omitempty"`
}

// GitCloneResult answers POST /v1/git/clone: the repository's path, the
// commit checked out (the base a job's changes are diffed against) and the
// branch checked out ("" when HEAD is detached at a tag or commit).
type GitCloneResult struct {
	Path   string `json:"path"`
	Head   string `json:"head"`
	Branch string `json:"branch"`
}

// Values of GitFileStatus.Index and GitFileStatus.Worktree; "" is unchanged.
const (
	GitModified    = "modified"
	GitAdded       = "added"
	GitDeleted     = "deleted"
	GitRenamed     = "renamed"
	GitCopied      = "copied"
	GitTypeChanged = "type_changed"
	GitUntracked   = "untracked" // Worktree only
	GitUnmerged    = "unmerged"
)

// GitFileStatus is one changed path, relative to the repository's top
// level. Index is the staged change (against HEAD), Worktree the unstaged
// one (against the index). OrigPath is the source of a rename or copy.
type GitFileStatus struct {
	Path     string `json:"path"`
	OrigPath string `json:"orig_path,omitempty"`
	Index    string `json:"index"`
	Worktree string `json:"worktree"`
}

// GitStatus answers GET /v1/git/status. Branch is "" when HEAD is
// detached; Head is "" before the first commit. Ahead and Behind count
// commits against Upstream, when the branch has one. Files lists every
// change, untracked files one by one; Truncated says the list stopped at
// the server's cap. Clean is true when nothing is changed or untracked.
type GitStatus struct {
	Path      string          `json:"path"`
	Branch    string          `json:"branch"`
	Head      string          `json:"head"`
	Upstream  string          `json:"upstream,omitempty"`
	Ahead     int             `json:"ahead"`
	Behind    int             `json:"behind"`
	Files     []GitFileStatus `json:"files"`
	Truncated bool            `json:"truncated,omitempty"`
	Clean     bool            `json:"clean"`
}

// GitBranch is one branch. Remote is true for a remote-tracking branch
// ("origin/main"); Current for the one checked out.
type GitBranch struct {
	Name     string `json:"name"`
	Head     string `json:"head"`
	Upstream string `json:"upstream,omitempty"`
	Current  bool   `json:"current,omitempty"`
	Remote   bool   `json:"remote,omitempty"`
}

// GitBranchList answers GET /v1/git/branches. Current is the branch
// checked out, "" when HEAD is detached.
type GitBranchList struct {
	Current  string      `json:"current"`
	Branches []GitBranch `json:"branches"`
}

// GitCreateBranchRequest is the body of POST /v1/git/branches: create
// branch Name at From (HEAD when empty) and, with Checkout, switch to it.
type GitCreateBranchRequest struct {
	Path      string `json:"path,omitempty"`
	Name      string `json:"name"`
	From      string `json:"from,omitempty"`
	Checkout  bool   `json:"checkout,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

// GitCheckoutRequest is the body of POST /v1/git/checkout. Ref is a
// branch (a remote's branch of that name is checked out as a new tracking
// branch), or a tag or commit (HEAD is then detached). With Create, Ref is
// a new branch made at From (HEAD when empty). Local changes that would be
// overwritten make it fail; nothing is ever discarded.
type GitCheckoutRequest struct {
	Path      string `json:"path,omitempty"`
	Ref       string `json:"ref"`
	Create    bool   `json:"create,omitempty"`
	From      string `json:"from,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

// GitHead answers POST /v1/git/branches and POST /v1/git/checkout: the
// branch and commit now concerned (for a created branch without checkout,
// that branch, not HEAD).
type GitHead struct {
	Branch string `json:"branch"`
	Head   string `json:"head"`
}

// GitAddRequest is the body of POST /v1/git/add: stage Paths (relative to
// Path, taken literally, no globs), or with All every change in the work
// tree, new and deleted files included.
type GitAddRequest struct {
	Path      string   `json:"path,omitempty"`
	Paths     []string `json:"paths,omitempty"`
	All       bool     `json:"all,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
}

// GitCommitRequest is the body of POST /v1/git/commit. All stages every
// change first, new files included (unlike `git commit -a`). Author is
// also the committer; without it the repository's configured identity is
// used, or "Corral <corral@localhost>" when it has none. AllowEmpty
// permits a commit without changes.
type GitCommitRequest struct {
	Path       string       `json:"path,omitempty"`
	Message    string       `json:"message"`
	Author     *GitIdentity `json:"author,omitempty"`
	All        bool         `json:"all,omitempty"`
	AllowEmpty bool         `json:"allow_empty,omitempty"`
	TimeoutMS  int64        `json:"timeout_ms,omitempty"`
}

// GitCommitResult answers POST /v1/git/commit.
type GitCommitResult struct {
	Commit string `json:"commit"`
	Branch string `json:"branch"`
}

// GitPushRequest is the body of POST /v1/git/push: push local Branch (the
// current one when empty) to RemoteBranch (the same name when empty) of
// Remote ("origin" when empty), or of URL when set. Credentials are
// released only to URL's host, or to the host of the remote's configured
// URL: pass URL to pin the destination when the repository's
// configuration may have been changed by someone else. URL's userinfo is
// handled as in GitCloneRequest. SetUpstream records
// the remote branch as the branch's upstream. Force overwrites the remote
// branch even when that loses commits.
type GitPushRequest struct {
	Path         string          `json:"path,omitempty"`
	Remote       string          `json:"remote,omitempty"`
	URL          string          `json:"url,omitempty"`
	Branch       string          `json:"branch,omitempty"`
	RemoteBranch string          `json:"remote_branch,omitempty"`
	SetUpstream  bool            `json:"set_upstream,omitempty"`
	Force        bool            `json:"force,omitempty"`
	Credentials  *GitCredentials `json:"credentials,omitempty"`
	TimeoutMS    int64           `json:"timeout_ms,omitempty"`
}

// GitPushResult answers POST /v1/git/push. Remote is the remote's name or
// the URL pushed to; Commit the commit the remote branch now has.
// UpToDate is true when the remote already had it.
type GitPushResult struct {
	Remote       string `json:"remote"`
	Branch       string `json:"branch"`
	RemoteBranch string `json:"remote_branch"`
	Commit       string `json:"commit"`
	UpToDate     bool   `json:"up_to_date"`
}

// GitCommit is one commit of GET /v1/git/log.
type GitCommit struct {
	SHA     string    `json:"sha"`
	Parents []string  `json:"parents"`
	Author  string    `json:"author"`
	Email   string    `json:"email"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
}

// GitLog answers GET /v1/git/log, newest first.
type GitLog struct {
	Commits []GitCommit `json:"commits"`
}
