package forgetest_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-github/v75/github"

	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// TestGoGitHubRoot drives the server with go-github itself, its base URL
// at the root as for api.github.com.
func TestGoGitHubRoot(t *testing.T) {
	s := forgetest.Start(t, forgetest.Options{Repos: []string{"acme/app"}})
	c := github.NewClient(nil).WithAuthToken(forgetest.DefaultToken)
	c.BaseURL, _ = url.Parse(s.URL + "/")
	ctx := context.Background()

	r, _, err := c.Repositories.Get(ctx, "acme", "app")
	if err != nil || r.GetDefaultBranch() != "main" || r.GetFullName() != "acme/app" {
		t.Fatalf("Repositories.Get = %+v, %v; want acme/app on main", r, err)
	}
	pr, resp, err := c.PullRequests.Create(ctx, "acme", "app", &github.NewPullRequest{
		Title: github.Ptr("T"), Head: github.Ptr("feature"), Base: github.Ptr("main"), Body: github.Ptr("B"), Draft: github.Ptr(true)})
	if err != nil || pr.GetNumber() != 1 || resp.StatusCode != 201 || pr.GetHead().GetLabel() != "acme:feature" || !pr.GetDraft() {
		t.Fatalf("PullRequests.Create = %+v, %v; want #1 from acme:feature", pr, err)
	}
	if resp.Rate.Limit != 5000 || resp.Rate.Remaining == 0 {
		t.Errorf("rate headers read as %+v; want GitHub's", resp.Rate)
	}
	if _, _, err := c.PullRequests.Create(ctx, "acme", "app", &github.NewPullRequest{
		Title: github.Ptr("T"), Head: github.Ptr("other"), Base: github.Ptr("main")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts *github.PullRequestListOptions
		want []int64
	}{
		{&github.PullRequestListOptions{Head: "acme:feature"}, []int64{1}},
		{&github.PullRequestListOptions{Head: "someone:feature"}, nil},
		{&github.PullRequestListOptions{}, []int64{2, 1}},
		{&github.PullRequestListOptions{Base: "dev"}, nil},
		{&github.PullRequestListOptions{State: "closed"}, nil},
		{&github.PullRequestListOptions{ListOptions: github.ListOptions{PerPage: 1, Page: 2}}, []int64{1}},
	} {
		list, _, err := c.PullRequests.List(ctx, "acme", "app", tc.opts)
		got := numbers(list, func(p *github.PullRequest) int64 { return int64(p.GetNumber()) })
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("List(%+v) = %v, %v; want %v", tc.opts, got, err, tc.want)
		}
	}
	s.ClosePR("acme/app", 1)
	if list, _, _ := c.PullRequests.List(ctx, "acme", "app", &github.PullRequestListOptions{State: "closed"}); len(list) != 1 || list[0].GetState() != "closed" {
		t.Errorf("List(closed) = %d; want #1 closed", len(list))
	}
	if got := s.Calls(forgetest.CallListPRs); got != 7 {
		t.Errorf("Calls(list) = %d; want 7", got)
	}
}

// numbers are the numbers of a listing's items, as number reads them.
func numbers[T any](items []T, number func(T) int64) []int64 {
	var out []int64
	for _, item := range items {
		out = append(out, number(item))
	}
	return out
}

func TestScriptedFailures(t *testing.T) {
	s := forgetest.Start(t, forgetest.Options{Repos: []string{"acme/app"}})
	c := github.NewClient(nil).WithAuthToken(forgetest.DefaultToken)
	c.BaseURL, _ = url.Parse(s.URL + "/")
	ctx := context.Background()
	s.Fail(forgetest.CallGetRepo, forgetest.Failure{Status: 500})
	s.Fail(forgetest.CallGetRepo, forgetest.Failure{Status: 403, Message: "API rate limit exceeded", RateLimited: true})
	_, _, err := c.Repositories.Get(ctx, "acme", "app")
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != 500 {
		t.Errorf("first Get = %v; want the scripted 500", err)
	}
	_, _, err = c.Repositories.Get(ctx, "acme", "app")
	var rl *github.RateLimitError
	if !errors.As(err, &rl) {
		t.Errorf("second Get = %v; want a go-github RateLimitError", err)
	}
	c2 := github.NewClient(nil).WithAuthToken(forgetest.DefaultToken) // the first one now waits for the reset
	c2.BaseURL = c.BaseURL
	if _, _, err := c2.Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Errorf("third Get = %v; want the failures used up", err)
	}
}
