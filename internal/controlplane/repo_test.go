package controlplane_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/forge/forgetest"
	"github.com/corral-sh/corral/internal/gittest"
)

// repoEnv is a control plane with a private git server (basic auth) and a
// GitHub-compatible API server on loopback, and the token in a tenant
// secret. Repository jobs run on bwrap's host template (it has git) with
// network egress, which on bwrap shares the host's loopback.
type repoEnv struct {
	a     *api
	git   *gittest.Server
	forge *forgetest.Server
	url   string
}

const repoToken = "ghp_corralRepoTestToken_0123456789abcdef"

func newRepoEnv(t *testing.T) *repoEnv {
	t.Helper()
	g := gittest.New(t, gittest.Options{Username: "x-access-token", Password: repoToken})
	f := forgetest.Start(t, forgetest.Options{Token: repoToken, Repos: []string{"acme/calc"}})
	url := g.Repo(t, "acme/calc.git", map[string]string{
		"calc.sh": "echo $(( $1 - $2 ))\n",
		"test.sh": "got=$(sh calc.sh 2 3)\nif [ \"$got\" = 5 ]; then echo PASS; else echo \"FAIL: got $got\"; exit 1; fi\n",
	})
	srv := controlplanetest.Start(t, controlplanetest.Options{Forge: forge.Config{Kind: forge.KindGitHub, APIURL: f.URL}})
	a := apiFor(t, srv)
	if resp, body := a.do("PUT", "/v1/secrets/GITHUB_TOKEN", cpapi.SecretRequest{Value: repoToken}); resp.StatusCode != 201 {
		t.Fatalf("secret: %d %s", resp.StatusCode, body)
	}
	return &repoEnv{a: a, git: g, forge: f, url: url}
}

func (e *repoEnv) job(command string, repo cpapi.Repo) cpapi.Job {
	j := e.a.submit(cpapi.JobRequest{Agent: cpapi.AgentScript, Template: "host", Network: cpapi.NetworkEgress,
		Command: command, Repo: &repo})
	return e.a.waitJob(j.ID, cpapi.JobCompleted, cpapi.JobFailed)
}

// TestRepositoryJobEndToEnd: a job on a private repository with a failing
// test; the script fixes it; the job ends with the branch pushed, a pull
// request opened, the diff served, and the token nowhere in what the job
// produced.
func TestRepositoryJobEndToEnd(t *testing.T) {
	e := newRepoEnv(t)
	j := e.job("sh test.sh || { sed -i 's/-/+/' calc.sh && sh test.sh; }",
		cpapi.Repo{URL: e.url, Ref: "main", Secret: "GITHUB_TOKEN"})
	evs := e.a.events(j.ID)
	if j.Status != cpapi.JobCompleted || j.Result == nil {
		t.Fatalf("job = %+v\n%s", j, dumpEvents(evs))
	}
	branch := "corral/" + j.ID
	if j.Result.Branch != branch || j.Result.Commit == "" || j.Result.PRURL == "" {
		t.Fatalf("result = %+v", j.Result)
	}
	if head := e.git.Head(t, "acme/calc.git", branch); head != j.Result.Commit {
		t.Errorf("pushed head = %q, result commit %q", head, j.Result.Commit)
	}
	if calc, _ := e.git.File(t, "acme/calc.git", branch, "calc.sh"); calc != "echo $(( $1 + $2 ))\n" {
		t.Errorf("calc.sh on the branch = %q", calc)
	}
	if log := e.git.Log(t, "acme/calc.git", branch); len(log) != 2 || log[0].AuthorName != "Corral" {
		t.Errorf("branch log = %+v", log)
	}
	if main, _ := e.git.File(t, "acme/calc.git", "main", "calc.sh"); main != "echo $(( $1 - $2 ))\n" {
		t.Errorf("main changed: %q", main)
	}
	prs := e.forge.PRs()
	if len(prs) != 1 || prs[0].Head != branch || prs[0].Base != "main" || prs[0].HTMLURL != j.Result.PRURL {
		t.Fatalf("PRs = %+v", prs)
	}
	resp, diff := e.a.do("GET", "/v1/jobs/"+j.ID+"/diff", nil)
	if resp.StatusCode != 200 || !bytes.Contains(diff, []byte("-echo $(( $1 - $2 ))")) || !bytes.Contains(diff, []byte("+echo $(( $1 + $2 ))")) {
		t.Errorf("diff = %d\n%s", resp.StatusCode, diff)
	}
	// The token: nowhere in the events, the artifacts, the server's data.
	_, zipBody := e.a.do("GET", "/v1/jobs/"+j.ID+"/artifacts", nil)
	if bytes.Contains(zipBody, []byte(repoToken)) {
		t.Error("the token is in the artifacts")
	}
	for _, ev := range evs {
		if bytes.Contains(ev.Data, []byte(repoToken)) {
			t.Errorf("the token is in event %d: %s", ev.Seq, ev.Data)
		}
	}
	_ = filepath.WalkDir(e.a.srv.DataDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(repoToken)) {
				t.Errorf("the token is in plain text in %s", p)
			}
		}
		return nil
	})
	// The clone and the push were authenticated.
	var authed int
	for _, r := range e.git.Requests() {
		if r.Header.Get("Authorization") != "" {
			authed++
		}
	}
	if authed == 0 {
		t.Error("no request reached the git server with credentials")
	}
}

