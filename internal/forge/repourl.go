package forge

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Repo names a repository on a forge.
type Repo struct {
	Host string // lowercase, with a port if the URL had one
	// Owner is the user or organization, or on GitLab the namespace:
	// "group/subgroup" for a project in a subgroup.
	Owner string
	Name  string // without ".git"
}

// FullName is "owner/name" ("group/subgroup/name" on GitLab).
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// nested reports whether the owner is a namespace of several levels,
// which only GitLab has.
func (r Repo) nested() bool { return strings.Contains(r.Owner, "/") }

// within is r with root, the path a forge is served under
// (https://host/root/), removed from the front of its owner.
func (r Repo) within(root string) Repo {
	root = strings.Trim(root, "/")
	if root == "" {
		return r
	}
	if rest, ok := strings.CutPrefix(r.Owner, root+"/"); ok {
		r.Owner = rest
	}
	return r
}

// maxGroupDepth is how many levels of groups GitLab nests at most.
const maxGroupDepth = 20

var (
	validOwner = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$`)
	validName  = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	validHost  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$`)
)

// ParseRepoURL reads the owner and name from a clone URL:
//
//	https://github.com/owner/name(.git)     also http://, with or without credentials
//	ssh://git@github.com(:22)/owner/name.git
//	git@github.com:owner/name.git           scp-like
//	git://host/owner/name.git
//
// on github.com or any other host. The path must be owner/name, or on hosts
// other than github.com group/subgroup/name (GitLab's nested groups, up to
// 20 levels): anything else (a segment that is not a name, "..", escapes, a
// query, a local path) is ErrInvalid, since owner and name end up in API
// paths. Messages show the URL without its credentials.
func ParseRepoURL(raw string) (Repo, error) {
	shown := showURL(raw)
	bad := func(why string) (Repo, error) {
		return Repo{}, errdefs.Invalidf("repository URL %s: %s", shown, why)
	}
	if raw == "" {
		return Repo{}, errdefs.Invalidf("repository URL is empty")
	}
	if len(raw) > 2048 {
		return bad("too long")
	}
	for _, r := range raw {
		if r <= ' ' || r == 0x7f {
			return bad("contains spaces or control characters")
		}
	}
	var host, path string
	if scheme, _, ok := strings.Cut(raw, "://"); ok {
		u, err := url.Parse(raw)
		if err != nil {
			return bad("not a URL")
		}
		switch strings.ToLower(scheme) {
		case "https", "http", "ssh", "git":
		default:
			return bad("want an https, ssh or git URL of a hosted repository")
		}
		if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(raw, "?#") {
			return bad("must not have a query or a fragment")
		}
		if strings.Contains(raw, "%") {
			return bad("must not contain escapes (%)")
		}
		host, path = u.Host, u.Path
	} else {
		// scp-like: [user@]host:owner/name
		hp, p, ok := strings.Cut(raw, ":")
		h := hp[strings.LastIndex(hp, "@")+1:]
		if !ok || h == "" || strings.Contains(h, "/") || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
			return bad("want a URL such as https://github.com/owner/name.git or git@github.com:owner/name.git")
		}
		if strings.ContainsAny(p, "?#%") {
			return bad("must not contain '?', '#' or '%'")
		}
		host, path = h, p
	}
	if !validHost.MatchString(host) {
		return bad("bad host")
	}
	host = strings.ToLower(host)
	path = strings.TrimPrefix(path, "/")
	path = strings.TrimSuffix(path, "/")
	segs := strings.Split(path, "/")
	switch {
	case len(segs) < 2, len(segs) > 2 && (host == "github.com" || strings.HasPrefix(host, "github.com:")):
		return bad("the path must be owner/name")
	case len(segs) > maxGroupDepth+1:
		return bad("the path must be owner/name or group/subgroup/name")
	}
	name := strings.TrimSuffix(segs[len(segs)-1], ".git")
	for _, owner := range segs[:len(segs)-1] {
		if !validOwner.MatchString(owner) || owner == "." || owner == ".." {
			return bad("bad owner")
		}
	}
	if !validName.MatchString(name) || name == "." || name == ".." {
		return bad("bad repository name")
	}
	return Repo{Host: host, Owner: strings.Join(segs[:len(segs)-1], "/"), Name: name}, nil
}

// showURL is raw without credentials, quoted and cut for messages.
func showURL(raw string) string {
	s := raw
	if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			u.User = nil
			_, rest, _ = strings.Cut(u.String(), "://")
			rest = "***@" + rest
		} else if i := strings.LastIndex(rest, "@"); i >= 0 {
			rest = "***@" + rest[i+1:]
		}
		s = scheme + "://" + rest
	} else if hp, path, ok := strings.Cut(raw, ":"); ok {
		if i := strings.LastIndex(hp, "@"); i >= 0 {
			s = "***@" + hp[i+1:] + ":" + path
		}
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return strconv.Quote(s)
}
