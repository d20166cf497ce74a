package forge_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// The tests in this file run against every provider: each opens pull
// requests through New, as Corral does, on a forgetest server configured
// as a self-hosted instance, with the repositories' URLs on its host.

// provider is a forge under test: its fake, how a Config names it, and
// what it can do.
type provider struct {
	name    string
	start   func(testing.TB, forgetest.Options) *forgetest.Server
	config  func(url string) forge.Config
	page    string // the pull request's page: fmt of the server URL, the repository, the number
	apiPath string // what its API's URL adds to the server's
	nested  bool   // it has nested groups (group/subgroup/name)
	rooted  bool   // it may be served under a path (https://example.com/git)
	forks   bool   // it takes a fork's head, owner:branch
}

var providers = []provider{
	{name: "GitHub", start: forgetest.Start, config: func(u string) forge.Config { return forge.Config{APIURL: u} },
		page: "%s/%s/pull/%d", apiPath: "/api/v3", forks: true},
	{name: "GitLab", start: forgetest.StartGitLab, config: func(u string) forge.Config { return forge.Config{GitLabURLs: []string{u}} },
		page: "%s/%s/-/merge_requests/%d", apiPath: "/api/v4", nested: true, rooted: true},
	{name: "Gitea", start: forgetest.StartGitea, config: func(u string) forge.Config { return forge.Config{GiteaURLs: []string{u}} },
		page: "%s/%s/pulls/%d", apiPath: "/api/v1", rooted: true, forks: true},
}

// each runs test for every provider.
func each(t *testing.T, test func(t *testing.T, p provider)) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) { test(t, p) })
	}
}

// env is a fake forge holding acme/app and a forge pointed at it.
type env struct {
	p provider
	s *forgetest.Server
	f forge.Forge
}

func (p provider) setup(t *testing.T, opts forgetest.Options) env {
	t.Helper()
	if opts.Repos == nil {
		opts.Repos = []string{"acme/app"}
	}
	s := p.start(t, opts)
	f, err := forge.New(p.config(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	return env{p: p, s: s, f: f}
}

// host is the server's host:port, which its repositories' URLs name.
func (e env) host() string { return strings.TrimPrefix(e.s.URL, "http://") }

// repoURL is the clone URL of repository path on the server.
func (e env) repoURL(path string) string { return "http://" + e.host() + "/" + path + ".git" }

// page is the URL of pull request n of repository path.
func (e env) page(path string, n int) string { return fmt.Sprintf(e.p.page, e.s.URL, path, n) }

func (e env) req(head string) forge.PullRequest {
	return forge.PullRequest{RepoURL: e.repoURL("acme/app"), Head: head, Base: "main", Title: "Add the feature",
		Body: "Made by Corral job job_x.", Token: forgetest.DefaultToken}
}

// noCalls fails the test if the server received any of calls.
func (e env) noCalls(t *testing.T, why string, calls ...forgetest.Call) {
	t.Helper()
	for _, c := range calls {
		if n := e.s.Calls(c); n != 0 {
			t.Errorf("%s: %d %s calls; want none", why, n, c)
		}
	}
}

// open opens a pull request from head, which must pass.
func (e env) open(t *testing.T, head string) *forge.PR {
	t.Helper()
	pr, err := e.f.CreatePullRequest(ctx(t), e.req(head))
	if err != nil {
		t.Fatalf("CreatePullRequest(%s) = %v", head, err)
	}
	return pr
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestCreate(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		e := p.setup(t, forgetest.Options{})
		pr := e.open(t, "corral/job-1")
		if want := e.page("acme/app", 1); pr.Number != 1 || pr.URL != want || pr.Existed {
			t.Errorf("CreatePullRequest = %+v; want #1 at %s, new", pr, want)
		}
		prs := e.s.PRs()
		if len(prs) != 1 {
			t.Fatalf("the server holds %d pull requests; want 1", len(prs))
		}
		got := prs[0]
		if got.Repo != "acme/app" || got.Head != "corral/job-1" || got.HeadOwner != "acme" || got.Base != "main" ||
			got.Title != "Add the feature" || got.Body != "Made by Corral job job_x." || got.State != "open" {
			t.Errorf("created %+v; want the request's fields", got)
		}
		e.noCalls(t, "with a base given", forgetest.CallGetRepo, forgetest.CallListPRs, forgetest.CallVersion)
	})
}

// TestDefaultBase: with no base, the repository's default branch, read
// from the forge; the repository given by an scp-like URL, whose host has
// no port.
func TestDefaultBase(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		e := p.setup(t, forgetest.Options{})
		e.s.AddRepo("acme/trunky", "trunk")
		r := e.req("feature")
		r.RepoURL, r.Base = "git@127.0.0.1:acme/trunky.git", ""
		pr, err := e.f.CreatePullRequest(ctx(t), r)
		if err != nil {
			t.Fatal(err)
		}
		if prs := e.s.PRs(); len(prs) != 1 || prs[0].Base != "trunk" || pr.Number != 1 {
			t.Errorf("with no base, created %+v; want one against the default branch trunk", prs)
		}
		if n := e.s.Calls(forgetest.CallGetRepo); n != 1 {
			t.Errorf("%d repository lookups; want 1", n)
		}
		e.s.AddRepo("acme/empty", "")
		r.RepoURL = e.repoURL("acme/empty")
		if _, err := e.f.CreatePullRequest(ctx(t), r); !errors.Is(err, errdefs.ErrUnprocessable) || !strings.Contains(err.Error(), "no default branch") {
			t.Errorf("CreatePullRequest(empty repository, no base) = %v; want ErrUnprocessable saying there is no default branch", err)
		}
	})
}

