package sandboxd

import (
	"net/http"
	"strconv"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/sandboxd/gitops"
)

// gitAPI serves /v1/git/* (the repository workflow) over the files root
// with package gitops. Every route takes the repository directory as
// `path` (in the body of a POST, the query of a GET), a sandbox path like
// the files API's, /workspace when absent, and `timeout_ms` (default 60 s,
// 10 min for clone and push, at most 1 h); git is killed when the timeout
// passes or the client goes away.
//
//	POST /v1/git/clone     GitCloneRequest → 201 GitCloneResult
//	GET  /v1/git/status    → GitStatus
//	GET  /v1/git/diff      ?base=&staged=&paths=&max_bytes= → text/x-diff
//	GET  /v1/git/branches  ?all= → GitBranchList
//	POST /v1/git/branches  GitCreateBranchRequest → 201 GitHead
//	POST /v1/git/checkout  GitCheckoutRequest → GitHead
//	POST /v1/git/add       GitAddRequest → 204
//	POST /v1/git/commit    GitCommitRequest → 201 GitCommitResult
//	POST /v1/git/push      GitPushRequest → GitPushResult
//	GET  /v1/git/log       ?ref=&limit= → GitLog
//
// The diff is binary-safe and applies with `git apply`: by default the
// work tree against the index (`git diff`); staged=true the index against
// HEAD, or against base; base=<rev> alone the whole work tree, untracked
// files included, against that commit — a job's changes.patch — computed
// in a temporary index, so neither HEAD nor the index moves.
//
// Statuses (package gitops picks the classes; problem.Write maps them):
//
//	400  malformed body or parameter; a ref, branch or remote name, URL,
//	     path or identity that is not valid; credentials for a non-HTTP
//	     URL; a file where the repository directory is expected
//	403  a path escaping the root (or, for add and diff paths, the
//	     repository)
//	404  a missing path, or no git repository there
//	409  clone into a non-empty directory; a branch that exists; local
//	     changes a checkout would overwrite; nothing to commit; unmerged
//	     files; a push the remote rejected (non-fast-forward, hook); a git
//	     lock held by another process
//	413  a body over 1 MiB; a diff over max_bytes
//	422  an unknown ref or revision; a remote that is unreachable, missing
//	     or refuses the credentials; a path git does not know; no git
//	503  git routes unavailable (the daemon cannot name its own
//	     executable as git's askpass program)
//	504  the timeout passed
//
// Messages quote git's own, scrubbed of credentials and of any URL's
// userinfo. Credentials are served to git through an askpass socket for
// the one command that needs them (see package gitops).
type gitAPI struct {
	svc *gitops.Service
}

// newGitAPI builds the git routes' handlers over the files root. A
// failure (no own executable to serve as askpass) leaves git routes
// answering 503 rather than stopping the daemon.
func newGitAPI(s *Server) *gitAPI {
	svc, err := gitops.New(s.files.root, gitops.Options{Logger: s.log})
	if err != nil {
		s.log.Error("git routes unavailable", "err", err)
	}
	return &gitAPI{svc: svc}
}

func (g *gitAPI) service() (*gitops.Service, error) {
	if g.svc == nil {
		return nil, errdefs.Unavailablef("git support is not available in this daemon")
	}
	return g.svc, nil
}

// clone serves POST /v1/git/clone.
func (g *gitAPI) clone(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.GitCloneRequest
	svc, err := g.decode(w, r, &req)
	if err != nil {
		return err
	}
	res, err := svc.Clone(r.Context(), req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusCreated, res)
	return nil
}

// status serves GET /v1/git/status.
func (g *gitAPI) status(w http.ResponseWriter, r *http.Request) error {
	svc, err := g.service()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	t, err := queryInt(q.Get("timeout_ms"), 0, "timeout_ms")
	if err != nil {
		return err
	}
	st, err := svc.Status(r.Context(), q.Get("path"), t)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, st)
	return nil
}

// diff serves GET /v1/git/diff as text/x-diff; an empty body is no change.
func (g *gitAPI) diff(w http.ResponseWriter, r *http.Request) error {
	svc, err := g.service()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	o := gitops.DiffOptions{Path: q.Get("path"), Base: q.Get("base"), Paths: q["paths"]}
	if o.Staged, err = queryBool(q.Get("staged"), "staged"); err != nil {
		return err
	}
	if o.MaxBytes, err = queryInt(q.Get("max_bytes"), 0, "max_bytes"); err != nil {
		return err
	}
	if o.TimeoutMS, err = queryInt(q.Get("timeout_ms"), 0, "timeout_ms"); err != nil {
		return err
	}
	patch, err := svc.Diff(r.Context(), o)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/x-diff")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(patch)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(patch)
	return nil
}

// branches serves GET /v1/git/branches.
func (g *gitAPI) branches(w http.ResponseWriter, r *http.Request) error {
	svc, err := g.service()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	all, err := queryBool(q.Get("all"), "all")
	if err != nil {
		return err
	}
	t, err := queryInt(q.Get("timeout_ms"), 0, "timeout_ms")
	if err != nil {
		return err
	}
	list, err := svc.Branches(r.Context(), q.Get("path"), all, t)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, list)
	return nil
}

// createBranch serves POST /v1/git/branches.
func (g *gitAPI) createBranch(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.GitCreateBranchRequest
	svc, err := g.decode(w, r, &req)
	if err != nil {
		return err
	}
	res, err := svc.CreateBranch(r.Context(), req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusCreated, res)
	return nil
}

// checkout serves POST /v1/git/checkout.
func (g *gitAPI) checkout(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.GitCheckoutRequest
	svc, err := g.decode(w, r, &req)
	if err != nil {
		return err
	}
	res, err := svc.Checkout(r.Context(), req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, res)
	return nil
}

// add serves POST /v1/git/add; 204.
func (g *gitAPI) add(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.GitAddRequest
	svc, err := g.decode(w, r, &req)
	if err != nil {
		return err
	}
	if err := svc.Add(r.Context(), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// commit serves POST /v1/git/commit.
func (g *gitAPI) commit(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.GitCommitRequest
	svc, err := g.decode(w, r, &req)
	if err != nil {
		return err
	}
	res, err := svc.Commit(r.Context(), req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusCreated, res)
	return nil
}

// push serves POST /v1/git/push.
func (g *gitAPI) push(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.GitPushRequest
	svc, err := g.decode(w, r, &req)
	if err != nil {
		return err
	}
	res, err := svc.Push(r.Context(), req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, res)
	return nil
}

// log serves GET /v1/git/log.
func (g *gitAPI) log(w http.ResponseWriter, r *http.Request) error {
	svc, err := g.service()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	o := gitops.LogOptions{Path: q.Get("path"), Ref: q.Get("ref")}
	limit, err := queryInt(q.Get("limit"), 0, "limit")
	if err != nil {
		return err
	}
	o.Limit = int(min(limit, gitops.MaxLogLimit+1)) // larger is refused, without overflowing int
	if o.TimeoutMS, err = queryInt(q.Get("timeout_ms"), 0, "timeout_ms"); err != nil {
		return err
	}
	log, err := svc.Log(r.Context(), o)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, log)
	return nil
}

// decode reads a JSON body into v (httpjson.DefaultLimit, 1 MiB: enough
// for a commit message) and returns the service.
func (g *gitAPI) decode(w http.ResponseWriter, r *http.Request, v any) (*gitops.Service, error) {
	svc, err := g.service()
	if err != nil {
		return nil, err
	}
	if err := httpjson.Decode(w, r, v, 0); err != nil {
		return nil, err
	}
	return svc, nil
}
