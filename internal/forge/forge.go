// Package forge opens pull requests on the service that hosts a job's
// repository: the last step of a repository job, after its branch was
// pushed. GitHub (github.com and GitHub Enterprise Server) is the one
// provider so far; New picks it from a Config.
//
// # Configuration
//
// ConfigFromEnv reads CORRAL_GITHUB_API_URL: the base URL of the GitHub
// REST API, https://api.github.com when unset. For GitHub Enterprise Server
// give the server's URL (https://ghe.example.com, to which /api/v3/ is
// added) or the API's (https://ghe.example.com/api/v3). The token is given
// per call (the tenant's repository secret) and is sent only to that API.
//
// # Errors
//
// Every failure is an *Error whose message names what failed and never
// contains the token. errors.Is matches its errdefs class, and ErrAuth for
// a token GitHub rejected (401) or that lacks permission (403); Retryable
// tells a transient failure (network, 5xx, rate limits) from one that will
// fail again. Creating a pull request that is already open for the same
// head branch is not an error: the existing one is returned, so a job that
// crashed after creating it can simply try again.
package forge

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Forge opens pull requests.
type Forge interface {
	// CreatePullRequest opens a pull request, or returns the one already
	// open for the same head branch.
	CreatePullRequest(ctx context.Context, pr PullRequest) (*PR, error)
}

// PullRequest is what to open.
type PullRequest struct {
	// RepoURL is the repository's clone URL (https, ssh or scp-like):
	// it names the owner and the repository.
	RepoURL string
	// Head is the branch holding the changes ("owner:branch" for a fork);
	// Base the branch to merge into, the repository's default branch when
	// "".
	Head, Base string
	Title      string
	Body       string
	// Token authenticates to the forge; it never appears in errors.
	Token string
}

// PR is an opened pull request.
type PR struct {
	Number int
	URL    string // the page people open (html_url)
	// Existed is true when the pull request was already open for the head
	// branch and was returned rather than created.
	Existed bool
}

// Kinds of forge.
const (
	KindGitHub = "github"
)

// EnvGitHubAPIURL names the GitHub API (GitHub Enterprise Server); see the
// package documentation.
const EnvGitHubAPIURL = "CORRAL_GITHUB_API_URL"

// Config selects and configures a forge.
type Config struct {
	// Kind is the provider: "github" (also when "").
	Kind string
	// APIURL is the provider's API base URL; its public service when "".
	APIURL string
	// HTTPClient makes the requests; one with a 30 s timeout when nil.
	HTTPClient *http.Client
}

// ConfigFromEnv is the configuration the environment gives: GitHub, at
// CORRAL_GITHUB_API_URL when set.
func ConfigFromEnv() Config {
	return Config{Kind: KindGitHub, APIURL: strings.TrimSpace(os.Getenv(EnvGitHubAPIURL))}
}

// New returns the forge cfg describes.
func New(cfg Config) (Forge, error) {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	switch cfg.Kind {
	case "", KindGitHub:
		return NewGitHub(cfg.APIURL, hc)
	}
	return nil, errdefs.Invalidf("forge %q is not supported (supported: %s)", cfg.Kind, KindGitHub)
}

// ErrAuth matches errors caused by the token: rejected (401) or without
// the permission the call needs (403).
var ErrAuth = errors.New("forge: token rejected or lacking permission")

// Error is a failed forge call.
type Error struct {
	// Status is the forge's HTTP status, 0 when it was not reached.
	Status int
	// Retryable is true for failures that may pass on a later attempt:
	// the network, a 5xx, a rate limit.
	Retryable bool
	class     error // an errdefs class
	auth      bool
	msg       string // client-safe, token-free
	cause     error  // never an error that holds the request (its headers carry the token)
}

func (e *Error) Error() string { return e.msg }

// Is matches the errdefs class, and ErrAuth for token failures.
func (e *Error) Is(target error) bool {
	return target == e.class || (target == ErrAuth && e.auth)
}

// Unwrap returns the cause: a network or context error, if any.
func (e *Error) Unwrap() error { return e.cause }

// Retryable reports whether err is a forge failure worth retrying.
func Retryable(err error) bool {
	var fe *Error
	return errors.As(err, &fe) && fe.Retryable
}

// redact removes token from s.
func redact(s, token string) string {
	if len(token) < 4 { // shorter strings would mangle messages; no real token is
		return s
	}
	return strings.ReplaceAll(s, token, "[REDACTED]")
}