func TestRepositoryJobWithoutChanges(t *testing.T) {
	e := newRepoEnv(t)
	j := e.job("cat calc.sh", cpapi.Repo{URL: e.url, Ref: "main", Secret: "GITHUB_TOKEN"})
	if j.Status != cpapi.JobCompleted || j.Result.Branch != "" || j.Result.PRURL != "" || !strings.Contains(j.Result.Summary, "No changes") {
		t.Fatalf("job = %+v %+v", j, j.Result)
	}
	if len(e.forge.PRs()) != 0 || e.git.Head(t, "acme/calc.git", "corral/"+j.ID) != "" {
		t.Error("a job without changes pushed or opened a pull request")
	}
}

func TestRepositoryJobFailures(t *testing.T) {
	e := newRepoEnv(t)
	for _, c := range []struct {
		name   string
		setup  func()
		repo   cpapi.Repo
		reason string
		msg    string
	}{
		{name: "unknown repository", repo: cpapi.Repo{URL: e.git.URL + "/acme/nope.git", Secret: "GITHUB_TOKEN"}, reason: cpapi.ReasonCloneFailed},
		{name: "no credentials", repo: cpapi.Repo{URL: e.url}, reason: cpapi.ReasonCloneFailed},
		{name: "unknown ref", repo: cpapi.Repo{URL: e.url, Ref: "no-such-branch", Secret: "GITHUB_TOKEN"}, reason: cpapi.ReasonCloneFailed},
		{name: "push rejected", setup: func() {
			hook := filepath.Join(e.git.Dir("acme/calc.git"), "hooks", "pre-receive")
			if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'branch protected' >&2\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		},
			repo: cpapi.Repo{URL: e.url, Ref: "main", Secret: "GITHUB_TOKEN"}, reason: cpapi.ReasonPushFailed},
		{name: "pull request refused", setup: func() {
			os.Remove(filepath.Join(e.git.Dir("acme/calc.git"), "hooks", "pre-receive"))
			e.forge.Fail(forgetest.CallCreatePR, forgetest.Failure{Status: 500, Message: "GitHub is down"})
		}, repo: cpapi.Repo{URL: e.url, Ref: "main", Secret: "GITHUB_TOKEN"}, reason: cpapi.ReasonPRFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup()
			}
			j := e.job("echo change >> calc.sh", c.repo)
			if j.Status != cpapi.JobFailed || j.StatusReason != c.reason {
				t.Fatalf("job = %s/%s; want failed/%s\n%s", j.Status, j.StatusReason, c.reason, dumpEvents(e.a.events(j.ID)))
			}
		})
	}
	// A missing secret fails the job with a clear reason.
	j := e.job("true", cpapi.Repo{URL: e.url, Secret: "NO_SUCH_SECRET"})
	if j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonSecret {
		t.Errorf("missing secret: %s/%s", j.Status, j.StatusReason)
	}
	// Hostile repository requests are refused at submit.
	for _, r := range []cpapi.Repo{{URL: "--upload-pack=touch /tmp/x"}, {URL: "file:///etc"}, {URL: e.url, Ref: "--force"},
		{URL: e.url, Ref: "a..b"}, {URL: e.url, Secret: "bad name"}} {
		resp, body := e.a.do("POST", "/v1/jobs", cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true", Repo: &r})
		if resp.StatusCode != 400 {
			t.Errorf("repo %+v: %d %s", r, resp.StatusCode, body)
		}
	}
}
