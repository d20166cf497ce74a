package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v75/github"

	"github.com/corral-sh/corral/internal/errdefs"
)

// GitHub opens pull requests through the GitHub REST API, on github.com or
// a GitHub Enterprise Server. It is safe for concurrent use; each call
// authenticates with the token it is given.
type GitHub struct {
	hc     *http.Client
	apiURL string // "" for api.github.com
	name   string // for messages: "GitHub" or "GitHub at <host>"
}

var _ Forge = (*GitHub)(nil)

// NewGitHub returns a GitHub forge for the API at apiURL ("" for
// api.github.com; see the package documentation for Enterprise) making
// requests with hc.
func NewGitHub(apiURL string, hc *http.Client) (*GitHub, error) {
	g := &GitHub{hc: hc, name: "GitHub"}
	if hc == nil {
		g.hc = http.DefaultClient
	}
	if apiURL == "" {
		return g, nil
	}
	u, err := url.Parse(apiURL)
	switch {
	case err != nil, u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return nil, errdefs.Invalidf("%s %q: want the http(s) URL of the GitHub API", EnvGitHubAPIURL, apiURL)
	case u.User != nil, u.RawQuery != "", u.Fragment != "":
		return nil, errdefs.Invalidf("%s: the GitHub API URL must not carry credentials, a query or a fragment", EnvGitHubAPIURL)
	}
	if !strings.EqualFold(u.Host, "api.github.com") {
		g.apiURL, g.name = u.String(), "GitHub at "+u.Host
	}
	return g, nil
}

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
	if err := checkPullRequest(pr); err != nil {
		return nil, err
	}
	repo, err := ParseRepoURL(pr.RepoURL)
	if err != nil {
		return nil, err
	}
	c, err := g.client(pr.Token)
	if err != nil {
		return nil, err
	}
	base := pr.Base
	if base == "" {
		r, _, err := c.Repositories.Get(ctx, repo.Owner, repo.Name)
		if err != nil {
			return nil, g.fail("look up repository "+repo.FullName(), err, pr.Token)
		}
		if base = r.GetDefaultBranch(); base == "" {
			return nil, &Error{class: errdefs.ErrUnprocessable, msg: fmt.Sprintf("%s: repository %s has no default branch; give a base branch", g.name, repo.FullName())}
		}
	}
	created, _, err := c.PullRequests.Create(ctx, repo.Owner, repo.Name, &github.NewPullRequest{
		Title: github.Ptr(pr.Title), Head: github.Ptr(pr.Head), Base: github.Ptr(base), Body: github.Ptr(pr.Body),
	})
	if err == nil {
		return &PR{Number: created.GetNumber(), URL: created.GetHTMLURL()}, nil
	}
	if !alreadyExists(err) {
		return nil, g.fail("create pull request on "+repo.FullName(), err, pr.Token)
	}
	// Open already (a retry after a crash, or a branch pushed again): find
	// it and answer as if created.
	head := pr.Head
	if !strings.Contains(head, ":") {
		head = repo.Owner + ":" + head
	}
	open, _, lerr := c.PullRequests.List(ctx, repo.Owner, repo.Name, &github.PullRequestListOptions{
		Head: head, State: "open", ListOptions: github.ListOptions{PerPage: 10},
	})
	if lerr != nil {
		return nil, g.fail("find the open pull request for "+head+" on "+repo.FullName(), lerr, pr.Token)
	}
	if len(open) == 0 {
		return nil, g.fail("create pull request on "+repo.FullName(), err, pr.Token)
	}
	return &PR{Number: open[0].GetNumber(), URL: open[0].GetHTMLURL(), Existed: true}, nil
}

func checkPullRequest(pr PullRequest) error {
	switch {
	case pr.Token == "":
		return &Error{class: errdefs.ErrUnauthorized, auth: true, msg: "a token is required to open a pull request"}
	case strings.TrimSpace(pr.Title) == "":
		return errdefs.Invalidf("a pull request needs a title")
	case len(pr.Title) > 1024:
		return errdefs.Invalidf("the pull request title is %d bytes; 1024 at most", len(pr.Title))
	case len(pr.Body) > 65536:
		return errdefs.Invalidf("the pull request body is %d bytes; 65536 at most", len(pr.Body))
	}
	if err := checkBranch("head", pr.Head, true); err != nil {
		return err
	}
	if pr.Base != "" {
		if err := checkBranch("base", pr.Base, false); err != nil {
			return err
		}
	}
	return nil
}

