package forge

import (
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
)

// checkRequest refuses, before any request, what no forge would take, and
// reads the repository from pr's URL.
func checkRequest(pr PullRequest) (Repo, error) {
	switch {
	case pr.Token == "":
		return Repo{}, &Error{class: errdefs.ErrUnauthorized, auth: true, msg: "a token is required to open a pull request"}
	case strings.TrimSpace(pr.Title) == "":
		return Repo{}, errdefs.Invalidf("a pull request needs a title")
	case len(pr.Title) > 1024:
		return Repo{}, errdefs.Invalidf("the pull request title is %d bytes; 1024 at most", len(pr.Title))
	case len(pr.Body) > 65536:
		return Repo{}, errdefs.Invalidf("the pull request body is %d bytes; 65536 at most", len(pr.Body))
	}
	if err := checkBranch("head", pr.Head, true); err != nil {
		return Repo{}, err
	}
	if pr.Base != "" {
		if err := checkBranch("base", pr.Base, false); err != nil {
			return Repo{}, err
		}
	}
	return ParseRepoURL(pr.RepoURL)
}

// checkBranch rejects names git would refuse, which a forge would answer
// with a confusing 422.
func checkBranch(what, b string, forkOK bool) error {
	ref := b
	if forkOK {
		if owner, br, ok := strings.Cut(b, ":"); ok {
			if !validOwner.MatchString(owner) {
				return errdefs.Invalidf("%s branch %q: bad owner", what, b)
			}
			ref = br
		}
	}
	bad := ref == "" || len(ref) > 255 || strings.HasPrefix(ref, "-") || strings.HasPrefix(ref, "/") ||
		strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".lock") || strings.HasSuffix(ref, ".") ||
		strings.Contains(ref, "..") || strings.Contains(ref, "//") || strings.Contains(ref, "@{") || ref == "@"
	for _, r := range ref {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			bad = true
		}
	}
	if bad {
		return errdefs.Invalidf("%s branch %q is not a valid branch name", what, b)
	}
	return nil
}

// flat refuses a repository in nested groups on a forge that has none.
func (a api) flat(r Repo) error {
	if r.nested() {
		return errdefs.Invalidf("%s: repository path %s has nested groups; a %s is owner/name", a.name, r.FullName(), a.repo)
	}
	return nil
}
