package forge_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// The failures every provider plays, through New on a forgetest server as
// in conformance_test.go.

// errorCase is a failure a forge plays and what the error must be.
type errorCase struct {
	name      string
	setup     func(s *forgetest.Server)
	edit      func(r *forge.PullRequest) // nil: the request as is
	classes   []error
	retryable bool
	msg       string
}

// secret is the token of the error tests, which no message may show.
const secret = "ghp_SECRETsecretSECRETsecret0123456789ab"

// TestErrors plays each forge's failures and checks each one's class,
// whether it is retryable, and that the token never shows.
func TestErrors(t *testing.T) {
	fail := func(c forgetest.Call, f forgetest.Failure) func(*forgetest.Server) {
		return func(s *forgetest.Server) { s.Fail(c, f) }
	}
	cases := []errorCase{
		{name: "wrong token", setup: func(s *forgetest.Server) { s.SetToken("ghp_the_right_one_is_different_000000000") },
			classes: []error{forge.ErrAuth, errdefs.ErrUnauthorized}, msg: "401"},
		{name: "forbidden", setup: fail(forgetest.CallCreatePR, forgetest.Failure{Status: 403, Message: "Resource not accessible by this token"}),
			classes: []error{forge.ErrAuth, errdefs.ErrForbidden}, msg: "Resource not accessible by this token (the token lacks permission"},
		{name: "validation", setup: fail(forgetest.CallCreatePR, forgetest.Failure{Status: 422, Message: "Branch feature is invalid"}),
			classes: []error{errdefs.ErrUnprocessable}, msg: "422 Branch feature is invalid"},
		{name: "conflict", setup: fail(forgetest.CallCreatePR, forgetest.Failure{Status: 409, Message: "Repository is locked"}),
			classes: []error{errdefs.ErrConflict}, msg: "409 Repository is locked"},
		{name: "bad request", setup: fail(forgetest.CallCreatePR, forgetest.Failure{Status: 400, Message: "title is invalid"}),
			classes: []error{errdefs.ErrInvalid}, msg: "400 title is invalid"},
		{name: "server error", setup: fail(forgetest.CallCreatePR, forgetest.Failure{Status: 502}),
			classes: []error{errdefs.ErrUnavailable}, retryable: true, msg: "502"},
		{name: "server error on the repository", setup: fail(forgetest.CallGetRepo, forgetest.Failure{Status: 500}),
			edit: func(r *forge.PullRequest) { r.Base = "" }, classes: []error{errdefs.ErrUnavailable}, retryable: true, msg: "look up"},
		{name: "too many requests", setup: fail(forgetest.CallCreatePR, forgetest.Failure{Status: 429}),
			classes: []error{errdefs.ErrRateLimited}, retryable: true, msg: "429"},
		{name: "connection dropped", setup: fail(forgetest.CallCreatePR, forgetest.Failure{Drop: true}),
			classes: []error{errdefs.ErrUnavailable}, retryable: true, msg: "cannot reach"},
		{name: "unknown repository", setup: func(*forgetest.Server) {},
			edit: func(r *forge.PullRequest) { r.RepoURL = strings.Replace(r.RepoURL, "acme/app", "acme/nope", 1) }, classes: []error{errdefs.ErrNotFound}, msg: "404"},
		{name: "unknown repository, no base", setup: func(*forgetest.Server) {},
			edit: func(r *forge.PullRequest) {
				r.RepoURL, r.Base = strings.Replace(r.RepoURL, "acme/app", "acme/nope", 1), ""
			},
			classes: []error{errdefs.ErrNotFound}, msg: "or the token cannot see it"},
		{name: "head is the base", setup: func(*forgetest.Server) {}, edit: func(r *forge.PullRequest) { r.Head = "main" },
			classes: []error{errdefs.ErrUnprocessable}, msg: "422"},
		{name: "token in the forge's message", setup: fail(forgetest.CallCreatePR, forgetest.Failure{Status: 422, Message: "bad head for " + secret}),
			classes: []error{errdefs.ErrUnprocessable}, msg: "[REDACTED]"},
	}
	each(t, func(t *testing.T, p provider) { runErrors(t, p, cases) })
}

// runErrors plays cases on fresh servers of p.
func runErrors(t *testing.T, p provider, cases []errorCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := p.setup(t, forgetest.Options{Token: secret})
			tc.setup(e.s)
			r := e.req("feature")
			r.Token = secret
			if tc.edit != nil {
				tc.edit(&r)
			}
			pr, err := e.f.CreatePullRequest(ctx(t), r)
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
			if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), secret) {
				t.Errorf("error shows the token: %q", err)
			}
			for c := error(err); c != nil; c = errors.Unwrap(c) {
				if strings.Contains(fmt.Sprintf("%v %+v %#v", c, c, c), secret) {
					t.Errorf("the cause %T shows the token", c)
				}
			}
			if len(e.s.PRs()) != 0 {
				t.Errorf("a failed call created %+v", e.s.PRs())
			}
			if tc.retryable { // the next attempt goes through
				if _, err := e.f.CreatePullRequest(ctx(t), r); err != nil {
					t.Errorf("retry = %v", err)
				}
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		f, err := forge.New(p.config("http://" + addr))
		if err != nil {
			t.Fatal(err)
		}
		r := forge.PullRequest{RepoURL: "http://" + addr + "/acme/app.git", Head: "feature", Title: "T", Token: forgetest.DefaultToken}
		_, err = f.CreatePullRequest(ctx(t), r)
		if !forge.Retryable(err) || !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), addr) {
			t.Errorf("CreatePullRequest(nothing listening) = %v; want a retryable ErrUnavailable naming %s", err, addr)
		}

		e := p.setup(t, forgetest.Options{})
		c, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.f.CreatePullRequest(c, e.req("feature")); !errors.Is(err, context.Canceled) || forge.Retryable(err) {
			t.Errorf("CreatePullRequest(cancelled) = %v; want context.Canceled, not retryable", err)
		}
		if len(e.s.PRs()) != 0 {
			t.Errorf("a cancelled call created a pull request")
		}
	})
}

// TestBadInput is refused before any request.
func TestBadInput(t *testing.T) {
	each(t, func(t *testing.T, p provider) {
		e := p.setup(t, forgetest.Options{})
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
			{"traversal", func(p *forge.PullRequest) { p.RepoURL = "http://" + e.host() + "/acme/../../admin" }, errdefs.ErrInvalid},
		} {
			r := e.req("feature")
			tc.edit(&r)
			if _, err := e.f.CreatePullRequest(ctx(t), r); !errors.Is(err, tc.class) {
				t.Errorf("%s: CreatePullRequest = %v; want %v", tc.name, err, tc.class)
			}
		}
		e.noCalls(t, "bad input", forgetest.CallCreatePR, forgetest.CallGetRepo, forgetest.CallListPRs)
	})
}
