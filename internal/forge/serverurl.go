package forge

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
)

// serverURL checks raw, the URL of a forge's server or API that env names
// (messages name env, as it is where a wrong URL comes from), and returns
// it parsed. what says what it should be: "the GitHub API".
func serverURL(env, what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil, u.Scheme != "https" && u.Scheme != "http", u.Host == "", u.Opaque != "":
		return nil, errdefs.Invalidf("%s %s: want the http(s) URL of %s", env, showURL(raw), what)
	case u.User != nil, u.RawQuery != "", u.ForceQuery, u.Fragment != "":
		return nil, errdefs.Invalidf("%s: the URL of %s must not carry credentials, a query or a fragment", env, what)
	}
	u.Host = strings.ToLower(u.Host)
	return u, nil
}

// server is where a self-hostable forge (GitLab, Gitea) is: the URL its
// client is given and the host its repositories are on.
type server struct {
	hc   *http.Client
	url  string // scheme://host[/root], without the API's path
	root string // the path it is served under, "" at its host's root
	host string // lowercase, with the port if the URL had one
}

// newServer reads raw, the URL env names of a server whose API is at
// apiPath ("/api/v4"). The server's URL and its API's are both taken: for
// https://example.com/gitlab/api/v4 the root is /gitlab. A nil hc is
// http.DefaultClient.
func newServer(env, what, raw, apiPath string, hc *http.Client) (server, error) {
	u, err := serverURL(env, what, raw)
	if err != nil {
		return server{}, err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	s := server{hc: hc, root: strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), apiPath), host: u.Host}
	s.url = u.Scheme + "://" + u.Host + s.root
	return s, nil
}

// repoHosts are the hosts of the repositories the server holds.
func (s server) repoHosts() []string { return []string{s.host} }
