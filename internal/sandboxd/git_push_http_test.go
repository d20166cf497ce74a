package sandboxd_test

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/gittest"
)

// TestGitPushFailures: a remote that rejects the push (a hook, a branch
// that moved on) is 409 with its reason; refused credentials are 422;
// force overwrites; bad requests are 400 before git runs.
func TestGitPushFailures(t *testing.T) {
	d, srv, url := gitFixture(t)
	code, body := d.post("/v1/git/clone", sandboxapi.GitCloneRequest{URL: url, Credentials: gitAuth})
	wantStatus(t, "clone", code, body, http.StatusCreated)
	commit := func(file string) string {
		t.Helper()
		d.write("/workspace/"+file, file+"\n")
		code, body := d.post("/v1/git/commit", sandboxapi.GitCommitRequest{Message: file, Author: author, All: true})
		wantStatus(t, "commit "+file, code, body, http.StatusCreated)
		return decode[sandboxapi.GitCommitResult](t, body).Commit
	}

	// A pre-receive hook declines pushes to "protected".
	srv.RejectPushes(t, "app.git", "protected", "protected branch: changes need a review")
	commit("a.txt")
	code, body = d.post("/v1/git/push", sandboxapi.GitPushRequest{RemoteBranch: "protected", Credentials: gitAuth})
	wantStatus(t, "push to a protected branch", code, body, http.StatusConflict)
	if !bytes.Contains(body, []byte("pre-receive hook declined")) || !bytes.Contains(body, []byte("changes need a review")) {
		t.Errorf("rejected push = %s; want the hook's refusal and message", body)
	}
	if h := srv.Head(t, "app.git", "protected"); h != "" {
		t.Errorf("protected = %s on the remote; want it absent", h)
	}

	// The remote's main moved on: not a fast-forward, unless forced.
	theirs := srv.Commit(t, "app.git", "main", map[string]string{"theirs.txt": "t\n"}, "theirs")
	ours := commit("b.txt")
	code, body = d.post("/v1/git/push", sandboxapi.GitPushRequest{Credentials: gitAuth})
	wantStatus(t, "non-fast-forward push", code, body, http.StatusConflict)
	if !bytes.Contains(body, []byte("rejected")) {
		t.Errorf("non-fast-forward push = %s; want the rejection", body)
	}
	if h := srv.Head(t, "app.git", "main"); h != theirs {
		t.Errorf("remote main = %s after a rejected push; want %s", h, theirs)
	}

	wrong := &sandboxapi.GitCredentials{Username: gitUser, Password: "wrong-Push-Passw0rd"}
	for _, tc := range []struct {
		name string
		req  sandboxapi.GitPushRequest
		want int
	}{
		{"no credentials", sandboxapi.GitPushRequest{Force: true}, http.StatusUnprocessableEntity},
		{"wrong credentials", sandboxapi.GitPushRequest{Force: true, Credentials: wrong}, http.StatusUnprocessableEntity},
		{"unknown remote", sandboxapi.GitPushRequest{Remote: "upstream", Credentials: gitAuth}, http.StatusUnprocessableEntity},
		{"unknown branch", sandboxapi.GitPushRequest{Branch: "nope", Credentials: gitAuth}, http.StatusUnprocessableEntity},
		{"remote and url", sandboxapi.GitPushRequest{Remote: "origin", URL: url}, http.StatusBadRequest},
		{"option as remote", sandboxapi.GitPushRequest{Remote: "--receive-pack=touch /tmp/x"}, http.StatusBadRequest},
		{"option as url", sandboxapi.GitPushRequest{URL: "--receive-pack=touch /tmp/x"}, http.StatusBadRequest},
		{"option as branch", sandboxapi.GitPushRequest{Branch: "--all"}, http.StatusBadRequest},
		{"option as remote branch", sandboxapi.GitPushRequest{RemoteBranch: "--mirror"}, http.StatusBadRequest},
		{"refspec as branch", sandboxapi.GitPushRequest{Branch: "main:refs/heads/x"}, http.StatusBadRequest},
		{"credentials without password", sandboxapi.GitPushRequest{Credentials: &sandboxapi.GitCredentials{Username: "u"}}, http.StatusBadRequest},
	} {
		code, body := d.post("/v1/git/push", tc.req)
		wantStatus(t, tc.name, code, body, tc.want)
		if bytes.Contains(body, []byte("wrong-Push-Passw0rd")) || bytes.Contains(body, []byte(gitToken)) {
			t.Errorf("push %s: the answer quotes a password: %s", tc.name, body)
		}
	}
	if h := srv.Head(t, "app.git", "main"); h != theirs {
		t.Errorf("remote main = %s after refused pushes; want %s", h, theirs)
	}

	code, body = d.post("/v1/git/push", sandboxapi.GitPushRequest{Force: true, Credentials: gitAuth})
	wantStatus(t, "forced push", code, body, http.StatusOK)
	if h := srv.Head(t, "app.git", "main"); h != ours {
		t.Errorf("remote main = %s after a forced push; want %s", h, ours)
	}

	// Detached HEAD: the branch must be named.
	code, body = d.post("/v1/git/checkout", sandboxapi.GitCheckoutRequest{Ref: ours})
	wantStatus(t, "detach", code, body, http.StatusOK)
	code, body = d.post("/v1/git/push", sandboxapi.GitPushRequest{Credentials: gitAuth})
	wantStatus(t, "push from a detached HEAD", code, body, http.StatusConflict)
	code, body = d.post("/v1/git/push", sandboxapi.GitPushRequest{Branch: "main", RemoteBranch: "copy", Credentials: gitAuth})
	wantStatus(t, "push a named branch", code, body, http.StatusOK)
	if h := srv.Head(t, "app.git", "copy"); h != ours {
		t.Errorf("remote copy = %s; want %s", h, ours)
	}
}

