package forgetest_test

import (
	"slices"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// giteaClient is an SDK client of s with token, made as the SDK makes
// them by default: after asking the server's version.
func giteaClient(t *testing.T, s *forgetest.Server, token string) *gitea.Client {
	t.Helper()
	c, err := gitea.NewClient(s.URL, gitea.SetToken(token))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGiteaSDK drives the Gitea server with Gitea's SDK itself, its
// version check included.
func TestGiteaSDK(t *testing.T) {
	s := forgetest.StartGitea(t, forgetest.Options{Repos: []string{"acme/app"}})
	c := giteaClient(t, s, forgetest.DefaultToken)
	if v, _, err := c.ServerVersion(); err != nil || v != forgetest.GiteaVersion || s.Calls(forgetest.CallVersion) != 2 {
		t.Errorf("ServerVersion = %q, %v after %d calls; want %s, NewClient's call and this one", v, err, s.Calls(forgetest.CallVersion), forgetest.GiteaVersion)
	}
	r, _, err := c.GetRepo("acme", "app")
	if err != nil || r.FullName != "acme/app" || r.DefaultBranch != "main" || r.Owner.UserName != "acme" {
		t.Fatalf("GetRepo = %+v, %v; want acme/app on main", r, err)
	}
	if _, resp, err := c.GetRepo("acme", "nope"); resp == nil || resp.StatusCode != 404 || err == nil || err.Error() != "The target couldn't be found." {
		t.Errorf("GetRepo(acme/nope) = %v; want Gitea's 404", err)
	}
	create := func(head string) (*gitea.PullRequest, *gitea.Response, error) {
		return c.CreatePullRequest("acme", "app", gitea.CreatePullRequestOption{Head: head, Base: "main", Title: "T", Body: "B"})
	}
	pr, resp, err := create("feature")
	if err != nil || resp.StatusCode != 201 || pr.Index != 1 || pr.State != gitea.StateOpen || pr.Head.Ref != "feature" ||
		pr.Base.Ref != "main" || pr.HTMLURL != s.URL+"/acme/app/pulls/1" {
		t.Fatalf("CreatePullRequest = %+v, %v; want #1 from feature", pr, err)
	}
	if _, resp, err := create("feature"); resp == nil || resp.StatusCode != 409 || err == nil ||
		!strings.HasPrefix(err.Error(), "pull request already exists for these targets [id: 1001, issue_id: 1") {
		t.Errorf("CreatePullRequest again = %v; want Gitea's 409", err)
	}
	fork, _, err := create("someone:feature")
	if err != nil || fork.Head.Name != "someone:feature" || fork.Head.Repository.Owner.UserName != "someone" {
		t.Fatalf("CreatePullRequest(fork) = %+v, %v; want a head in someone's fork", fork, err)
	}
	s.ClosePR("acme/app", 1)
	for _, tc := range []struct {
		opts gitea.ListPullRequestsOptions
		want []int64
		next int
	}{
		{gitea.ListPullRequestsOptions{}, []int64{2}, 0},
		{gitea.ListPullRequestsOptions{State: gitea.StateClosed}, []int64{1}, 0},
		{gitea.ListPullRequestsOptions{State: gitea.StateAll}, []int64{2, 1}, 0},
		{gitea.ListPullRequestsOptions{State: gitea.StateAll, ListOptions: gitea.ListOptions{PageSize: 1}}, []int64{2}, 2},
	} {
		list, resp, err := c.ListRepoPullRequests("acme", "app", tc.opts)
		if got := numbers(list, func(p *gitea.PullRequest) int64 { return p.Index }); err != nil || !slices.Equal(got, tc.want) || resp.NextPage != tc.next {
			t.Errorf("List(%+v) = %v (next page %d), %v; want %v, next page %d", tc.opts, got, resp.NextPage, err, tc.want, tc.next)
		}
	}
	if _, resp, err := giteaClient(t, s, "nope").GetRepo("acme", "app"); resp == nil || resp.StatusCode != 401 || err == nil || err.Error() != "token is required" {
		t.Errorf("GetRepo(wrong token) = %v; want Gitea's 401", err)
	}
}
