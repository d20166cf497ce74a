// Package forge opens pull requests on the service that hosts a job's
// repository: the last step of a repository job, after its branch was
// pushed. It speaks to GitHub (github.com and GitHub Enterprise Server),
// GitLab (gitlab.com and self-managed, where a pull request is a merge
// request) and Gitea or Forgejo (Codeberg and self-hosted), each through
// its official client library.
//
// # Choosing the forge
//
// New returns a Forge that sends each call to the forge of the host in the
// repository's URL (PullRequest.RepoURL):
//
//	github.com     GitHub, at api.github.com
//	gitlab.com     GitLab, at https://gitlab.com
//	codeberg.org   Forgejo, at https://codeberg.org
//	another host   the self-hosted instance configured for it
//
// A host matches an instance when it is the host of the instance's URL,
// port included, or else when only its name is and no other forge has that
// name (an ssh clone URL has another port than the web's). A repository on
// a host that matches nothing goes to the forge Config.APIURL names: GitHub
// at CORRAL_GITHUB_API_URL, as when GitHub was the only provider. Without
// one the call fails with errdefs.ErrUnprocessable, naming the host and the
// variables to set.
//
// # Configuration
//
// ConfigFromEnv reads the self-hosted instances; each variable holds one
// URL or a comma-separated list:
//
//	CORRAL_GITHUB_API_URL  GitHub Enterprise Server: the server's URL
//	                       (https://ghe.example.com, to which /api/v3/ is
//	                       added) or its API's (https://ghe.example.com/api/v3).
//	                       The first also takes repositories on unknown hosts.
//	CORRAL_GITLAB_URL      self-managed GitLab: https://gitlab.example.com
//	                       (or its API's, .../api/v4; a relative URL root
//	                       such as https://example.com/gitlab is kept)
//	CORRAL_GITEA_URL       Gitea or Forgejo: https://gitea.example.com
//
// New fails with errdefs.ErrInvalid on a URL that is not http(s) or that
// carries credentials, a query or a fragment. The token is given per call
// (the tenant's repository secret) and is sent only to the API of the
// repository's forge: as a Bearer token to GitHub, as PRIVATE-TOKEN to
// GitLab, as "token" to Gitea.
//
// On GitLab a project is addressed by its full path, group/subgroup/name,
// and PR.Number is the merge request's iid (!n); a head in another project
// (a fork's "owner:branch") is refused there. Gitea takes fork heads as
// GitHub does.
//
// # Errors
//
// Every failure is an *Error whose message names what failed and never
// contains the token. errors.Is matches its errdefs class, and ErrAuth for
// a token the forge rejected (401) or that lacks permission (403);
// Retryable tells a transient failure (network, 5xx, rate limits) from one
// that will fail again. Creating a pull request that is already open for
// the same head branch is not an error: the existing one is returned, so a
// job that crashed after creating it can simply try again.
package forge

import (
	"context"
	"net/http"
	"os"
	"strings"
	"time"
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
	// it names the host, the owner and the repository.
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
	URL    string // the page people open (html_url, web_url)
	// Existed is true when the pull request was already open for the head
	// branch and was returned rather than created.
	Existed bool
}

// Kinds of forge.
const (
	KindGitHub = "github"
	KindGitLab = "gitlab"
	KindGitea  = "gitea" // also Forgejo
)

// The variables ConfigFromEnv reads; see the package documentation.
const (
	EnvGitHubAPIURL = "CORRAL_GITHUB_API_URL"
	EnvGitLabURL    = "CORRAL_GITLAB_URL"
	EnvGiteaURL     = "CORRAL_GITEA_URL"
)

// Config configures the forges New routes to. The public services
// (github.com, gitlab.com, codeberg.org) need no configuration.
type Config struct {
	// Kind is the provider at APIURL: "github" (also when ""), "gitlab"
	// or "gitea".
	Kind string
	// APIURL is a self-hosted instance of Kind (for GitHub, its API's
	// URL), which also takes the repositories on hosts that match no
	// forge; "" for none.
	APIURL string
	// GitHubURLs, GitLabURLs and GiteaURLs are further self-hosted
	// instances, each taking the repositories on its host.
	GitHubURLs []string
	GitLabURLs []string
	GiteaURLs  []string
	// HTTPClient makes the requests; one with a 30 s timeout when nil.
	HTTPClient *http.Client
}

// ConfigFromEnv is the configuration the environment gives: the instances
// in CORRAL_GITHUB_API_URL, CORRAL_GITLAB_URL and CORRAL_GITEA_URL, the
// first GitHub one as APIURL.
func ConfigFromEnv() Config {
	c := Config{Kind: KindGitHub, GitLabURLs: splitURLs(os.Getenv(EnvGitLabURL)), GiteaURLs: splitURLs(os.Getenv(EnvGiteaURL))}
	if gh := splitURLs(os.Getenv(EnvGitHubAPIURL)); len(gh) > 0 {
		c.APIURL, c.GitHubURLs = gh[0], gh[1:]
	}
	return c
}

// splitURLs reads a comma-separated list, dropping spaces and empty items.
func splitURLs(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// New returns the forge cfg describes: one that routes each call to the
// forge of its repository's host.
func New(cfg Config) (Forge, error) {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	rt, err := newRouter(cfg, hc)
	if err != nil {
		return nil, err
	}
	return rt, nil
}
