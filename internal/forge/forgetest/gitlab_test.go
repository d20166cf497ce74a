package forgetest_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	gitlab "gitlab.com/gitlab-org/api/client-go"
	"golang.org/x/oauth2"

	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// TestClientGo drives the GitLab server with GitLab's client-go itself.
func TestClientGo(t *testing.T) {
	s := forgetest.StartGitLab(t, forgetest.Options{Repos: []string{"acme/app", "acme/team/my.app"}})
	c, err := gitlab.NewClient(forgetest.DefaultToken, gitlab.WithBaseURL(s.URL), gitlab.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []any{"acme/team/my.app", int64(2)} {
		p, _, err := c.Projects.GetProject(id, nil)
		if err != nil || p.PathWithNamespace != "acme/team/my.app" || p.DefaultBranch != "main" || p.Namespace.FullPath != "acme/team" {
			t.Fatalf("GetProject(%v) = %+v, %v; want acme/team/my.app on main", id, p, err)
		}
	}
	if _, _, err := c.Projects.GetProject("acme/nope", nil); !errors.Is(err, gitlab.ErrNotFound) {
		t.Errorf("GetProject(acme/nope) = %v; want ErrNotFound", err)
	}
	create := func(source, target string) (*gitlab.MergeRequest, error) {
		mr, _, err := c.MergeRequests.CreateMergeRequest("acme/team/my.app", &gitlab.CreateMergeRequestOptions{
			Title: gitlab.Ptr("T"), Description: gitlab.Ptr("D"), SourceBranch: gitlab.Ptr(source), TargetBranch: gitlab.Ptr(target)})
		return mr, err
	}
	mr, err := create("feature", "main")
	if err != nil || mr.IID != 1 || mr.State != "opened" || mr.SourceBranch != "feature" || mr.TargetBranch != "main" ||
		mr.Description != "D" || mr.Author.Username != "acme" || mr.WebURL != s.URL+"/acme/team/my.app/-/merge_requests/1" {
		t.Fatalf("CreateMergeRequest = %+v, %v; want !1 from feature into main", mr, err)
	}
	_, err = create("feature", "main")
	var er *gitlab.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != 409 || !strings.Contains(er.Message, "Another open merge request already exists for this source branch: !1") {
		t.Errorf("CreateMergeRequest again = %v; want GitLab's 409", err)
	}
	if _, err := create("other", "main"); err != nil {
		t.Fatal(err)
	}
	s.ClosePR("acme/team/my.app", 2)
	for _, tc := range []struct {
		opts *gitlab.ListProjectMergeRequestsOptions
		want []int64
	}{
		{&gitlab.ListProjectMergeRequestsOptions{}, []int64{2, 1}},
		{&gitlab.ListProjectMergeRequestsOptions{State: gitlab.Ptr("opened")}, []int64{1}},
		{&gitlab.ListProjectMergeRequestsOptions{State: gitlab.Ptr("closed")}, []int64{2}},
		{&gitlab.ListProjectMergeRequestsOptions{SourceBranch: gitlab.Ptr("feature"), TargetBranch: gitlab.Ptr("main")}, []int64{1}},
		{&gitlab.ListProjectMergeRequestsOptions{SourceBranch: gitlab.Ptr("feature"), TargetBranch: gitlab.Ptr("dev")}, nil},
		{&gitlab.ListProjectMergeRequestsOptions{ListOptions: gitlab.ListOptions{PerPage: 1, Page: 2}}, []int64{1}},
	} {
		list, resp, err := c.MergeRequests.ListProjectMergeRequests("acme/team/my.app", tc.opts)
		if got := numbers(list, func(m *gitlab.BasicMergeRequest) int64 { return m.IID }); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("List(%+v) = %v, %v; want %v", tc.opts, got, err, tc.want)
		}
		if tc.opts.PerPage == 1 && (resp.TotalItems != 2 || resp.TotalPages != 2 || resp.PreviousPage != 1 || resp.NextPage != 0) {
			t.Errorf("List page 2 of 2 read %+v; want GitLab's paging headers", resp)
		}
	}
	bearer, err := gitlab.NewAuthSourceClient(gitlab.OAuthTokenSource{
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: forgetest.DefaultToken})}, gitlab.WithBaseURL(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bearer.Projects.GetProject("acme/app", nil); err != nil {
		t.Errorf("GetProject with a Bearer token = %v", err)
	}
	if got := s.Calls(forgetest.CallGetRepo); got != 4 {
		t.Errorf("Calls(get) = %d; want 4", got)
	}
}

// TestGitLabWire checks what GitLab answers beyond JSON errors: Grape's
// list of missing parameters, and Rack::Attack's plain 429.
func TestGitLabWire(t *testing.T) {
	s := forgetest.StartGitLab(t, forgetest.Options{Repos: []string{"acme/app"}})
	good := "PRIVATE-TOKEN: " + forgetest.DefaultToken
	if _, _, body := call(t, "POST", s.URL+"/api/v4/projects/acme%2Fapp/merge_requests", good, `{"title":"t"}`); body["error"] != "source_branch is missing, target_branch is missing" {
		t.Errorf("POST without branches: %v; want Grape's error", body)
	}
	s.Fail(forgetest.CallGetRepo, forgetest.Failure{Status: http.StatusTooManyRequests})
	if status, h, body := call(t, "GET", s.URL+"/api/v4/projects/1", good, ""); status != 429 || h.Get("Retry-After") == "" ||
		h.Get("RateLimit-Remaining") != "0" || body != nil {
		t.Errorf("rate limited: %d %v %v; want a plain 429 with GitLab's rate limit headers", status, h, body)
	}
}
