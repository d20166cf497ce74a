package forge_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/forge/forgetest"
)

const repoURL = "https://github.com/acme/app.git"

// setup is a fake GitHub holding acme/app and a forge pointed at it the
// way a GitHub Enterprise Server is configured.
func setup(t *testing.T) (*forgetest.Server, forge.Forge) {
	t.Helper()
	s := forgetest.Start(t, forgetest.Options{Repos: []string{"acme/app"}})
	f, err := forge.New(forge.Config{Kind: forge.KindGitHub, APIURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

func req(head string) forge.PullRequest {
	return forge.PullRequest{RepoURL: repoURL, Head: head, Base: "main", Title: "Add the feature", Body: "Made by Corral job job_x.", Token: forgetest.DefaultToken}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestCreate(t *testing.T) {
	s, f := setup(t)
	pr, err := f.CreatePullRequest(ctx(t), req("corral/job-1"))
	if err != nil {
		t.Fatal(err)
	}
	want := s.URL + "/acme/app/pull/1"
	if pr.Number != 1 || pr.URL != want || pr.Existed {
		t.Errorf("CreatePullRequest = %+v; want #1 at %s, new", pr, want)
	}
	prs := s.PRs()
	if len(prs) != 1 {
		t.Fatalf("the server holds %d pull requests; want 1", len(prs))
	}
	got := prs[0]
	if got.Repo != "acme/app" || got.Head != "corral/job-1" || got.HeadOwner != "acme" || got.Base != "main" ||
		got.Title != "Add the feature" || got.Body != "Made by Corral job job_x." || got.State != "open" {
		t.Errorf("created %+v; want the request's fields", got)
	}
	if n := s.Calls(forgetest.CallGetRepo); n != 0 {
		t.Errorf("with a base given, the repository was looked up %d times; want 0", n)
	}
}

func TestDefaultBase(t *testing.T) {
	s, f := setup(t)
	s.AddRepo("acme/trunky", "trunk")
	r := req("feature")
	r.RepoURL, r.Base = "git@github.com:acme/trunky.git", ""
	pr, err := f.CreatePullRequest(ctx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	if prs := s.PRs(); len(prs) != 1 || prs[0].Base != "trunk" || pr.Number != 1 {
		t.Errorf("with no base, created %+v; want one against the default branch trunk", prs)
	}
}

// TestIdempotent: asking again for an open head returns the same pull
// request; after it is closed, a new one is opened.
func TestIdempotent(t *testing.T) {
	s, f := setup(t)
	first, err := f.CreatePullRequest(ctx(t), req("feature"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.CreatePullRequest(ctx(t), req("feature"))
	if err != nil {
		t.Fatalf("second CreatePullRequest = %v; want the existing one", err)
	}
	if again.Number != first.Number || again.URL != first.URL || !again.Existed {
		t.Errorf("second CreatePullRequest = %+v; want %+v, existed", again, first)
	}
	if n := len(s.PRs()); n != 1 {
		t.Errorf("%d pull requests after asking twice; want 1", n)
	}
	other, err := f.CreatePullRequest(ctx(t), req("another"))
	if err != nil || other.Number != 2 || other.Existed {
		t.Errorf("CreatePullRequest(another head) = %+v, %v; want a new #2", other, err)
	}
	s.ClosePR("acme/app", first.Number)
	reopened, err := f.CreatePullRequest(ctx(t), req("feature"))
	if err != nil || reopened.Number != 3 || reopened.Existed {
		t.Errorf("CreatePullRequest after closing #1 = %+v, %v; want a new #3", reopened, err)
	}
}

// TestLostAnswer: GitHub creates the pull request but the answer is lost
// (the job crashed, the network dropped). The error is retryable and the
// retry returns the pull request created the first time.
func TestLostAnswer(t *testing.T) {
	s, f := setup(t)
	s.Fail(forgetest.CallCreatePR, forgetest.Failure{Drop: true, Commit: true})
	_, err := f.CreatePullRequest(ctx(t), req("feature"))
	if !forge.Retryable(err) || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("CreatePullRequest with the answer lost = %v; want a retryable ErrUnavailable", err)
	}
	pr, err := f.CreatePullRequest(ctx(t), req("feature"))
	if err != nil || pr.Number != 1 || !pr.Existed {
		t.Fatalf("retry = %+v, %v; want #1, existed", pr, err)
	}
	if n := len(s.PRs()); n != 1 {
		t.Errorf("%d pull requests after the retry; want 1", n)
	}
}

func TestConcurrentSameHead(t *testing.T) {
	s, f := setup(t)
	const n = 8
	nums := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			pr, err := f.CreatePullRequest(ctx(t), req("feature"))
			errs[i] = err
			if err == nil {
				nums[i] = pr.Number
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || nums[i] != 1 {
			t.Errorf("concurrent CreatePullRequest #%d = #%d, %v; want #1", i, nums[i], errs[i])
		}
	}
	if got := len(s.PRs()); got != 1 {
		t.Errorf("%d pull requests after %d concurrent calls; want 1", got, n)
	}
}

// TestErrors plays GitHub's failures and checks each one's class, whether
// it is retryable, and that the token never shows.
func TestErrors(t *testing.T) {
	const token = "ghp_SECRETsecretSECRETsecret0123456789ab"
	for _, tc := range []struct {
		name      string
		setup     func(s *forgetest.Server)
		token     string
		classes   []error
		retryable bool
		msg       string
	}{
		{name: "wrong token", setup: func(s *forgetest.Server) { s.SetToken("ghp_the_right_one_is_different_000000000") },
			token: token, classes: []error{forge.ErrAuth, errdefs.ErrUnauthorized}, msg: "401 Bad credentials"},
		{name: "forbidden", setup: func(s *forgetest.Server) {
			s.Fail(forgetest.CallCreatePR, forgetest.Failure{Status: 403, Message: "Resource not accessible by personal access token"})
		}, classes: []error{forge.ErrAuth, errdefs.ErrForbidden}, msg: "Resource not accessible"},
		{name: "no commits", setup: func(s *forgetest.Server) { s.Fail(forgetest.CallCreatePR, forgetest.NoCommits("main", "feature")) },
			classes: []error{errdefs.ErrUnprocessable}, msg: "No commits between main and feature"},
		{name: "validation", setup: func(s *forgetest.Server) {
			s.Fail(forgetest.CallCreatePR, forgetest.Failure{Status: 422, Message: "Validation Failed",
				Errors: []forgetest.ErrorDetail{{Resource: "PullRequest", Field: "base", Code: "invalid"}}})
		}, classes: []error{errdefs.ErrUnprocessable}, msg: "PullRequest base invalid"},
		{name: "server error", setup: func(s *forgetest.Server) { s.Fail(forgetest.CallCreatePR, forgetest.Failure{Status: 502}) },
			classes: []error{errdefs.ErrUnavailable}, retryable: true, msg: "502"},
		{name: "rate limit", setup: func(s *forgetest.Server) {
			s.Fail(forgetest.CallCreatePR, forgetest.Failure{Status: 403, Message: "API rate limit exceeded", RateLimited: true})
		}, classes: []error{errdefs.ErrRateLimited}, retryable: true, msg: "rate limit"},
		{name: "too many requests", setup: func(s *forgetest.Server) { s.Fail(forgetest.CallCreatePR, forgetest.Failure{Status: 429}) },
			classes: []error{errdefs.ErrRateLimited}, retryable: true},
		{name: "connection dropped", setup: func(s *forgetest.Server) { s.Fail(forgetest.CallCreatePR, forgetest.Failure{Drop: true}) },
			classes: []error{errdefs.ErrUnavailable}, retryable: true, msg: "cannot reach"},
		{name: "unknown repository", setup: func(s *forgetest.Server) {}, classes: []error{errdefs.ErrNotFound}, msg: "no such repository"},
		{name: "token in GitHub's message", setup: func(s *forgetest.Server) {
			s.Fail(forgetest.CallCreatePR, forgetest.Failure{Status: 422, Message: "bad head for " + token})
		}, classes: []error{errdefs.ErrUnprocessable}, msg: "[REDACTED]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := forgetest.Start(t, forgetest.Options{Token: token, Repos: []string{"acme/app"}})
			f, err := forge.New(forge.Config{APIURL: s.URL})
			if err != nil {
				t.Fatal(err)
			}
			tc.setup(s)
			r := req("feature")
			r.Token = token
			if tc.name == "unknown repository" {
				r.RepoURL = "https://github.com/acme/nope"
			}
			pr, err := f.CreatePullRequest(ctx(t), r)
			if err == nil {
				t.Fatalf("CreatePullRequest = %+v; want an error", pr)
			}
			for _, c := range tc.classes {
				if !errors.Is(err, c) {
					t.Errorf("error %q is not %v", err, c)
				}
			}
			if got := forge.Retryable(err); got != tc.retryable {
				t.Errorf("Retryable(%q) = %v; want %v", err, got, tc.retryable)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), token) {
				t.Errorf("error shows the token: %q", err)
			}
			if len(s.PRs()) != 0 {
				t.Errorf("a failed call created %+v", s.PRs())
			}
			if tc.retryable { // the next attempt goes through
				if _, err := f.CreatePullRequest(ctx(t), r); err != nil {
					t.Errorf("retry = %v", err)
				}
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	f, err := forge.New(forge.Config{APIURL: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.CreatePullRequest(ctx(t), req("feature"))
	if !forge.Retryable(err) || !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("CreatePullRequest(nothing listening) = %v; want a retryable ErrUnavailable naming %s", err, addr)
	}

	s, f2 := setup(t)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f2.CreatePullRequest(c, req("feature")); !errors.Is(err, context.Canceled) || forge.Retryable(err) {
		t.Errorf("CreatePullRequest(cancelled) = %v; want context.Canceled, not retryable", err)
	}
	if len(s.PRs()) != 0 {
		t.Errorf("a cancelled call created a pull request")
	}
}

// TestBadInput is refused before any request.
func TestBadInput(t *testing.T) {
	s, f := setup(t)
	for _, tc := range []struct {
		name  string
		edit  func(*forge.PullRequest)
		class error
	}{
		{"no token", func(p *forge.PullRequest) { p.Token = "" }, forge.ErrAuth},
		{"no title", func(p *forge.PullRequest) { p.Title = "  " }, errdefs.ErrInvalid},
		{"no head", func(p *forge.PullRequest) { p.Head = "" }, errdefs.ErrInvalid},
		{"head with ..", func(p *forge.PullRequest) { p.Head = "a..b" }, errdefs.ErrInvalid},
		{"head with space", func(p *forge.PullRequest) { p.Head = "a b" }, errdefs.ErrInvalid},
		{"head like an option", func(p *forge.PullRequest) { p.Head = "-x" }, errdefs.ErrInvalid},
		{"base with a colon", func(p *forge.PullRequest) { p.Base = "a:b" }, errdefs.ErrInvalid},
		{"huge body", func(p *forge.PullRequest) { p.Body = strings.Repeat("x", 70000) }, errdefs.ErrInvalid},
		{"local path", func(p *forge.PullRequest) { p.RepoURL = "/srv/git/acme/app.git" }, errdefs.ErrInvalid},
		{"traversal", func(p *forge.PullRequest) { p.RepoURL = "https://github.com/acme/../../admin" }, errdefs.ErrInvalid},
	} {
		r := req("feature")
		tc.edit(&r)
		if _, err := f.CreatePullRequest(ctx(t), r); !errors.Is(err, tc.class) {
			t.Errorf("%s: CreatePullRequest = %v; want %v", tc.name, err, tc.class)
		}
	}
	for _, c := range []forgetest.Call{forgetest.CallCreatePR, forgetest.CallGetRepo, forgetest.CallListPRs} {
		if n := s.Calls(c); n != 0 {
			t.Errorf("bad input reached the API: %d %s calls", n, c)
		}
	}
	// A fork's head, owner:branch, is accepted.
	r := req("someone:feature")
	if pr, err := f.CreatePullRequest(ctx(t), r); err != nil || s.PRs()[0].HeadOwner != "someone" {
		t.Errorf("CreatePullRequest(fork head) = %+v, %v", pr, err)
	}
}

// TestEnterpriseURLs: the API URL may be given as the server's or the
// API's (/api/v3), with or without a trailing slash.
func TestEnterpriseURLs(t *testing.T) {
	s := forgetest.Start(t, forgetest.Options{Repos: []string{"acme/app"}})
	for i, u := range []string{s.URL, s.URL + "/", s.URL + "/api/v3", s.URL + "/api/v3/"} {
		f, err := forge.New(forge.Config{APIURL: u})
		if err != nil {
			t.Fatalf("New(%s) = %v", u, err)
		}
		r := req(fmt.Sprintf("branch-%d", i))
		r.RepoURL = "https://ghe.example.com/acme/app.git"
		if pr, err := f.CreatePullRequest(ctx(t), r); err != nil || pr.Number != i+1 {
			t.Errorf("API URL %s: CreatePullRequest = %+v, %v; want #%d", u, pr, err, i+1)
		}
	}
	for _, bad := range []string{"ftp://ghe.example.com", "https://user:pw@ghe.example.com", "ghe.example.com", "https://ghe.example.com/?x=1", "https://"} {
		if _, err := forge.New(forge.Config{APIURL: bad}); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("New(APIURL %q) = %v; want ErrInvalid", bad, err)
		} else if strings.Contains(err.Error(), "pw@") {
			t.Errorf("New(APIURL %q) error shows the credentials: %v", bad, err)
		}
	}
	if _, err := forge.New(forge.Config{Kind: "gitlab"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("New(gitlab) = %v; want ErrInvalid", err)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(forge.EnvGitHubAPIURL, " https://ghe.example.com/api/v3 ")
	if c := forge.ConfigFromEnv(); c.Kind != forge.KindGitHub || c.APIURL != "https://ghe.example.com/api/v3" {
		t.Errorf("ConfigFromEnv = %+v; want github at https://ghe.example.com/api/v3", c)
	}
	t.Setenv(forge.EnvGitHubAPIURL, "")
	if c := forge.ConfigFromEnv(); c.APIURL != "" {
		t.Errorf("ConfigFromEnv with no env = %+v; want api.github.com (empty)", c)
	}
}