// TestIdempotent: asking again for an open head returns the same pull
// request; after it is closed, a new one is opened.
func TestIdempotent(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		e := p.setup(t, forgetest.Options{})
		first := e.open(t, "feature")
		again, err := e.f.CreatePullRequest(ctx(t), e.req("feature"))
		if err != nil {
			t.Fatalf("second CreatePullRequest = %v; want the existing one", err)
		}
		if again.Number != first.Number || again.URL != first.URL || !again.Existed {
			t.Errorf("second CreatePullRequest = %+v; want %+v, existed", again, first)
		}
		if n := len(e.s.PRs()); n != 1 {
			t.Errorf("%d pull requests after asking twice; want 1", n)
		}
		other, err := e.f.CreatePullRequest(ctx(t), e.req("another"))
		if err != nil || other.Number != 2 || other.Existed {
			t.Errorf("CreatePullRequest(another head) = %+v, %v; want a new #2", other, err)
		}
		e.s.ClosePR("acme/app", first.Number)
		reopened, err := e.f.CreatePullRequest(ctx(t), e.req("feature"))
		if err != nil || reopened.Number != 3 || reopened.Existed {
			t.Errorf("CreatePullRequest after closing #1 = %+v, %v; want a new #3", reopened, err)
		}
	})
}

// TestLostAnswer: the forge creates the pull request but the answer is
// lost (the job crashed, the network dropped). The error is retryable and
// the retry returns the pull request created the first time.
func TestLostAnswer(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		e := p.setup(t, forgetest.Options{})
		e.s.Fail(forgetest.CallCreatePR, forgetest.Failure{Drop: true, Commit: true})
		_, err := e.f.CreatePullRequest(ctx(t), e.req("feature"))
		if !forge.Retryable(err) || !errors.Is(err, errdefs.ErrUnavailable) {
			t.Fatalf("CreatePullRequest with the answer lost = %v; want a retryable ErrUnavailable", err)
		}
		pr, err := e.f.CreatePullRequest(ctx(t), e.req("feature"))
		if err != nil || pr.Number != 1 || !pr.Existed {
			t.Fatalf("retry = %+v, %v; want #1, existed", pr, err)
		}
		if n := len(e.s.PRs()); n != 1 {
			t.Errorf("%d pull requests after the retry; want 1", n)
		}
	})
}

// TestFindFails: the pull request is open already, and looking it up
// fails; the error names the lookup.
func TestFindFails(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		e := p.setup(t, forgetest.Options{})
		e.open(t, "feature")
		e.s.Fail(forgetest.CallListPRs, forgetest.Failure{Status: 503})
		_, err := e.f.CreatePullRequest(ctx(t), e.req("feature"))
		if !forge.Retryable(err) || !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "find the open") {
			t.Errorf("CreatePullRequest with the lookup failing = %v; want a retryable ErrUnavailable naming the lookup", err)
		}
	})
}