// checkBranch rejects names git would refuse, which GitHub would answer
// with a confusing 422.
func checkBranch(what, b string, forkOK bool) error {
	ref := b
	if forkOK {
		if owner, br, ok := strings.Cut(b, ":"); ok {
			if !validOwner.MatchString(owner) {
				return errdefs.Invalidf("%s branch %q: bad owner", what, b)
			}
			ref = br
		}
	}
	bad := ref == "" || len(ref) > 255 || strings.HasPrefix(ref, "-") || strings.HasPrefix(ref, "/") ||
		strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".lock") || strings.HasSuffix(ref, ".") ||
		strings.Contains(ref, "..") || strings.Contains(ref, "//") || strings.Contains(ref, "@{") || ref == "@"
	for _, r := range ref {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			bad = true
		}
	}
	if bad {
		return errdefs.Invalidf("%s branch %q is not a valid branch name", what, b)
	}
	return nil
}

// alreadyExists reports GitHub's 422 for a head that has an open pull
// request.
func alreadyExists(err error) bool {
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

// fail turns a go-github error into an *Error. The go-github error is not
// kept as the cause: it holds the request, whose headers carry the token.
func (g *GitHub) fail(op string, err error, token string) error {
	e := &Error{}
	var (
		rate  *github.RateLimitError
		abuse *github.AbuseRateLimitError
		er    *github.ErrorResponse
		ue    *url.Error
	)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.class, e.cause = errdefs.ErrTimeout, ctxErr(err)
		e.msg = fmt.Sprintf("%s: %s: %v", g.name, op, e.cause)
	case errors.As(err, &rate):
		e.class, e.Status, e.Retryable = errdefs.ErrRateLimited, statusOf(rate.Response), true
		e.msg = fmt.Sprintf("%s: %s: rate limit exceeded (resets at %s): %s", g.name, op,
			rate.Rate.Reset.UTC().Format("15:04:05 MST"), rate.Message)
	case errors.As(err, &abuse):
		e.class, e.Status, e.Retryable = errdefs.ErrRateLimited, statusOf(abuse.Response), true
		e.msg = fmt.Sprintf("%s: %s: secondary rate limit: %s", g.name, op, abuse.Message)
	case errors.As(err, &er):
		e.Status = statusOf(er.Response)
		e.auth, e.Retryable, e.class = classOf(e.Status)
		e.msg = fmt.Sprintf("%s: %s: %d %s", g.name, op, e.Status, describe(er))
		switch e.Status {
		case http.StatusUnauthorized:
			e.msg += " (the token is wrong, expired or revoked)"
		case http.StatusForbidden:
			e.msg += " (the token lacks permission: it needs write access to pull requests and contents)"
		case http.StatusNotFound:
			e.msg += " (no such repository, or the token cannot see it)"
		}
	case errors.As(err, &ue):
		e.class, e.Retryable, e.cause = errdefs.ErrUnavailable, true, ue.Err
		e.msg = fmt.Sprintf("%s: %s: cannot reach the API: %v", g.name, op, ue.Err)
	default:
		e.class, e.Retryable = errdefs.ErrUnavailable, true
		e.msg = fmt.Sprintf("%s: %s: %v", g.name, op, err)
	}
	e.msg = redact(e.msg, token)
	return e
}

// ctxErr is the context error within err.
func ctxErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return context.Canceled
	}
	return context.DeadlineExceeded
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// classOf maps a GitHub status to whether it is the token's fault,
// whether trying again may help, and an errdefs class.
func classOf(status int) (auth, retry bool, class error) {
	switch {
	case status == http.StatusUnauthorized:
		return true, false, errdefs.ErrUnauthorized
	case status == http.StatusForbidden:
		return true, false, errdefs.ErrForbidden
	case status == http.StatusNotFound:
		return false, false, errdefs.ErrNotFound
	case status == http.StatusConflict:
		return false, false, errdefs.ErrConflict
	case status == http.StatusTooManyRequests:
		return false, true, errdefs.ErrRateLimited
	case status >= 500:
		return false, true, errdefs.ErrUnavailable
	case status == http.StatusBadRequest:
		return false, false, errdefs.ErrInvalid
	}
	return false, false, errdefs.ErrUnprocessable // 422 and the rest
}

// describe is GitHub's message and the details of its errors list, e.g.
// "Validation Failed: No commits between main and feature".
func describe(er *github.ErrorResponse) string {
	msg := er.Message
	if msg == "" && er.Response != nil {
		msg = http.StatusText(er.Response.StatusCode)
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
	if len(msg) > 1024 {
		msg = msg[:1024] + "..."
	}
	return msg
}
