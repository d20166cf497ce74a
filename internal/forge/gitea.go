package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Gitea opens pull requests through the API of a Gitea or Forgejo server
// (/api/v1). It is safe for concurrent use; each call authenticates with
// the token it is given ("Authorization: token").
type Gitea struct {
	server
	api
}

var _ Forge = (*Gitea)(nil)

// giteaSession is one CreatePullRequest's calls. The SDK takes the context
// as a setting of the client, set before each call.
type giteaSession struct {
	caller
	c    *gitea.Client
	repo Repo
}

// giteaPageSize is how many pull requests a listing asks for at a time:
// the most a Gitea server gives by default (MAX_RESPONSE_ITEMS).
const giteaPageSize = 50

// giteaMaxPages bounds the search for the open pull request of a head.
const giteaMaxPages = 20

// NewGitea returns a Gitea forge for the server at baseURL (its API's URL,
// .../api/v1, is taken too) making requests with hc.
func NewGitea(baseURL string, hc *http.Client) (*Gitea, error) {
	srv, err := newServer(EnvGiteaURL, "a Gitea or Forgejo server", baseURL, "/api/v1", hc)
	if err != nil {
		return nil, err
	}
	return &Gitea{server: srv, api: api{name: "Gitea at " + srv.host, repo: "repository", pr: "pull request",
		perm: "the write:repository scope and write access to the repository"}}, nil
}

// CreatePullRequest opens pr, or returns the pull request already open from
// its head into its base (PR.Existed). An empty Base means the repository's
// default branch.
func (g *Gitea) CreatePullRequest(ctx context.Context, pr PullRequest) (*PR, error) {
	repo, err := checkRequest(pr)
	if err != nil {
		return nil, err
	}
	repo = repo.within(g.root)
	if err := g.flat(repo); err != nil {
		return nil, err
	}
	// SetGiteaVersion("") skips the version request NewClient would make:
	// the calls used are in every Gitea and Forgejo release.
	c, err := gitea.NewClient(g.url, gitea.SetHTTPClient(g.hc), gitea.SetToken(pr.Token), gitea.SetGiteaVersion(""))
	if err != nil {
		return nil, errdefs.Invalidf("%s: bad Gitea URL", EnvGiteaURL)
	}
	return open(ctx, g.api, repo.FullName(), &giteaSession{caller: caller{g.api, pr.Token}, c: c, repo: repo}, pr)
}

func (s *giteaSession) defaultBranch(ctx context.Context) (string, error) {
	s.c.SetContext(ctx)
	r, resp, err := s.c.GetRepo(s.repo.Owner, s.repo.Name)
	if err != nil {
		return "", giteaErr(resp, err)
	}
	return r.DefaultBranch, nil
}

func (s *giteaSession) create(ctx context.Context, pr PullRequest, base string) (*PR, error) {
	s.c.SetContext(ctx)
	created, resp, err := s.c.CreatePullRequest(s.repo.Owner, s.repo.Name, gitea.CreatePullRequestOption{
		Head: pr.Head, Base: base, Title: pr.Title, Body: pr.Body,
	})
	if err != nil {
		return nil, giteaErr(resp, err)
	}
	return &PR{Number: int(created.Index), URL: created.HTMLURL}, nil
}

// exists reports Gitea's 409 "pull request already exists for these
// targets [...]".
func (s *giteaSession) exists(err error) bool {
	var ge *giteaStatus
	return errors.As(err, &ge) && ge.status == http.StatusConflict && strings.Contains(ge.msg, "already exists")
}

// findOpen pages through the open pull requests, as Gitea's listing has no
// filter by head.
func (s *giteaSession) findOpen(ctx context.Context, head, base string) (*PR, error) {
	owner, branch, ok := strings.Cut(head, ":")
	if !ok {
		owner, branch = s.repo.Owner, head
	}
	s.c.SetContext(ctx)
	for page := 1; page <= giteaMaxPages; page++ {
		prs, resp, err := s.c.ListRepoPullRequests(s.repo.Owner, s.repo.Name, gitea.ListPullRequestsOptions{
			State: gitea.StateOpen, ListOptions: gitea.ListOptions{Page: page, PageSize: giteaPageSize},
		})
		if err != nil {
			return nil, giteaErr(resp, err)
		}
		for _, p := range prs {
			if p.Head != nil && p.Head.Ref == branch && p.Base != nil && p.Base.Ref == base && strings.EqualFold(headOwner(p), owner) {
				return &PR{Number: int(p.Index), URL: p.HTMLURL}, nil
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
	}
	return nil, nil
}

// headOwner is the owner of the repository p's head is in, "" if unknown
// (a deleted fork).
func headOwner(p *gitea.PullRequest) string {
	if p.Head.Repository == nil || p.Head.Repository.Owner == nil {
		return ""
	}
	return p.Head.Repository.Owner.UserName
}

// giteaStatus is an error status Gitea answered with. The SDK's errors are
// plain text, the server's message; the status is in its response.
type giteaStatus struct {
	status int
	msg    string
}

func (e *giteaStatus) Error() string { return fmt.Sprintf("%d %s", e.status, e.msg) }

// giteaErr is err, an SDK error, as a *giteaStatus when Gitea answered
// with an error status.
func giteaErr(resp *gitea.Response, err error) error {
	if resp == nil || resp.Response == nil || resp.StatusCode < 400 {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), resp.Status+": ")
	if strings.HasPrefix(msg, "unknown API error") { // not JSON: a proxy's page
		msg = ""
	}
	return &giteaStatus{status: resp.StatusCode, msg: msg}
}

// fail turns an SDK error into an *Error.
func (s *giteaSession) fail(op string, err error) error {
	var ge *giteaStatus
	if errors.As(err, &ge) {
		return s.statusError(op, ge.status, ge.msg, s.token)
	}
	return s.transportError(op, err, s.token)
}
