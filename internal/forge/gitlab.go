package forge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/corral-sh/corral/internal/errdefs"
)

// GitLab opens merge requests through the GitLab REST API (v4), on
// gitlab.com or a self-managed instance. It is safe for concurrent use;
// each call authenticates with the token it is given, sent as
// PRIVATE-TOKEN (a personal, group or project access token).
type GitLab struct {
	server
	api
}

var _ Forge = (*GitLab)(nil)

// gitlabSession is one CreatePullRequest's calls.
type gitlabSession struct {
	caller
	c       *gitlab.Client
	project string // group/subgroup/name; the client escapes it
}

// NewGitLab returns a GitLab forge for the instance at baseURL ("" for
// gitlab.com; its API's URL, .../api/v4, is taken too) making requests
// with hc.
func NewGitLab(baseURL string, hc *http.Client) (*GitLab, error) {
	srv, err := newServer(EnvGitLabURL, "a GitLab server", cmp.Or(baseURL, "https://gitlab.com"), "/api/v4", hc)
	if err != nil {
		return nil, err
	}
	g := &GitLab{server: srv, api: api{name: "GitLab", repo: "project", pr: "merge request",
		perm: "the api scope and at least the Developer role in the project"}}
	if srv.host != "gitlab.com" {
		g.name = "GitLab at " + srv.host
	}
	return g, nil
}

// CreatePullRequest opens a merge request from pr.Head into pr.Base (the
// project's default branch when ""), or returns the one already open from
// that branch (PR.Existed). The project is the repository URL's path,
// group/subgroup/name, less the instance's root; a head in another
// project ("owner:branch") is refused.
func (g *GitLab) CreatePullRequest(ctx context.Context, pr PullRequest) (*PR, error) {
	repo, err := checkRequest(pr)
	if err != nil {
		return nil, err
	}
	project := repo.within(g.root).FullName()
	if strings.Contains(pr.Head, ":") {
		return nil, errdefs.Invalidf("%s: head %q is in another project; merge requests from forks are not supported: push the branch to %s",
			g.name, pr.Head, project)
	}
	c, err := gitlab.NewClient(pr.Token, gitlab.WithBaseURL(g.url), gitlab.WithHTTPClient(g.hc),
		gitlab.WithoutRetries()) // the caller retries what Retryable says may pass
	if err != nil {
		return nil, errdefs.Invalidf("%s: bad GitLab URL", EnvGitLabURL)
	}
	return open(ctx, g.api, project, &gitlabSession{caller: caller{g.api, pr.Token}, c: c, project: project}, pr)
}

func (s *gitlabSession) defaultBranch(ctx context.Context) (string, error) {
	p, _, err := s.c.Projects.GetProject(s.project, nil, gitlab.WithContext(ctx))
	if err != nil {
		return "", err
	}
	return p.DefaultBranch, nil
}

func (s *gitlabSession) create(ctx context.Context, pr PullRequest, base string) (*PR, error) {
	mr, _, err := s.c.MergeRequests.CreateMergeRequest(s.project, &gitlab.CreateMergeRequestOptions{
		Title: gitlab.Ptr(pr.Title), Description: gitlab.Ptr(pr.Body), SourceBranch: gitlab.Ptr(pr.Head), TargetBranch: gitlab.Ptr(base),
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	return &PR{Number: int(mr.IID), URL: mr.WebURL}, nil
}

// exists reports GitLab's 409 for a source branch with an open merge
// request into the same target: "Another open merge request already
// exists for this source branch: !1".
func (s *gitlabSession) exists(err error) bool {
	var er *gitlab.ErrorResponse
	return errors.As(err, &er) && er.HasStatusCode(http.StatusConflict) &&
		strings.Contains(strings.ToLower(string(er.Body)), "already exists")
}

func (s *gitlabSession) findOpen(ctx context.Context, head, base string) (*PR, error) {
	open, _, err := s.c.MergeRequests.ListProjectMergeRequests(s.project, &gitlab.ListProjectMergeRequestsOptions{
		State: gitlab.Ptr("opened"), SourceBranch: gitlab.Ptr(head), TargetBranch: gitlab.Ptr(base),
		ListOptions: gitlab.ListOptions{PerPage: 10},
	}, gitlab.WithContext(ctx))
	if err != nil || len(open) == 0 {
		return nil, err
	}
	return &PR{Number: int(open[0].IID), URL: open[0].WebURL}, nil
}

// fail turns a client-go error into an *Error. Its ErrorResponse is not
// kept as the cause: it holds the request, whose headers carry the token.
func (s *gitlabSession) fail(op string, err error) error {
	var er *gitlab.ErrorResponse
	switch {
	case errors.As(err, &er):
		return s.statusError(op, statusOf(er.Response), gitlabMessage(er.Body), s.token)
	case errors.Is(err, gitlab.ErrNotFound): // the client reads no body on a 404
		return s.statusError(op, http.StatusNotFound, "", s.token)
	}
	return s.transportError(op, err, s.token)
}

// gitlabMessage is the message of a GitLab error body: {"message": ...},
// a string, a list or a map of fields to lists, or {"error": "..."}; or a
// body that is plain text ("Retry later"); "" for anything else, such as a
// proxy's HTML page.
func gitlabMessage(body []byte) string {
	var v struct {
		Message any `json:"message"`
		Error   any `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		text, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		if strings.HasPrefix(text, "<") || strings.HasPrefix(text, "{") {
			return ""
		}
		return text
	}
	if v.Message != nil {
		return flatten(v.Message)
	}
	return flatten(v.Error)
}

// flatten writes a JSON message as one line: a map as "key value" pairs in
// key order, e.g. "title is too long".
func flatten(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []any:
		parts := make([]string, 0, len(v))
		for _, item := range v {
			parts = append(parts, flatten(item))
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		parts := make([]string, 0, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, k+" "+flatten(v[k]))
		}
		return strings.Join(parts, "; ")
	}
	return fmt.Sprint(v)
}
