package client_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/gittest"
)

// The test binary is the askpass program of the daemons these tests start.
func init() { gittest.ServeAskpass() }

// TestGit drives every git method of the SDK against a real daemon and a
// real git server, over TCP and a unix socket.
func TestGit(t *testing.T) {
	const user, token = "bot", "ghs_ClientT0ken"
	auth := &sandboxapi.GitCredentials{Username: user, Password: token}
	me := &sandboxapi.GitIdentity{Name: "SDK Test", Email: "sdk@example.com"}
	forEachTransport(t, func(t *testing.T, d *daemon) {
		srv := gittest.New(t, gittest.Options{Username: user, Password: token})
		url := srv.Repo(t, "app.git", map[string]string{"README.md": "# app\n"})
		srv.Commit(t, "app.git", "feature", map[string]string{"f.txt": "f\n"}, "feature")
		ctx := testContext(t, 60*time.Second)
		c := d.c

		cl, err := c.GitClone(ctx, sandboxapi.GitCloneRequest{URL: url, Path: "/repo", Branch: "work", Credentials: auth})
		if err != nil || cl.Path != "/repo" || cl.Branch != "work" || cl.Head != srv.Head(t, "app.git", "main") {
			t.Fatalf("GitClone = %+v, %v; want /repo on work at main's head", cl, err)
		}
		if _, err := c.GitClone(ctx, sandboxapi.GitCloneRequest{URL: url, Path: "/repo", Credentials: auth}); !errors.Is(err, client.ErrConflict) {
			t.Errorf("GitClone into a non-empty directory = %v; want ErrConflict", err)
		}
		if _, err := c.GitClone(ctx, sandboxapi.GitCloneRequest{URL: url, Path: "/x", Ref: "nope", Credentials: auth}); !errors.Is(err, client.ErrUnprocessable) {
			t.Errorf("GitClone of an unknown ref = %v; want ErrUnprocessable", err)
		}

		if _, err := c.WriteFile(ctx, "/repo/new.txt", strings.NewReader("new\n"), 0); err != nil {
			t.Fatal(err)
		}
		st, err := c.GitStatus(ctx, "/repo")
		if err != nil || st.Clean || len(st.Files) != 1 || st.Files[0].Worktree != sandboxapi.GitUntracked {
			t.Errorf("GitStatus = %+v, %v; want new.txt untracked", st, err)
		}
		if _, err := c.GitStatus(ctx, "/"); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("GitStatus outside a repository = %v; want ErrNotFound", err)
		}
		if err := c.GitAdd(ctx, sandboxapi.GitAddRequest{Path: "/repo", Paths: []string{"new.txt"}}); err != nil {
			t.Errorf("GitAdd: %v", err)
		}
		staged, err := c.GitDiff(ctx, "/repo", client.GitDiffOptions{Staged: true})
		if err != nil || !bytes.Contains(staged, []byte("+++ b/new.txt")) {
			t.Errorf("GitDiff(staged) = %q, %v; want new.txt", staged, err)
		}
		if _, err := c.GitDiff(ctx, "/repo", client.GitDiffOptions{Base: "HEAD", MaxBytes: 10}); !errors.Is(err, client.ErrTooLarge) {
			t.Errorf("GitDiff over max_bytes = %v; want ErrTooLarge", err)
		}
		cm, err := c.GitCommit(ctx, sandboxapi.GitCommitRequest{Path: "/repo", Message: "add new.txt", Author: me})
		if err != nil || cm.Branch != "work" || len(cm.Commit) != 40 {
			t.Fatalf("GitCommit = %+v, %v; want a commit on work", cm, err)
		}
		if _, err := c.GitCommit(ctx, sandboxapi.GitCommitRequest{Path: "/repo", Message: "again", Author: me}); !errors.Is(err, client.ErrConflict) {
			t.Errorf("GitCommit with nothing staged = %v; want ErrConflict", err)
		}
		patch, err := c.GitDiff(ctx, "/repo", client.GitDiffOptions{Base: cl.Head, Paths: []string{"new.txt"}})
		if err != nil || !bytes.Contains(patch, []byte("+new")) {
			t.Errorf("GitDiff(base, paths) = %q, %v; want new.txt's content", patch, err)
		}

		ps, err := c.GitPush(ctx, sandboxapi.GitPushRequest{Path: "/repo", SetUpstream: true, Credentials: auth})
		if err != nil || ps.Commit != cm.Commit || ps.Remote != "origin" || srv.Head(t, "app.git", "work") != cm.Commit {
			t.Errorf("GitPush = %+v, %v; want work at %s on the server", ps, err, cm.Commit)
		}

		hd, err := c.GitCreateBranch(ctx, sandboxapi.GitCreateBranchRequest{Path: "/repo", Name: "topic", From: "main"})
		if err != nil || hd.Branch != "topic" || hd.Head != cl.Head {
			t.Errorf("GitCreateBranch = %+v, %v; want topic at %s", hd, err, cl.Head)
		}
		if _, err := c.GitCreateBranch(ctx, sandboxapi.GitCreateBranchRequest{Path: "/repo", Name: "topic"}); !errors.Is(err, client.ErrConflict) {
			t.Errorf("GitCreateBranch of an existing branch = %v; want ErrConflict", err)
		}
		if _, err := c.GitCreateBranch(ctx, sandboxapi.GitCreateBranchRequest{Path: "/repo", Name: "-x"}); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("GitCreateBranch of an option = %v; want ErrInvalid", err)
		}
		hd, err = c.GitCheckout(ctx, sandboxapi.GitCheckoutRequest{Path: "/repo", Ref: "feature"})
		if err != nil || hd.Branch != "feature" || hd.Head != srv.Head(t, "app.git", "feature") {
			t.Errorf("GitCheckout(feature) = %+v, %v; want the remote's feature", hd, err)
		}
		list, err := c.GitBranches(ctx, "/repo", false)
		if err != nil || list.Current != "feature" || len(list.Branches) != 4 {
			t.Errorf("GitBranches = %+v, %v; want feature current among main, work, topic, feature", list, err)
		}
		if all, err := c.GitBranches(ctx, "/repo", true); err != nil || len(all.Branches) <= len(list.Branches) {
			t.Errorf("GitBranches(all) = %+v, %v; want the remote ones too", all, err)
		}

		lg, err := c.GitLog(ctx, "/repo", client.GitLogOptions{Ref: "work", Limit: 1})
		if err != nil || len(lg.Commits) != 1 || lg.Commits[0].SHA != cm.Commit || lg.Commits[0].Author != me.Name {
			t.Errorf("GitLog(work, 1) = %+v, %v; want the SDK's commit", lg, err)
		}
		if _, err := c.GitLog(ctx, "/repo", client.GitLogOptions{Ref: "nope"}); !errors.Is(err, client.ErrUnprocessable) {
			t.Errorf("GitLog of an unknown ref = %v; want ErrUnprocessable", err)
		}
	})
}
