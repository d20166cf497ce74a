package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v75/github"

	"github.com/corral-sh/corral/internal/errdefs"
)

// GitHub opens pull requests through the GitHub REST API, on github.com or
// a GitHub Enterprise Server. It is safe for concurrent use; each call
// authenticates with the token it is given.
type GitHub struct {
	hc     *http.Client
	apiURL string   // "" for api.github.com
	hosts  []string // where its repositories are: the server's host
	api
}

var _ Forge = (*GitHub)(nil)

// githubSession is one CreatePullRequest's calls.
type githubSession struct {
	caller
	c    *github.Client
	repo Repo
}

// NewGitHub returns a GitHub forge for the API at apiURL ("" for
// api.github.com; see the package documentation for Enterprise) making
// requests with hc.
func NewGitHub(apiURL string, hc *http.Client) (*GitHub, error) {
	g := &GitHub{hc: hc, hosts: []string{"github.com"}, api: api{name: "GitHub", repo: "repository", pr: "pull request",
		perm: "write access to pull requests and contents"}}
	if hc == nil {
		g.hc = http.DefaultClient
	}
	if apiURL == "" {
		return g, nil
	}
	u, err := serverURL(EnvGitHubAPIURL, "the GitHub API", apiURL)
	if err != nil {
		return nil, err
	}
	if u.Host != "api.github.com" {
		g.apiURL, g.name = u.String(), "GitHub at "+u.Host
		// The API of GHE.com is at api.<subdomain>.ghe.com, its
		// repositories at <subdomain>.ghe.com.
		g.hosts = []string{u.Host}
		if h, ok := strings.CutPrefix(u.Host, "api."); ok {
			g.hosts = append(g.hosts, h)
		}
	}
	return g, nil
}

// repoHosts are the hosts of the repositories g serves.
func (g *GitHub) repoHosts() []string { return g.hosts }

// client is a go-github client for one call's token.
func (g *GitHub) client(token string) (*github.Client, error) {
	c := github.NewClient(g.hc).WithAuthToken(token)
	if g.apiURL == "" {
		return c, nil
	}
	// Adds /api/v3/ unless the URL already ends with it (or names an
	// api.* host).
	c, err := c.WithEnterpriseURLs(g.apiURL, g.apiURL)
	if err != nil {
		return nil, errdefs.Invalidf("%s: bad GitHub API URL", EnvGitHubAPIURL)
	}
	return c, nil
}

// CreatePullRequest opens pr, or returns the pull request already open for
// its head branch (PR.Existed). An empty Base means the repository's
// default branch.
func (g *GitHub) CreatePullRequest(ctx context.Context, pr PullRequest) (*PR, error) {
	repo, err := checkRequest(pr)
	if err != nil {
		return nil, err
	}
	if err := g.flat(repo); err != nil {
		return nil, err
	}
	c, err := g.client(pr.Token)
	if err != nil {
		return nil, err
	}
	return open(ctx, g.api, repo.FullName(), &githubSession{caller: caller{g.api, pr.Token}, c: c, repo: repo}, pr)
}

func (s *githubSession) defaultBranch(ctx context.Context) (string, error) {
	r, _, err := s.c.Repositories.Get(ctx, s.repo.Owner, s.repo.Name)
	return r.GetDefaultBranch(), err
}

func (s *githubSession) create(ctx context.Context, pr PullRequest, base string) (*PR, error) {
	created, _, err := s.c.PullRequests.Create(ctx, s.repo.Owner, s.repo.Name, &github.NewPullRequest{
		Title: github.Ptr(pr.Title), Head: github.Ptr(pr.Head), Base: github.Ptr(base), Body: github.Ptr(pr.Body),
	})
	if err != nil {
		return nil, err
	}
	return &PR{Number: created.GetNumber(), URL: created.GetHTMLURL()}, nil
}

// exists reports GitHub's 422 for a head that has an open pull request.
func (s *githubSession) exists(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	for _, e := range er.Errors {
		if strings.Contains(strings.ToLower(e.Message), "already exists") {
			return true
		}
	}
	return strings.Contains(strings.ToLower(er.Message), "already exists")
}

// findOpen lists by head only, as GitHub refuses a second pull request
// for a head whatever its base.
func (s *githubSession) findOpen(ctx context.Context, head, _ string) (*PR, error) {
	if !strings.Contains(head, ":") {
		head = s.repo.Owner + ":" + head
	}
	open, _, err := s.c.PullRequests.List(ctx, s.repo.Owner, s.repo.Name, &github.PullRequestListOptions{
		Head: head, State: "open", ListOptions: github.ListOptions{PerPage: 10},
	})
	if err != nil || len(open) == 0 {
		return nil, err
	}
	return &PR{Number: open[0].GetNumber(), URL: open[0].GetHTMLURL()}, nil
}

// fail turns a go-github error into an *Error. The go-github error is not
// kept as the cause: it holds the request, whose headers carry the token.
func (s *githubSession) fail(op string, err error) error {
	var (
		rate  *github.RateLimitError
		abuse *github.AbuseRateLimitError
		er    *github.ErrorResponse
	)
	switch {
	case errors.As(err, &rate):
		return s.rateLimited(op, statusOf(rate.Response), fmt.Sprintf("rate limit exceeded (resets at %s): %s",
			rate.Rate.Reset.UTC().Format("15:04:05 MST"), rate.Message), s.token)
	case errors.As(err, &abuse):
		return s.rateLimited(op, statusOf(abuse.Response), "secondary rate limit: "+abuse.Message, s.token)
	case errors.As(err, &er):
		return s.statusError(op, statusOf(er.Response), describe(er), s.token)
	}
	return s.transportError(op, err, s.token)
}

// describe is GitHub's message and the details of its errors list, e.g.
// "Validation Failed: No commits between main and feature".
func describe(er *github.ErrorResponse) string {
	msg := er.Message
	if msg == "" {
		msg = http.StatusText(statusOf(er.Response))
	}
	var details []string
	for _, e := range er.Errors {
		switch {
		case e.Message != "":
			details = append(details, e.Message)
		case e.Field != "" || e.Code != "":
			details = append(details, fmt.Sprintf("%s %s %s", e.Resource, e.Field, e.Code))
		}
	}
	if len(details) > 0 {
		msg += ": " + strings.Join(details, "; ")
	}
	return msg
}
