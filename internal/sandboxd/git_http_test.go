package sandboxd_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/gittest"
)

// The test binary is the askpass program of the daemons these tests start
// (the daemon runs os.Executable() for git's prompts).
func init() { gittest.ServeAskpass() }

const (
	gitUser  = "corral-bot"
	gitToken = "ghp_SandboxdGitT0kenThatMustNeverLeak"
)

var gitAuth = &sandboxapi.GitCredentials{Username: gitUser, Password: gitToken}

// gitFixture is a daemon and a git server that requires gitAuth, holding
// app.git (main: README.md, src/main.go, old.txt).
func gitFixture(t *testing.T) (*fsd, *gittest.Server, string) {
	t.Helper()
	srv := gittest.New(t, gittest.Options{Username: gitUser, Password: gitToken})
	url := srv.Repo(t, "app.git", map[string]string{
		"README.md":   "# app\n",
		"src/main.go": "package main\n\nfunc main() {}\n",
		"old.txt":     "to be deleted\n",
	})
	return startFS(t), srv, url
}

var author = &sandboxapi.GitIdentity{Name: "Agent Smith", Email: "agent@example.com"}

// TestGitJobWorkflow is what a repository job does: clone at a ref onto a
// new branch, change files (text, binary, new, deleted), take the diff
// against the base, commit, push, read the log. The diff applied to the
// base reproduces the commit exactly.
func TestGitJobWorkflow(t *testing.T) {
	d, srv, url := gitFixture(t)

	code, body := d.post("/v1/git/clone", sandboxapi.GitCloneRequest{URL: url, Ref: "main", Branch: "corral/job_1", Credentials: gitAuth})
	wantStatus(t, "clone", code, body, http.StatusCreated)
	cl := decode[sandboxapi.GitCloneResult](t, body)
	base := srv.Head(t, "app.git", "main")
	if cl.Path != "/workspace" || cl.Head != base || cl.Branch != "corral/job_1" {
		t.Fatalf("clone = %+v; want /workspace at %s on corral/job_1", cl, base)
	}
	st := gitStatus(t, d)
	if !st.Clean || st.Branch != "corral/job_1" || st.Head != base {
		t.Errorf("status after clone = %+v; want clean corral/job_1 at the base", st)
	}

	binary := make([]byte, 512)
	for i := range binary {
		binary[i] = byte(i)
	}
	d.write("/workspace/README.md", "# app\n\nNow with a feature.\n")
	d.write("/workspace/src/feature.go", "package main\n\nfunc feature() {}\n")
	d.write("/workspace/assets/logo.bin", string(binary))
	if err := os.Remove(d.host("/workspace/old.txt")); err != nil {
		t.Fatal(err)
	}
	st = gitStatus(t, d)
	want := map[string]sandboxapi.GitFileStatus{
		"README.md":       {Path: "README.md", Worktree: sandboxapi.GitModified},
		"old.txt":         {Path: "old.txt", Worktree: sandboxapi.GitDeleted},
		"src/feature.go":  {Path: "src/feature.go", Worktree: sandboxapi.GitUntracked},
		"assets/logo.bin": {Path: "assets/logo.bin", Worktree: sandboxapi.GitUntracked},
	}
	if st.Clean || len(st.Files) != len(want) {
		t.Errorf("status after edits = %+v; want %d changed files", st, len(want))
	}
	for _, f := range st.Files {
		if want[f.Path] != f {
			t.Errorf("status file %+v; want %+v", f, want[f.Path])
		}
	}

	// The plain diff is the work tree against the index: no new files.
	code, plain := d.do(http.MethodGet, "/v1/git/diff", nil)
	wantStatus(t, "diff", code, plain, http.StatusOK)
	if !bytes.Contains(plain, []byte("+Now with a feature.")) || bytes.Contains(plain, []byte("feature.go")) {
		t.Errorf("diff = %s; want the README change and no untracked file", plain)
	}
	// Against the base: everything, new and binary files included, and
	// neither HEAD nor the index moves.
	code, patch := d.do(http.MethodGet, "/v1/git/diff", nil, "base", cl.Head)
	wantStatus(t, "diff base", code, patch, http.StatusOK)
	for _, s := range []string{"+++ b/src/feature.go", "GIT binary patch", "deleted file mode", "+Now with a feature."} {
		if !bytes.Contains(patch, []byte(s)) {
			t.Errorf("diff against the base lacks %q:\n%s", s, patch)
		}
	}
	if again := gitStatus(t, d); len(again.Files) != len(st.Files) || again.Head != base {
		t.Errorf("status after diff = %+v; want it unchanged (%+v)", again, st)
	}

	code, body = d.post("/v1/git/commit", sandboxapi.GitCommitRequest{Message: "Add a feature\n\nBody.", Author: author, All: true})
	wantStatus(t, "commit", code, body, http.StatusCreated)
	cm := decode[sandboxapi.GitCommitResult](t, body)
	if cm.Branch != "corral/job_1" || len(cm.Commit) != 40 || cm.Commit == base {
		t.Fatalf("commit = %+v; want a new commit on corral/job_1", cm)
	}
	if st := gitStatus(t, d); !st.Clean || st.Head != cm.Commit {
		t.Errorf("status after commit = %+v; want clean at %s", st, cm.Commit)
	}
	// After the commit the diff against the base is the same patch.
	_, after := d.do(http.MethodGet, "/v1/git/diff", nil, "base", cl.Head)
	if !bytes.Equal(after, patch) {
		t.Errorf("diff against the base after the commit differs from before:\n%s\n---\n%s", after, patch)
	}
	// And it reproduces the commit's tree on a fresh checkout of the base.
	check := t.TempDir()
	gittest.Git(t, "", "clone", "--quiet", srv.Dir("app.git"), check)
	gittest.Git(t, check, "checkout", "--quiet", base)
	patchFile := filepath.Join(t.TempDir(), "changes.patch")
	if err := os.WriteFile(patchFile, patch, 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, check, "apply", "--index", patchFile)
	gotTree := strings.TrimSpace(gittest.Git(t, check, "write-tree"))
	wantTree := strings.TrimSpace(gittest.Git(t, d.host("/workspace"), "rev-parse", cm.Commit+"^{tree}"))
	if gotTree != wantTree {
		t.Errorf("base + patch = tree %s; want the commit's tree %s", gotTree, wantTree)
	}

	code, body = d.post("/v1/git/push", sandboxapi.GitPushRequest{URL: url, Credentials: gitAuth})
	wantStatus(t, "push", code, body, http.StatusOK)
	ps := decode[sandboxapi.GitPushResult](t, body)
	if ps.Branch != "corral/job_1" || ps.RemoteBranch != "corral/job_1" || ps.Commit != cm.Commit || ps.UpToDate || ps.Remote != url {
		t.Errorf("push = %+v; want corral/job_1 at %s to %s", ps, cm.Commit, url)
	}
	if h := srv.Head(t, "app.git", "corral/job_1"); h != cm.Commit {
		t.Errorf("remote corral/job_1 = %q; want %s", h, cm.Commit)
	}
	if c, ok := srv.File(t, "app.git", "corral/job_1", "assets/logo.bin"); !ok || c != string(binary) {
		t.Errorf("remote assets/logo.bin: %d bytes, %v; want the 512 binary bytes", len(c), ok)
	}
	if _, ok := srv.File(t, "app.git", "corral/job_1", "old.txt"); ok {
		t.Errorf("remote still has old.txt")
	}
	rlog := srv.Log(t, "app.git", "corral/job_1")
	if len(rlog) != 2 || rlog[0].Subject != "Add a feature" || rlog[0].AuthorName != author.Name || rlog[0].AuthorEmail != author.Email {
		t.Errorf("remote log = %+v; want the agent's commit on the base", rlog)
	}
	code, body = d.post("/v1/git/push", sandboxapi.GitPushRequest{Credentials: gitAuth, SetUpstream: true})
	wantStatus(t, "second push", code, body, http.StatusOK)
	if ps := decode[sandboxapi.GitPushResult](t, body); !ps.UpToDate || ps.Remote != "origin" {
		t.Errorf("second push = %+v; want up to date, to origin", ps)
	}
	if st := gitStatus(t, d); st.Upstream != "origin/corral/job_1" || st.Ahead != 0 {
		t.Errorf("status after push = %+v; want upstream origin/corral/job_1, not ahead", st)
	}

	code, body = d.do(http.MethodGet, "/v1/git/log", nil, "limit", "5")
	wantStatus(t, "log", code, body, http.StatusOK)
	lg := decode[sandboxapi.GitLog](t, body)
	if len(lg.Commits) != 2 || lg.Commits[0].SHA != cm.Commit || lg.Commits[1].SHA != base ||
		lg.Commits[0].Author != author.Name || lg.Commits[0].Email != author.Email ||
		lg.Commits[0].Subject != "Add a feature" || len(lg.Commits[0].Parents) != 1 || lg.Commits[0].Time.IsZero() {
		t.Errorf("log = %+v; want the commit then the base", lg)
	}
	for _, r := range srv.Requests() {
		if r.Header.Get("Authorization") != "" {
			return // the token arrived as basic auth; TestGitCredentialsLeakNowhere checks the value
		}
	}
	t.Errorf("no request to the git server carried credentials")
}

func gitStatus(t *testing.T, d *fsd, kv ...string) sandboxapi.GitStatus {
	t.Helper()
	code, body := d.do(http.MethodGet, "/v1/git/status", nil, kv...)
	wantStatus(t, "status", code, body, http.StatusOK)
	return decode[sandboxapi.GitStatus](t, body)
}
