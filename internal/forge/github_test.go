package forge_test

import (
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// TestGitHubErrors plays the failures only GitHub has: its wording, its
// validation details, its rate limit on a 403.
func TestGitHubErrors(t *testing.T) {
	fail := func(f forgetest.Failure) func(*forgetest.Server) {
		return func(s *forgetest.Server) { s.Fail(forgetest.CallCreatePR, f) }
	}
	runErrors(t, providers[0], []errorCase{
		{name: "wrong token", setup: func(s *forgetest.Server) { s.SetToken("ghp_the_right_one_is_different_000000000") },
			classes: []error{forge.ErrAuth, errdefs.ErrUnauthorized}, msg: "401 Bad credentials (the token is wrong"},
		{name: "no commits", setup: fail(forgetest.NoCommits("main", "feature")),
			classes: []error{errdefs.ErrUnprocessable}, msg: "Validation Failed: No commits between main and feature"},
		{name: "validation details", setup: fail(forgetest.Failure{Status: 422, Message: "Validation Failed",
			Errors: []forgetest.ErrorDetail{{Resource: "PullRequest", Field: "base", Code: "invalid"}}}),
			classes: []error{errdefs.ErrUnprocessable}, msg: "PullRequest base invalid"},
		{name: "rate limit", setup: fail(forgetest.Failure{Status: 403, Message: "API rate limit exceeded", RateLimited: true}),
			classes: []error{errdefs.ErrRateLimited}, retryable: true, msg: "rate limit exceeded (resets at"},
	})
}
