package forgetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
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
		want []int
	}{
		{&github.PullRequestListOptions{Head: "acme:feature"}, []int{1}},
		{&github.PullRequestListOptions{Head: "someone:feature"}, nil},
		{&github.PullRequestListOptions{}, []int{2, 1}},
		{&github.PullRequestListOptions{Base: "dev"}, nil},
		{&github.PullRequestListOptions{State: "closed"}, nil},
		{&github.PullRequestListOptions{ListOptions: github.ListOptions{PerPage: 1, Page: 2}}, []int{1}},
	} {
		list, _, err := c.PullRequests.List(ctx, "acme", "app", tc.opts)
		var got []int
		for _, p := range list {
			got = append(got, p.GetNumber())
		}
		if err != nil || len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
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

// TestWire checks GitHub's error bodies and the enterprise prefix with
// plain HTTP.
func TestWire(t *testing.T) {
	s := forgetest.Start(t, forgetest.Options{Repos: []string{"acme/app"}})
	call := func(method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s %s: Content-Type %q", method, path, ct)
		}
		data, _ := io.ReadAll(resp.Body)
		var v map[string]any
		_ = json.Unmarshal(data, &v)
		return resp.StatusCode, v
	}
	good := "Bearer " + forgetest.DefaultToken
	for _, tc := range []struct {
		method, path, token, body string
		status                    int
		message                   string
	}{
		{"GET", "/repos/acme/app", "", "", 401, "Requires authentication"},
		{"GET", "/repos/acme/app", "Bearer nope", "", 401, "Bad credentials"},
		{"GET", "/api/v3/repos/acme/app", "Basic " + forgetest.DefaultToken, "", 401, "Bad credentials"},
		{"GET", "/api/v3/repos/acme/app", "token " + forgetest.DefaultToken, "", 200, ""},
		{"GET", "/repos/acme/nope", good, "", 404, "Not Found"},
		{"GET", "/user", good, "", 404, "Not Found"},
		{"POST", "/api/v3/repos/acme/app/pulls", good, "{", 400, "Problems parsing JSON"},
		{"POST", "/repos/acme/app/pulls", good, `{"head":"x","base":"main"}`, 422, "Validation Failed"},
		{"POST", "/repos/acme/app/pulls", good, `{"title":"t","head":"main","base":"main"}`, 422, "Validation Failed"},
		{"POST", "/api/v3/repos/acme/app/pulls", good, `{"title":"t","head":"x","base":"main"}`, 201, ""},
		{"POST", "/api/v3/repos/acme/app/pulls", good, `{"title":"t","head":"x","base":"main"}`, 422, "Validation Failed"},
	} {
		status, body := call(tc.method, tc.path, tc.token, tc.body)
		if status != tc.status || (tc.message != "" && body["message"] != tc.message) {
			t.Errorf("%s %s (%q) = %d %v; want %d %q", tc.method, tc.path, tc.body, status, body, tc.status, tc.message)
		}
		if status >= 400 && (body["documentation_url"] == nil || body["status"] == nil) {
			t.Errorf("%s %s: error body %v lacks documentation_url or status", tc.method, tc.path, body)
		}
	}
	if prs := s.PRs(); len(prs) != 1 || prs[0].Head != "x" || !strings.HasSuffix(prs[0].HTMLURL, "/acme/app/pull/1") {
		t.Errorf("PRs = %+v; want the one created", prs)
	}
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