// TestGitPathsAndRepositories: every route refuses a path outside the
// root, a missing one, a file, and a directory outside any repository,
// with the files API's statuses; read-only routes validate their query.
func TestGitPathsAndRepositories(t *testing.T) {
	d, _, url := gitFixture(t)
	code, body := d.post("/v1/git/clone", sandboxapi.GitCloneRequest{URL: url, Credentials: gitAuth})
	wantStatus(t, "clone", code, body, http.StatusCreated)
	outside := t.TempDir()
	gittest.Git(t, outside, "init", "--quiet")
	d.symlink(outside, "/escape")
	d.write("/plain/file.txt", "not a repository\n")
	d.write("/workspace/sub/inner.txt", "inner\n")
	if err := os.MkdirAll(d.host("/empty-repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, d.host("/empty-repo"), "init", "--quiet")

	paths := []struct {
		path string
		want int
	}{
		{"/../etc", http.StatusForbidden},
		{"/escape", http.StatusForbidden},
		{"/nope", http.StatusNotFound},
		{"/plain", http.StatusNotFound},
		{"/plain/file.txt", http.StatusBadRequest},
		{"relative", http.StatusBadRequest},
		{"/work\x00space", http.StatusBadRequest},
	}
	gets := []string{"/v1/git/status", "/v1/git/diff", "/v1/git/branches", "/v1/git/log"}
	for _, p := range paths {
		for _, route := range gets {
			code, body := d.do(http.MethodGet, route, nil, "path", p.path)
			wantStatus(t, route+" "+p.path, code, body, p.want)
		}
		posts := map[string]any{
			"/v1/git/branches": sandboxapi.GitCreateBranchRequest{Path: p.path, Name: "x"},
			"/v1/git/checkout": sandboxapi.GitCheckoutRequest{Path: p.path, Ref: "main"},
			"/v1/git/add":      sandboxapi.GitAddRequest{Path: p.path, All: true},
			"/v1/git/commit":   sandboxapi.GitCommitRequest{Path: p.path, Message: "m", All: true},
			"/v1/git/push":     sandboxapi.GitPushRequest{Path: p.path},
		}
		for route, req := range posts {
			code, body := d.post(route, req)
			wantStatus(t, route+" "+p.path, code, body, p.want)
		}
	}
	if _, err := os.Stat(outside + "/x"); err == nil {
		t.Errorf("a request reached the repository outside the root")
	}

	// A subdirectory of a repository is in it.
	if st := gitStatus(t, d, "path", "/workspace/sub"); st.Path != "/workspace/sub" || len(st.Files) != 1 || st.Files[0].Path != "sub/inner.txt" {
		t.Errorf("status of a subdirectory = %+v; want sub/inner.txt untracked", st)
	}
	// A repository without commits has a status, no branches, no history.
	if st := gitStatus(t, d, "path", "/empty-repo"); st.Head != "" || !st.Clean {
		t.Errorf("status of an empty repository = %+v; want no head, clean", st)
	}
	code, body = d.do(http.MethodGet, "/v1/git/log", nil, "path", "/empty-repo")
	wantStatus(t, "log of an empty repository", code, body, http.StatusOK)
	if lg := decode[sandboxapi.GitLog](t, body); len(lg.Commits) != 0 {
		t.Errorf("log of an empty repository = %+v; want none", lg)
	}

	d.write("/workspace/big.txt", strings.Repeat("a line of text\n", 10000))
	for _, tc := range []struct {
		route string
		kv    []string
		want  int
	}{
		{"/v1/git/diff", []string{"base", "HEAD", "max_bytes", "1000"}, http.StatusRequestEntityTooLarge},
		{"/v1/git/diff", []string{"base", "HEAD", "paths", "README.md"}, http.StatusOK},
		{"/v1/git/diff", []string{"base", "nope"}, http.StatusUnprocessableEntity},
		{"/v1/git/diff", []string{"base", "--output=/tmp/pwned"}, http.StatusBadRequest},
		{"/v1/git/diff", []string{"paths", "../../etc/passwd"}, http.StatusForbidden},
		{"/v1/git/diff", []string{"staged", "maybe"}, http.StatusBadRequest},
		{"/v1/git/diff", []string{"max_bytes", "-1"}, http.StatusBadRequest},
		{"/v1/git/diff", []string{"max_bytes", "999999999999"}, http.StatusBadRequest},
		{"/v1/git/log", []string{"ref", "-p"}, http.StatusBadRequest},
		{"/v1/git/log", []string{"ref", "--output=/tmp/pwned"}, http.StatusBadRequest},
		{"/v1/git/log", []string{"ref", "nope"}, http.StatusUnprocessableEntity},
		{"/v1/git/log", []string{"limit", "100000"}, http.StatusBadRequest},
		{"/v1/git/log", []string{"limit", "x"}, http.StatusBadRequest},
		{"/v1/git/log", []string{"ref", "HEAD~0..HEAD"}, http.StatusOK},
		{"/v1/git/status", []string{"timeout_ms", "abc"}, http.StatusBadRequest},
		{"/v1/git/status", []string{"timeout_ms", "99999999999"}, http.StatusBadRequest},
		{"/v1/git/branches", []string{"all", "sometimes"}, http.StatusBadRequest},
	} {
		code, body := d.do(http.MethodGet, tc.route, nil, tc.kv...)
		wantStatus(t, tc.route+" "+strings.Join(tc.kv, "="), code, body, tc.want)
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Errorf("an option in a query reached git")
	}
}

// TestGitOpsHasNoHTTP keeps transport out of the git service (STYLE.md
// rule 5), as TestDomainPackagesHaveNoHTTP does for the others.
func TestGitOpsHasNoHTTP(t *testing.T) {
	for _, dep := range goListDeps(t, "github.com/corral-sh/corral/internal/sandboxd/gitops") {
		if dep == "net/http" || strings.HasPrefix(dep, "net/http/") {
			t.Errorf("internal/sandboxd/gitops depends on %s", dep)
		}
	}
}
