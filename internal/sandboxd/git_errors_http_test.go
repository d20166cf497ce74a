package sandboxd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/gittest"
)

// TestGitCloneRefsAndFailures covers every way to name what to check out,
// and every way a clone fails: each with its status, a problem+json body
// that never quotes a password, and nothing left in the target.
func TestGitCloneRefsAndFailures(t *testing.T) {
	d, srv, url := gitFixture(t)
	first := srv.Head(t, "app.git", "main")
	second := srv.Commit(t, "app.git", "main", map[string]string{"two.txt": "2\n"}, "second")
	srv.Commit(t, "app.git", "feature", map[string]string{"f.txt": "f\n"}, "on feature")
	gittest.Git(t, "", "--git-dir="+srv.Dir("app.git"), "tag", "v1", first)
	pwned := filepath.Join(t.TempDir(), "pwned")

	for _, tc := range []struct {
		name         string
		req          sandboxapi.GitCloneRequest
		head, branch string
		commits      int
	}{
		{"default branch", sandboxapi.GitCloneRequest{Path: "/c/default"}, second, "main", 2},
		{"branch", sandboxapi.GitCloneRequest{Path: "/c/branch", Ref: "feature"}, srv.Head(t, "app.git", "feature"), "feature", 3},
		{"tag", sandboxapi.GitCloneRequest{Path: "/c/tag", Ref: "v1"}, first, "", 1},
		{"commit id", sandboxapi.GitCloneRequest{Path: "/c/id", Ref: first}, first, "", 1},
		{"short commit id", sandboxapi.GitCloneRequest{Path: "/c/short", Ref: first[:10], Branch: "work"}, first, "work", 1},
		{"shallow", sandboxapi.GitCloneRequest{Path: "/c/shallow", Depth: 1}, second, "main", 1},
	} {
		tc.req.URL, tc.req.Credentials = url, gitAuth
		code, body := d.post("/v1/git/clone", tc.req)
		wantStatus(t, tc.name, code, body, http.StatusCreated)
		res := decode[sandboxapi.GitCloneResult](t, body)
		if res.Head != tc.head || res.Branch != tc.branch || res.Path != tc.req.Path {
			t.Errorf("clone %s = %+v; want %s at %s on %q", tc.name, res, tc.req.Path, tc.head, tc.branch)
		}
		code, body = d.do(http.MethodGet, "/v1/git/log", nil, "path", tc.req.Path)
		if lg := decode[sandboxapi.GitLog](t, body); code != http.StatusOK || len(lg.Commits) != tc.commits {
			t.Errorf("clone %s: log has %d commits; want %d", tc.name, len(lg.Commits), tc.commits)
		}
	}

	d.write("/full/file.txt", "x")
	if err := os.MkdirAll(d.host("/empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrong := &sandboxapi.GitCredentials{Username: gitUser, Password: "wrong-Passw0rd-Unique"}
	for _, tc := range []struct {
		name string
		req  sandboxapi.GitCloneRequest
		want int
	}{
		{"no credentials", sandboxapi.GitCloneRequest{URL: url, Path: "/empty"}, http.StatusUnprocessableEntity},
		{"wrong credentials", sandboxapi.GitCloneRequest{URL: url, Path: "/empty", Credentials: wrong}, http.StatusUnprocessableEntity},
		{"wrong credentials in the url", sandboxapi.GitCloneRequest{URL: strings.Replace(url, "://", "://u:wrong-Passw0rd-Unique@", 1), Path: "/empty"}, http.StatusUnprocessableEntity},
		{"missing repository", sandboxapi.GitCloneRequest{URL: srv.URL + "/nope.git", Path: "/empty", Credentials: gitAuth}, http.StatusUnprocessableEntity},
		{"unreachable", sandboxapi.GitCloneRequest{URL: "http://127.0.0.1:1/x.git", Path: "/new/dir"}, http.StatusUnprocessableEntity},
		{"unknown ref", sandboxapi.GitCloneRequest{URL: url, Path: "/new/dir", Ref: "no-such-branch", Credentials: gitAuth}, http.StatusUnprocessableEntity},
		{"unknown commit id", sandboxapi.GitCloneRequest{URL: url, Path: "/empty", Ref: "deadbeef", Credentials: gitAuth}, http.StatusUnprocessableEntity},
		{"commit id with depth", sandboxapi.GitCloneRequest{URL: url, Path: "/empty", Ref: first, Depth: 1, Credentials: gitAuth}, http.StatusUnprocessableEntity},
		{"non-empty target", sandboxapi.GitCloneRequest{URL: url, Path: "/full", Credentials: gitAuth}, http.StatusConflict},
		{"target is a file", sandboxapi.GitCloneRequest{URL: url, Path: "/full/file.txt", Credentials: gitAuth}, http.StatusConflict},
		{"target escapes", sandboxapi.GitCloneRequest{URL: url, Path: "/../outside", Credentials: gitAuth}, http.StatusForbidden},
		{"relative target", sandboxapi.GitCloneRequest{URL: url, Path: "workspace"}, http.StatusBadRequest},
		{"option as url", sandboxapi.GitCloneRequest{URL: "--upload-pack=touch " + pwned, Path: "/empty"}, http.StatusBadRequest},
		{"option in url", sandboxapi.GitCloneRequest{URL: "-u", Path: "/empty"}, http.StatusBadRequest},
		{"ext transport", sandboxapi.GitCloneRequest{URL: "ext::sh -c touch% " + pwned, Path: "/empty"}, http.StatusBadRequest},
		{"file url", sandboxapi.GitCloneRequest{URL: "file://" + srv.Dir("app.git"), Path: "/empty"}, http.StatusBadRequest},
		{"local path", sandboxapi.GitCloneRequest{URL: srv.Dir("app.git"), Path: "/empty"}, http.StatusBadRequest},
		{"credentials for ssh", sandboxapi.GitCloneRequest{URL: "git@github.com:o/r.git", Path: "/empty", Credentials: gitAuth}, http.StatusBadRequest},
		{"credentials twice", sandboxapi.GitCloneRequest{URL: strings.Replace(url, "://", "://u:p@", 1), Path: "/empty", Credentials: gitAuth}, http.StatusBadRequest},
		{"option as ref", sandboxapi.GitCloneRequest{URL: url, Path: "/empty", Ref: "--upload-pack=touch " + pwned}, http.StatusBadRequest},
		{"option as branch", sandboxapi.GitCloneRequest{URL: url, Path: "/empty", Branch: "-D"}, http.StatusBadRequest},
		{"bad branch name", sandboxapi.GitCloneRequest{URL: url, Path: "/empty", Branch: "a..b"}, http.StatusBadRequest},
		{"negative depth", sandboxapi.GitCloneRequest{URL: url, Path: "/empty", Depth: -1}, http.StatusBadRequest},
		{"negative timeout", sandboxapi.GitCloneRequest{URL: url, Path: "/empty", TimeoutMS: -1}, http.StatusBadRequest},
		{"no url", sandboxapi.GitCloneRequest{Path: "/empty"}, http.StatusBadRequest},
	} {
		code, body := d.post("/v1/git/clone", tc.req)
		wantStatus(t, tc.name, code, body, tc.want)
		if bytes.Contains(body, []byte("wrong-Passw0rd-Unique")) || bytes.Contains(body, []byte(gitToken)) {
			t.Errorf("clone %s: the answer quotes a password: %s", tc.name, body)
		}
	}
	if entries, err := os.ReadDir(d.host("/empty")); err != nil || len(entries) != 0 {
		t.Errorf("failed clones left %d entries in /empty (%v); want it empty", len(entries), err)
	}
	if _, err := os.Stat(d.host("/new")); err == nil {
		if entries, _ := os.ReadDir(d.host("/new")); len(entries) != 0 {
			t.Errorf("failed clones left /new/dir behind")
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("an option smuggled into the request ran a command")
	}

	code, body := d.do(http.MethodPost, "/v1/git/clone", strings.NewReader(`{"url":"`+url+`","bogus":1}`))
	wantStatus(t, "unknown field", code, body, http.StatusBadRequest)
	code, body = d.do(http.MethodPost, "/v1/git/clone", strings.NewReader("not json"))
	wantStatus(t, "not json", code, body, http.StatusBadRequest)
	huge := `{"url":"` + url + `","path":"/` + strings.Repeat("a", 2<<20) + `"}`
	code, body = d.do(http.MethodPost, "/v1/git/clone", strings.NewReader(huge))
	wantStatus(t, "huge body", code, body, http.StatusRequestEntityTooLarge)
}

// TestGitBranchesAndCheckout creates, lists and switches branches, and
// refuses what would lose work or name an option.
func TestGitBranchesAndCheckout(t *testing.T) {
	d, srv, url := gitFixture(t)
	featureHead := srv.Commit(t, "app.git", "feature", map[string]string{"f.txt": "f\n"}, "on feature")
	gittest.Git(t, "", "--git-dir="+srv.Dir("app.git"), "tag", "v1", "main")
	code, body := d.post("/v1/git/clone", sandboxapi.GitCloneRequest{URL: url, Credentials: gitAuth})
	wantStatus(t, "clone", code, body, http.StatusCreated)
	main := decode[sandboxapi.GitCloneResult](t, body).Head

	code, body = d.post("/v1/git/branches", sandboxapi.GitCreateBranchRequest{Name: "topic"})
	wantStatus(t, "create topic", code, body, http.StatusCreated)
	if h := decode[sandboxapi.GitHead](t, body); h.Branch != "topic" || h.Head != main {
		t.Errorf("create topic = %+v; want topic at %s", h, main)
	}
	code, body = d.post("/v1/git/branches", sandboxapi.GitCreateBranchRequest{Name: "from-feature", From: "origin/feature", Checkout: true})
	wantStatus(t, "create from origin/feature", code, body, http.StatusCreated)
	if st := gitStatus(t, d); st.Branch != "from-feature" || st.Head != featureHead {
		t.Errorf("status = %+v; want from-feature at %s", st, featureHead)
	}

	code, body = d.do(http.MethodGet, "/v1/git/branches", nil)
	wantStatus(t, "branches", code, body, http.StatusOK)
	list := decode[sandboxapi.GitBranchList](t, body)
	names := map[string]sandboxapi.GitBranch{}
	for _, b := range list.Branches {
		names[b.Name] = b
	}
	if list.Current != "from-feature" || len(list.Branches) != 3 || !names["from-feature"].Current ||
		names["main"].Upstream != "origin/main" || names["topic"].Head != main || names["main"].Remote {
		t.Errorf("branches = %+v; want main (tracking origin/main), topic, from-feature (current)", list)
	}
	code, body = d.do(http.MethodGet, "/v1/git/branches", nil, "all", "true")
	wantStatus(t, "branches all", code, body, http.StatusOK)
	remotes := 0
	for _, b := range decode[sandboxapi.GitBranchList](t, body).Branches {
		if b.Remote {
			remotes++
			if b.Name != "origin/main" && b.Name != "origin/feature" {
				t.Errorf("remote branch %q; want origin/main and origin/feature only", b.Name)
			}
		}
	}
	if remotes != 2 {
		t.Errorf("branches?all=true lists %d remote branches; want 2", remotes)
	}

	for _, tc := range []struct {
		name         string
		req          sandboxapi.GitCheckoutRequest
		branch, head string
	}{
		{"local branch", sandboxapi.GitCheckoutRequest{Ref: "main"}, "main", main},
		{"remote branch", sandboxapi.GitCheckoutRequest{Ref: "feature"}, "feature", featureHead},
		{"tag", sandboxapi.GitCheckoutRequest{Ref: "v1"}, "", main},
		{"commit", sandboxapi.GitCheckoutRequest{Ref: featureHead[:12]}, "", featureHead},
		{"create", sandboxapi.GitCheckoutRequest{Ref: "new", Create: true, From: "main"}, "new", main},
	} {
		code, body := d.post("/v1/git/checkout", tc.req)
		wantStatus(t, "checkout "+tc.name, code, body, http.StatusOK)
		if h := decode[sandboxapi.GitHead](t, body); h.Branch != tc.branch || h.Head != tc.head {
			t.Errorf("checkout %s = %+v; want %q at %s", tc.name, h, tc.branch, tc.head)
		}
	}

	// A switch that would overwrite a local change is refused and keeps it.
	d.write("/workspace/f.txt", "local work\n")
	code, body = d.post("/v1/git/checkout", sandboxapi.GitCheckoutRequest{Ref: "feature"})
	wantStatus(t, "checkout over local changes", code, body, http.StatusConflict)
	if b, _ := os.ReadFile(d.host("/workspace/f.txt")); string(b) != "local work\n" {
		t.Errorf("f.txt = %q after a refused checkout; want the local work", b)
	}
	// A file named like a branch is never "checked out" from the index.
	d.write("/workspace/README.md", "edited\n")
	code, body = d.post("/v1/git/checkout", sandboxapi.GitCheckoutRequest{Ref: "README.md"})
	wantStatus(t, "checkout of a file name", code, body, http.StatusUnprocessableEntity)
	if b, _ := os.ReadFile(d.host("/workspace/README.md")); string(b) != "edited\n" {
		t.Errorf("README.md = %q; checkout of its name discarded the edit", b)
	}

	for _, tc := range []struct {
		name  string
		route string
		req   any
		want  int
	}{
		{"existing branch", "/v1/git/branches", sandboxapi.GitCreateBranchRequest{Name: "topic"}, http.StatusConflict},
		{"unknown from", "/v1/git/branches", sandboxapi.GitCreateBranchRequest{Name: "x", From: "nope"}, http.StatusUnprocessableEntity},
		{"option as name", "/v1/git/branches", sandboxapi.GitCreateBranchRequest{Name: "--delete"}, http.StatusBadRequest},
		{"option as from", "/v1/git/branches", sandboxapi.GitCreateBranchRequest{Name: "x", From: "--all"}, http.StatusBadRequest},
		{"bad name", "/v1/git/branches", sandboxapi.GitCreateBranchRequest{Name: "a b"}, http.StatusBadRequest},
		{"unknown ref", "/v1/git/checkout", sandboxapi.GitCheckoutRequest{Ref: "nope"}, http.StatusUnprocessableEntity},
		{"option as ref", "/v1/git/checkout", sandboxapi.GitCheckoutRequest{Ref: "--orphan=x"}, http.StatusBadRequest},
		{"no ref", "/v1/git/checkout", sandboxapi.GitCheckoutRequest{}, http.StatusBadRequest},
		{"from without create", "/v1/git/checkout", sandboxapi.GitCheckoutRequest{Ref: "main", From: "main"}, http.StatusBadRequest},
		{"create existing", "/v1/git/checkout", sandboxapi.GitCheckoutRequest{Ref: "main", Create: true}, http.StatusConflict},
	} {
		code, body := d.post(tc.route, tc.req)
		wantStatus(t, tc.name, code, body, tc.want)
	}
}

// TestGitAddAndCommit stages paths or everything, commits with and
// without an author, and refuses an empty commit unless asked for one.
func TestGitAddAndCommit(t *testing.T) {
	d, srv, url := gitFixture(t)
	code, body := d.post("/v1/git/clone", sandboxapi.GitCloneRequest{URL: url, Credentials: gitAuth})
	wantStatus(t, "clone", code, body, http.StatusCreated)

	code, body = d.post("/v1/git/commit", sandboxapi.GitCommitRequest{Message: "nothing", Author: author})
	wantStatus(t, "nothing to commit", code, body, http.StatusConflict)
	code, body = d.post("/v1/git/commit", sandboxapi.GitCommitRequest{Message: "nothing", Author: author, All: true})
	wantStatus(t, "nothing to commit, all", code, body, http.StatusConflict)
	code, body = d.post("/v1/git/commit", sandboxapi.GitCommitRequest{Message: "empty on purpose", Author: author, AllowEmpty: true})
	wantStatus(t, "allow_empty", code, body, http.StatusCreated)

	d.write("/workspace/a.txt", "a\n")
	d.write("/workspace/b.txt", "b\n")
	d.write("/workspace/-rf", "a file named like an option\n")
	code, body = d.post("/v1/git/add", sandboxapi.GitAddRequest{Paths: []string{"a.txt", "-rf"}})
	wantStatus(t, "add", code, body, http.StatusNoContent)
	files := map[string]sandboxapi.GitFileStatus{}
	for _, f := range gitStatus(t, d).Files {
		files[f.Path] = f
	}
	if files["a.txt"].Index != sandboxapi.GitAdded || files["-rf"].Index != sandboxapi.GitAdded || files["b.txt"].Worktree != sandboxapi.GitUntracked {
		t.Errorf("status after add = %+v; want a.txt and -rf staged, b.txt untracked", files)
	}
	code, body = d.do(http.MethodGet, "/v1/git/diff", nil, "staged", "true")
	wantStatus(t, "staged diff", code, body, http.StatusOK)
	if !bytes.Contains(body, []byte("+++ b/a.txt")) || bytes.Contains(body, []byte("b.txt")) {
		t.Errorf("staged diff = %s; want a.txt only", body)
	}
	code, body = d.post("/v1/git/commit", sandboxapi.GitCommitRequest{Message: "# not a comment\nadd a", Author: author})
	wantStatus(t, "commit", code, body, http.StatusCreated)
	cm := decode[sandboxapi.GitCommitResult](t, body)
	if got := gittest.Git(t, d.host("/workspace"), "log", "-1", "--format=%B%x00%an%x00%ae%x00%cn", cm.Commit); got != "# not a comment\nadd a\n\x00Agent Smith\x00agent@example.com\x00Agent Smith\n" {
		t.Errorf("commit message and identity = %q", got)
	}
	if st := gitStatus(t, d); len(st.Files) != 1 || st.Files[0].Path != "b.txt" {
		t.Errorf("status after commit = %+v; want b.txt untracked only", st)
	}

	for _, tc := range []struct {
		name  string
		route string
		req   any
		want  int
	}{
		{"add nothing", "/v1/git/add", sandboxapi.GitAddRequest{}, http.StatusBadRequest},
		{"add both", "/v1/git/add", sandboxapi.GitAddRequest{All: true, Paths: []string{"a.txt"}}, http.StatusBadRequest},
		{"add outside", "/v1/git/add", sandboxapi.GitAddRequest{Paths: []string{"../../etc/passwd"}}, http.StatusForbidden},
		{"add absolute", "/v1/git/add", sandboxapi.GitAddRequest{Paths: []string{"/etc/passwd"}}, http.StatusBadRequest},
		{"add missing", "/v1/git/add", sandboxapi.GitAddRequest{Paths: []string{"nope.txt"}}, http.StatusUnprocessableEntity},
		{"add a glob literally", "/v1/git/add", sandboxapi.GitAddRequest{Paths: []string{"*.txt"}}, http.StatusUnprocessableEntity},
		{"no message", "/v1/git/commit", sandboxapi.GitCommitRequest{Message: " \n", All: true}, http.StatusBadRequest},
		{"bad author", "/v1/git/commit", sandboxapi.GitCommitRequest{Message: "m", All: true, Author: &sandboxapi.GitIdentity{Name: "x>", Email: "e"}}, http.StatusBadRequest},
		{"author without email", "/v1/git/commit", sandboxapi.GitCommitRequest{Message: "m", All: true, Author: &sandboxapi.GitIdentity{Name: "x"}}, http.StatusBadRequest},
	} {
		code, body := d.post(tc.route, tc.req)
		wantStatus(t, tc.name, code, body, tc.want)
	}
	if st := gitStatus(t, d); len(st.Files) != 1 || st.Files[0].Index != "" {
		t.Errorf("status after refused requests = %+v; want b.txt untracked, nothing staged", st)
	}
	_ = srv
}

// TestGitConcurrentCommits: commits from many clients at once are
// serialised, none fails for git's index lock, none is lost.
func TestGitConcurrentCommits(t *testing.T) {
	d, _, url := gitFixture(t)
	code, body := d.post("/v1/git/clone", sandboxapi.GitCloneRequest{URL: url, Credentials: gitAuth})
	wantStatus(t, "clone", code, body, http.StatusCreated)
	const n = 8
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			d.write(fmt.Sprintf("/workspace/c%d.txt", i), "x\n")
			req, _ := json.Marshal(sandboxapi.GitCommitRequest{Message: fmt.Sprintf("c%d", i), Author: author, All: true, AllowEmpty: true})
			resp, err := d.HTTP.Post(d.URL+"/v1/git/commit", "application/json", bytes.NewReader(req))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusCreated {
			t.Errorf("commit %d: status %d; want 201", i, c)
		}
	}
	_, body = d.do(http.MethodGet, "/v1/git/log", nil)
	if lg := decode[sandboxapi.GitLog](t, body); len(lg.Commits) != n+1 {
		t.Errorf("log has %d commits; want %d", len(lg.Commits), n+1)
	}
	if st := gitStatus(t, d); !st.Clean {
		t.Errorf("status = %+v; want every file committed", st)
	}
}

// TestGitConcurrentClones: of clones racing into one directory, one wins
// and the others are 409 without touching what it cloned.
func TestGitConcurrentClones(t *testing.T) {
	d, _, url := gitFixture(t)
	const n = 4
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			req, _ := json.Marshal(sandboxapi.GitCloneRequest{URL: url, Path: "/race", Credentials: gitAuth})
			resp, err := d.HTTP.Post(d.URL+"/v1/git/clone", "application/json", bytes.NewReader(req))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	won := 0
	for _, c := range codes {
		switch c {
		case http.StatusCreated:
			won++
		case http.StatusConflict:
		default:
			t.Errorf("concurrent clone: status %d; want 201 or 409", c)
		}
	}
	if won != 1 {
		t.Errorf("%d concurrent clones succeeded; want 1 (statuses %v)", won, codes)
	}
	if st := gitStatus(t, d, "path", "/race"); !st.Clean || st.Head == "" {
		t.Errorf("status of the winning clone = %+v; want a clean checkout", st)
	}
}
