package forge_test

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// redirect is a transport that sends every request to a test server
// instead of the host it names, less a path prefix (strip), and records
// the hosts the requests were meant for. The client libraries above it run
// unchanged.
type redirect struct {
	to    *forgetest.Server
	strip string

	mu    sync.Mutex
	hosts []string
}

func (rd *redirect) RoundTrip(r *http.Request) (*http.Response, error) {
	rd.mu.Lock()
	rd.hosts = append(rd.hosts, r.URL.Host)
	rd.mu.Unlock()
	u, err := url.Parse(rd.to.URL)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, ""
	r.URL.Path = strings.TrimPrefix(r.URL.Path, rd.strip)
	r.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, rd.strip)
	return http.DefaultTransport.RoundTrip(r)
}

// seen is the hosts requests were meant for, each once.
func (rd *redirect) seen() []string {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return slices.Compact(slices.Sorted(slices.Values(rd.hosts)))
}

func pull(repoURL string) forge.PullRequest {
	return forge.PullRequest{RepoURL: repoURL, Head: "feature", Base: "main", Title: "T", Token: forgetest.DefaultToken}
}

// TestRoutePublic: github.com, gitlab.com and codeberg.org need no
// configuration and reach their services' APIs.
func TestRoutePublic(t *testing.T) {
	for _, tc := range []struct {
		repoURL string
		p       provider
		apiHost string
	}{
		{"https://github.com/acme/app.git", providers[0], "api.github.com"},
		{"git@github.com:acme/app.git", providers[0], "api.github.com"},
		{"https://gitlab.com/acme/app", providers[1], "gitlab.com"},
		{"ssh://git@gitlab.com:22/acme/team/app.git", providers[1], "gitlab.com"},
		{"https://codeberg.org/acme/app.git", providers[2], "codeberg.org"},
	} {
		s := tc.p.start(t, forgetest.Options{Repos: []string{"acme/app", "acme/team/app"}})
		rd := &redirect{to: s}
		f, err := forge.New(forge.Config{HTTPClient: &http.Client{Transport: rd}})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := f.CreatePullRequest(ctx(t), pull(tc.repoURL))
		if err != nil || pr.Number != 1 || len(s.PRs()) != 1 {
			t.Errorf("%s: CreatePullRequest = %+v, %v; want #1 on the %s server", tc.repoURL, pr, err, tc.p.name)
		}
		if got := rd.seen(); !slices.Equal(got, []string{tc.apiHost}) {
			t.Errorf("%s: requests went to %v; want %s", tc.repoURL, got, tc.apiHost)
		}
	}
}

