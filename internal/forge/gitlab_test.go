package forge_test

import (
	"testing"

	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// TestGitLabNestedGroups: a project in subgroups, by https and by ssh on
// another port, with its default branch read from the project.
func TestGitLabNestedGroups(t *testing.T) {
	const path = "acme/platform/tools/app"
	e := providers[1].setup(t, forgetest.Options{Repos: []string{path}})
	r := e.req("feature")
	r.RepoURL, r.Base = e.repoURL(path), ""
	pr, err := e.f.CreatePullRequest(ctx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.page(path, 1); pr.Number != 1 || pr.URL != want || pr.Existed {
		t.Errorf("CreatePullRequest = %+v; want !1 at %s", pr, want)
	}
	if prs := e.s.PRs(); len(prs) != 1 || prs[0].Repo != path || prs[0].Base != "main" {
		t.Errorf("created %+v; want one on %s into main", prs, path)
	}
	r.RepoURL = "ssh://git@127.0.0.1:2222/" + path + ".git"
	again, err := e.f.CreatePullRequest(ctx(t), r)
	if err != nil || again.Number != 1 || !again.Existed {
		t.Errorf("CreatePullRequest(ssh URL) = %+v, %v; want !1, existed", again, err)
	}
}

// TestGitLabTargets: GitLab refuses a second merge request from a source
// into the same target only; the one returned is the one into the target
// asked for.
func TestGitLabTargets(t *testing.T) {
	e := providers[1].setup(t, forgetest.Options{})
	r := e.req("feature")
	for _, tc := range []struct {
		base    string
		number  int
		existed bool
	}{{"main", 1, false}, {"dev", 2, false}, {"dev", 2, true}, {"main", 1, true}} {
		r.Base = tc.base
		pr, err := e.f.CreatePullRequest(ctx(t), r)
		if err != nil || pr.Number != tc.number || pr.Existed != tc.existed {
			t.Errorf("CreatePullRequest(feature into %s) = %+v, %v; want !%d, existed %v", tc.base, pr, err, tc.number, tc.existed)
		}
	}
}