func TestConcurrentSameHead(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		e := p.setup(t, forgetest.Options{})
		const n = 8
		type result struct {
			pr  *forge.PR
			err error
		}
		results := make(chan result, n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				pr, err := e.f.CreatePullRequest(ctx(t), e.req("feature"))
				results <- result{pr, err}
			})
		}
		wg.Wait()
		close(results)
		for r := range results {
			if r.err != nil || r.pr.Number != 1 {
				t.Errorf("concurrent CreatePullRequest = %+v, %v; want #1", r.pr, r.err)
			}
		}
		if got := len(e.s.PRs()); got != 1 {
			t.Errorf("%d pull requests after %d concurrent calls; want 1", got, n)
		}
	})
}

// TestForkHead: a fork's head, owner:branch, is a head of its own where the
// forge takes it, and refused before any request where it does not.
func TestForkHead(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		e := p.setup(t, forgetest.Options{})
		if !p.forks {
			if _, err := e.f.CreatePullRequest(ctx(t), e.req("someone:feature")); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "forks are not supported") {
				t.Errorf("CreatePullRequest(fork head) = %v; want ErrInvalid saying forks are not supported", err)
			}
			e.noCalls(t, "a fork head", forgetest.CallCreatePR)
			return
		}
		e.open(t, "feature")
		if fork := e.open(t, "someone:feature"); fork.Number != 2 || fork.Existed || e.s.PRs()[1].HeadOwner != "someone" {
			t.Fatalf("CreatePullRequest(fork head) = %+v; want a new #2 from someone; server holds %+v", fork, e.s.PRs())
		}
		for head, want := range map[string]int{"someone:feature": 2, "feature": 1, "acme:feature": 1} {
			if pr := e.open(t, head); pr.Number != want || !pr.Existed {
				t.Errorf("CreatePullRequest(%s) again = %+v; want #%d, existed", head, pr, want)
			}
		}
	})
}

// TestNestedPath: a repository in nested groups, where the forge has them;
// elsewhere refused before any request.
func TestNestedPath(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		e := p.setup(t, forgetest.Options{Repos: []string{"acme/team/app"}})
		r := e.req("feature")
		r.RepoURL = e.repoURL("acme/team/app")
		pr, err := e.f.CreatePullRequest(ctx(t), r)
		switch {
		case p.nested && (err != nil || pr.URL != e.page("acme/team/app", 1)):
			t.Errorf("CreatePullRequest(acme/team/app) = %+v, %v; want #1 there", pr, err)
		case !p.nested && (!errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "owner/name")):
			t.Errorf("CreatePullRequest(acme/team/app) = %v; want ErrInvalid saying repositories are owner/name", err)
		case !p.nested:
			e.noCalls(t, "a nested path", forgetest.CallCreatePR)
		}
	})
}

// TestInstanceURLs: an instance is given by its server's URL or its API's,
// with or without a trailing slash, or under a path where the forge may be
// served so (which its repository URLs carry, and its ssh URLs do not).
func TestInstanceURLs(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		s := p.start(t, forgetest.Options{Repos: []string{"acme/app"}})
		urls := []string{s.URL, s.URL + "/", s.URL + p.apiPath, s.URL + p.apiPath + "/"}
		if p.rooted {
			urls = append(urls, s.URL+"/sub", s.URL+"/sub"+p.apiPath+"/")
		}
		n := 0
		for _, u := range urls {
			cfg := p.config(u)
			cfg.HTTPClient = &http.Client{Transport: &redirect{to: s, strip: "/sub"}}
			f, err := forge.New(cfg)
			if err != nil {
				t.Fatalf("New(%s) = %v", u, err)
			}
			repoURL := s.URL + "/acme/app.git"
			if strings.Contains(u, "/sub") {
				repoURL = s.URL + "/sub/acme/app.git"
			}
			for _, ru := range []string{repoURL, "git@127.0.0.1:acme/app.git"} {
				n++
				r := pull(ru)
				r.Head = fmt.Sprintf("branch-%d", n)
				if pr, err := f.CreatePullRequest(ctx(t), r); err != nil || pr.Number != n {
					t.Errorf("URL %s, repository %s: CreatePullRequest = %+v, %v; want #%d", u, ru, pr, err, n)
				}
			}
		}
	})
}