// TestRouteInstances: each repository goes to the configured instance on
// its host, whatever the provider, several of one provider included.
func TestRouteInstances(t *testing.T) {
	gh := forgetest.Start(t, forgetest.Options{Repos: []string{"acme/app"}})
	gl1 := forgetest.StartGitLab(t, forgetest.Options{Repos: []string{"acme/app"}})
	gl2 := forgetest.StartGitLab(t, forgetest.Options{Repos: []string{"acme/app"}})
	gt := forgetest.StartGitea(t, forgetest.Options{Repos: []string{"acme/app"}})
	f, err := forge.New(forge.Config{Kind: forge.KindGitHub, APIURL: gh.URL,
		GitLabURLs: []string{gl1.URL, gl2.URL + "/api/v4"}, GiteaURLs: []string{gt.URL}})
	if err != nil {
		t.Fatal(err)
	}
	servers := []*forgetest.Server{gh, gl1, gl2, gt}
	for i, s := range servers {
		if _, err := f.CreatePullRequest(ctx(t), pull(s.URL+"/acme/app.git")); err != nil {
			t.Errorf("CreatePullRequest(%s/acme/app) = %v", s.URL, err)
		}
		for j, other := range servers {
			if got, want := len(other.PRs()), btoi(j <= i); got != want {
				t.Errorf("after a pull request on server %d, server %d holds %d; want %d", i, j, got, want)
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRouteByName: a URL whose port is not the instance's (ssh) or that
// has none (scp-like) goes to the only forge with that host name; with
// several, the call fails naming them.
func TestRouteByName(t *testing.T) {
	gl := forgetest.StartGitLab(t, forgetest.Options{Repos: []string{"acme/app"}})
	gt := forgetest.StartGitea(t, forgetest.Options{Repos: []string{"acme/app"}})
	f, err := forge.New(forge.Config{GitLabURLs: []string{gl.URL}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"git@127.0.0.1:acme/app.git", "ssh://git@127.0.0.1:2222/acme/app.git"} {
		if _, err := f.CreatePullRequest(ctx(t), pull(u)); err != nil {
			t.Errorf("CreatePullRequest(%s) = %v; want it on the only forge at 127.0.0.1", u, err)
		}
	}
	both, err := forge.New(forge.Config{GitLabURLs: []string{gl.URL}, GiteaURLs: []string{gt.URL}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = both.CreatePullRequest(ctx(t), pull("git@127.0.0.1:acme/app.git"))
	if !errors.Is(err, errdefs.ErrUnprocessable) || !strings.Contains(err.Error(), "2 forges are configured on 127.0.0.1") {
		t.Errorf("CreatePullRequest(a host name two forges share) = %v; want ErrUnprocessable naming it", err)
	}
	if _, err := both.CreatePullRequest(ctx(t), pull(gt.URL+"/acme/app.git")); err != nil || len(gt.PRs()) != 1 {
		t.Errorf("CreatePullRequest(with the Gitea port) = %v; want it on Gitea", err)
	}
}

// TestRouteUnknownHost: a host no forge matches goes to the forge APIURL
// names (GitHub's as when it was the only provider, or another Kind's);
// without one the call fails naming the host and the variables to set.
func TestRouteUnknownHost(t *testing.T) {
	const repoURL = "https://git.example.org/acme/app.git"
	f, err := forge.New(forge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.CreatePullRequest(ctx(t), pull(repoURL))
	if !errors.Is(err, errdefs.ErrUnprocessable) {
		t.Errorf("CreatePullRequest(unknown host) = %v; want ErrUnprocessable", err)
	}
	for _, want := range []string{"git.example.org", forge.EnvGitHubAPIURL, forge.EnvGitLabURL, forge.EnvGiteaURL} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	for _, p := range providers {
		s := p.start(t, forgetest.Options{Repos: []string{"acme/app"}})
		kind := strings.ToLower(p.name)
		f, err := forge.New(forge.Config{Kind: kind, APIURL: s.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.CreatePullRequest(ctx(t), pull(repoURL)); err != nil || len(s.PRs()) != 1 {
			t.Errorf("Kind %s: CreatePullRequest(unknown host) = %v; want it on the APIURL's forge", kind, err)
		}
	}
}

// TestRouteGHECom: GHE.com's API is at api.<subdomain>.ghe.com, its
// repositories at <subdomain>.ghe.com.
func TestRouteGHECom(t *testing.T) {
	s := forgetest.Start(t, forgetest.Options{Repos: []string{"acme/app"}})
	rd := &redirect{to: s}
	f, err := forge.New(forge.Config{APIURL: "https://api.octo.ghe.com", GitLabURLs: []string{"https://gitlab.example.com"},
		HTTPClient: &http.Client{Transport: rd}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreatePullRequest(ctx(t), pull("https://octo.ghe.com/acme/app.git")); err != nil {
		t.Fatal(err)
	}
	if got := rd.seen(); !slices.Equal(got, []string{"api.octo.ghe.com"}) {
		t.Errorf("requests went to %v; want api.octo.ghe.com", got)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(forge.EnvGitHubAPIURL, " https://ghe.example.com/api/v3 ")
	t.Setenv(forge.EnvGitLabURL, "")
	t.Setenv(forge.EnvGiteaURL, "")
	if c := forge.ConfigFromEnv(); c.Kind != forge.KindGitHub || c.APIURL != "https://ghe.example.com/api/v3" ||
		len(c.GitHubURLs)+len(c.GitLabURLs)+len(c.GiteaURLs) != 0 {
		t.Errorf("ConfigFromEnv = %+v; want github at https://ghe.example.com/api/v3", c)
	}
	t.Setenv(forge.EnvGitHubAPIURL, "https://ghe.example.com, https://ghe2.example.com/api/v3,")
	t.Setenv(forge.EnvGitLabURL, " https://gitlab.example.com ,,https://example.com/gitlab ")
	t.Setenv(forge.EnvGiteaURL, "https://gitea.example.com")
	c := forge.ConfigFromEnv()
	if c.APIURL != "https://ghe.example.com" || !slices.Equal(c.GitHubURLs, []string{"https://ghe2.example.com/api/v3"}) ||
		!slices.Equal(c.GitLabURLs, []string{"https://gitlab.example.com", "https://example.com/gitlab"}) ||
		!slices.Equal(c.GiteaURLs, []string{"https://gitea.example.com"}) {
		t.Errorf("ConfigFromEnv = %+v; want the lists, the first GitHub URL as APIURL", c)
	}
	if _, err := forge.New(c); err != nil {
		t.Errorf("New(%+v) = %v", c, err)
	}
	for _, v := range []string{forge.EnvGitHubAPIURL, forge.EnvGitLabURL, forge.EnvGiteaURL} {
		t.Setenv(v, "")
	}
	if c := forge.ConfigFromEnv(); c.APIURL != "" || len(c.GitHubURLs)+len(c.GitLabURLs)+len(c.GiteaURLs) != 0 {
		t.Errorf("ConfigFromEnv with no env = %+v; want no instances", c)
	}
}

// TestNewBadConfig: a bad URL in any variable, or an unknown Kind, fails
// New with ErrInvalid naming the variable, and without the credentials.
func TestNewBadConfig(t *testing.T) {
	for _, v := range []string{forge.EnvGitHubAPIURL, forge.EnvGitLabURL, forge.EnvGiteaURL} {
		for _, bad := range []string{"gitlab.example.com", "ftp://host.example.com", "https://user:pw@host.example.com",
			"https://host.example.com/?q=1", "https://host.example.com/#x", "https://", "https://ok.example.com,ftp://user:pw@x"} {
			t.Setenv(forge.EnvGitHubAPIURL, "")
			t.Setenv(forge.EnvGitLabURL, "")
			t.Setenv(forge.EnvGiteaURL, "")
			t.Setenv(v, bad)
			_, err := forge.New(forge.ConfigFromEnv())
			if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), v) {
				t.Errorf("%s=%s: New = %v; want ErrInvalid naming %s", v, bad, err, v)
			} else if strings.Contains(err.Error(), "pw@") {
				t.Errorf("%s=%s: error shows the credentials: %v", v, bad, err)
			}
		}
	}
	if _, err := forge.New(forge.Config{Kind: "bitbucket", APIURL: "https://bitbucket.example.com"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("New(bitbucket) = %v; want ErrInvalid", err)
	}
	if _, err := forge.NewGitea("", nil); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), forge.EnvGiteaURL) {
		t.Errorf("NewGitea(\"\") = %v; want ErrInvalid naming %s: Gitea has no default server", err, forge.EnvGiteaURL)
	}
}
