package forge

import (
	"context"
	"net"
	"net/http"
	"slices"

	"github.com/corral-sh/corral/internal/errdefs"
)

// codebergURL is the public Forgejo instance routed to without
// configuration.
const codebergURL = "https://codeberg.org"

// router sends each call to the forge of its repository's host; the
// package documentation says how hosts match. It is immutable once built,
// so safe for concurrent use.
type router struct {
	routes   []route // the configured instances first, then the public services
	fallback Forge   // for hosts that match no route; nil refuses them
}

// route is a forge and a host its repositories are on.
type route struct {
	host  string // lowercase, with the port if the URL had one
	forge Forge
}

// hosted is a forge that knows the hosts of its repositories.
type hosted interface {
	Forge
	repoHosts() []string
}

var _ Forge = (*router)(nil)

func newRouter(cfg Config, hc *http.Client) (*router, error) {
	kind := cfg.Kind
	if kind == "" {
		kind = KindGitHub
	}
	if !slices.Contains([]string{KindGitHub, KindGitLab, KindGitea}, kind) {
		return nil, errdefs.Invalidf("forge %q is not supported (supported: %s, %s, %s)", cfg.Kind, KindGitHub, KindGitLab, KindGitea)
	}
	rt := &router{}
	if cfg.APIURL != "" {
		f, err := rt.add(kind, cfg.APIURL, hc)
		if err != nil {
			return nil, err
		}
		rt.fallback = f
	}
	for _, in := range []struct {
		kind string
		urls []string
	}{
		{KindGitHub, cfg.GitHubURLs}, {KindGitLab, cfg.GitLabURLs}, {KindGitea, cfg.GiteaURLs},
		// The public services come last: an instance configured on their
		// host takes their place.
		{KindGitHub, []string{""}}, {KindGitLab, []string{""}}, {KindGitea, []string{codebergURL}},
	} {
		for _, u := range in.urls {
			if _, err := rt.add(in.kind, u, hc); err != nil {
				return nil, err
			}
		}
	}
	return rt, nil
}

// add makes a forge of kind at raw ("" for the public service) and routes
// its hosts to it.
func (rt *router) add(kind, raw string, hc *http.Client) (Forge, error) {
	var (
		f   hosted
		err error
	)
	switch kind {
	case KindGitHub:
		f, err = NewGitHub(raw, hc)
	case KindGitLab:
		f, err = NewGitLab(raw, hc)
	default:
		f, err = NewGitea(raw, hc)
	}
	if err != nil {
		return nil, err
	}
	for _, h := range f.repoHosts() {
		rt.routes = append(rt.routes, route{host: h, forge: f})
	}
	return f, nil
}

// CreatePullRequest opens pr on the forge of its repository's host.
func (rt *router) CreatePullRequest(ctx context.Context, pr PullRequest) (*PR, error) {
	repo, err := ParseRepoURL(pr.RepoURL)
	if err != nil {
		return nil, err
	}
	f, err := rt.forgeFor(repo.Host)
	if err != nil {
		return nil, err
	}
	return f.CreatePullRequest(ctx, pr)
}

// forgeFor is the forge of repositories on host: the first route for that
// host, else the only forge with that host name, else the fallback.
func (rt *router) forgeFor(host string) (Forge, error) {
	for _, r := range rt.routes {
		if r.host == host {
			return r.forge, nil
		}
	}
	name := hostname(host)
	var named []Forge
	for _, r := range rt.routes {
		if hostname(r.host) == name && !slices.Contains(named, r.forge) {
			named = append(named, r.forge)
		}
	}
	switch {
	case len(named) == 1:
		return named[0], nil
	case len(named) > 1:
		return nil, errdefs.Unprocessablef("forge: repositories on %s: %d forges are configured on %s; give the repository URL with the port of one",
			host, len(named), name)
	case rt.fallback != nil:
		return rt.fallback, nil
	}
	return nil, errdefs.Unprocessablef("forge: no forge is configured for repositories on %s: set %s (GitHub Enterprise Server), %s (self-managed GitLab) or %s (Gitea, Forgejo) to its URL",
		host, EnvGitHubAPIURL, EnvGitLabURL, EnvGiteaURL)
}

// hostname is host without its port.
func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}
