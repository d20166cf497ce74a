package gitops_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/gittest"
	"github.com/corral-sh/corral/internal/sandboxd/files"
	"github.com/corral-sh/corral/internal/sandboxd/gitops"
)

// fixture is a Service over a fresh root, with its own temporary
// directory and a captured log.
type fixture struct {
	svc  *gitops.Service
	root string // host directory of the sandbox root
	tmp  string // the Service's TempDir
	logs *syncBuffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), tmp: t.TempDir(), logs: &syncBuffer{}}
	root, err := files.Open(f.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if f.svc, err = gitops.New(root, gitops.Options{TempDir: f.tmp, Logger: log}); err != nil {
		t.Fatal(err)
	}
	return f
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const (
	user  = "bot"
	token = "ghs_Gitops7e5tT0kenNeverPrinted"
)

var auth = &sandboxapi.GitCredentials{Username: user, Password: token}

// A repository's configuration is whatever its last user made it. A
// url.<base>.insteadOf that sends the remote elsewhere must not take the
// credentials along: they are released only to the host they were given
// for.
func TestCredentialsNeverFollowARewrittenRemote(t *testing.T) {
	good := gittest.New(t, gittest.Options{Username: user, Password: token})
	evil := gittest.New(t, gittest.Options{Username: "anyone", Password: "anything"})
	url := good.Repo(t, "app.git", map[string]string{"a.txt": "a\n"})
	evil.Repo(t, "app.git", map[string]string{"a.txt": "a\n"})
	f := newFixture(t)
	ctx := testContext(t)
	if _, err := f.svc.Clone(ctx, sandboxapi.GitCloneRequest{URL: url, Credentials: auth}); err != nil {
		t.Fatalf("Clone: %v", err)
	}
	ws := filepath.Join(f.root, "workspace")
	gittest.Git(t, ws, "config", "url."+evil.URL+"/.insteadOf", good.URL+"/")
	gittest.Git(t, ws, "switch", "--quiet", "-c", "feature")

	for _, req := range []sandboxapi.GitPushRequest{
		{Credentials: auth},           // the remote origin
		{URL: url, Credentials: auth}, // pinned to the good URL, rewritten all the same
	} {
		_, err := f.svc.Push(ctx, req)
		if !errors.Is(err, errdefs.ErrUnprocessable) {
			t.Errorf("Push(%+v) through a rewritten remote = %v; want ErrUnprocessable", req.URL, err)
		}
	}
	for _, r := range evil.Requests() {
		if a := r.Header.Get("Authorization"); a != "" {
			t.Errorf("the rewritten remote received Authorization %q on %s", a, r.URL)
		}
	}
	if h := good.Head(t, "app.git", "feature"); h != "" {
		t.Errorf("feature reached the original remote (%s) although git was sent elsewhere", h)
	}
}

// Hooks, credential helpers and an fsmonitor configured in the repository
// run nothing and store nothing when the API works in it.
func TestRepositoryConfigurationRunsAndStoresNothing(t *testing.T) {
	srv := gittest.New(t, gittest.Options{Username: user, Password: token})
	url := srv.Repo(t, "app.git", map[string]string{"a.txt": "a\n"})
	f := newFixture(t)
	ctx := testContext(t)
	if _, err := f.svc.Clone(ctx, sandboxapi.GitCloneRequest{URL: url, Credentials: auth, Branch: "work"}); err != nil {
		t.Fatalf("Clone: %v", err)
	}
	ws := filepath.Join(f.root, "workspace")
	marks := t.TempDir()
	script := "#!/bin/sh\ntouch " + marks + "/$(basename $0)\nexit 0\n"
	for _, h := range []string{"pre-commit", "commit-msg", "post-commit", "pre-push", "post-checkout", "reference-transaction"} {
		if err := os.WriteFile(filepath.Join(ws, ".git", "hooks", h), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	monitor := filepath.Join(marks, "fsmonitor.sh")
	if err := os.WriteFile(monitor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(marks, "stored-credentials")
	gittest.Git(t, ws, "config", "credential.helper", "store --file="+store)
	gittest.Git(t, ws, "config", "core.fsmonitor", monitor)

	if err := os.WriteFile(filepath.Join(ws, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Status(ctx, "/workspace", 0); err != nil {
		t.Fatalf("Status: %v", err)
	}
	if _, err := f.svc.Commit(ctx, sandboxapi.GitCommitRequest{Message: "b", All: true}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if _, err := f.svc.Push(ctx, sandboxapi.GitPushRequest{Credentials: auth, SetUpstream: true}); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if _, err := f.svc.Checkout(ctx, sandboxapi.GitCheckoutRequest{Ref: "main"}); err != nil {
		t.Fatalf("Checkout: %v", err)
	}
	if srv.Head(t, "app.git", "work") == "" {
		t.Fatalf("the push did not arrive")
	}
	entries, _ := os.ReadDir(marks)
	for _, e := range entries {
		if e.Name() != "fsmonitor.sh" {
			t.Errorf("%s ran or was written: the repository's configuration acted", e.Name())
		}
	}
}

// Sockets and temporary indexes live in the Service's TempDir only while
// a command runs.
func TestTemporaryFilesAreRemoved(t *testing.T) {
	srv := gittest.New(t, gittest.Options{Username: user, Password: token})
	url := srv.Repo(t, "app.git", map[string]string{"a.txt": "a\n"})
	f := newFixture(t)
	ctx := testContext(t)
	res, err := f.svc.Clone(ctx, sandboxapi.GitCloneRequest{URL: url, Credentials: auth})
	if err != nil {
		t.Fatalf("Clone: %v", err)
	}
	if err := os.WriteFile(filepath.Join(f.root, "workspace", "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	patch, err := f.svc.Diff(ctx, gitops.DiffOptions{Base: res.Head})
	if err != nil || !strings.Contains(string(patch), "+++ b/new.txt") {
		t.Fatalf("Diff(base) = %q, %v; want new.txt added", patch, err)
	}
	if entries, _ := os.ReadDir(f.tmp); len(entries) != 0 {
		t.Errorf("TempDir holds %d entries after the commands ended", len(entries))
	}
}

// Discovery stops at the root: a directory inside it that is not a
// repository is not one, even when the root lies inside a repository.
func TestDiscoveryStopsAtTheRoot(t *testing.T) {
	outer := t.TempDir()
	gittest.Git(t, outer, "init", "--quiet")
	rootDir := filepath.Join(outer, "sandbox")
	if err := os.MkdirAll(filepath.Join(rootDir, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := files.Open(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	svc, err := gitops.New(root, gitops.Options{TempDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/workspace"} {
		if _, err := svc.Status(testContext(t), p, 0); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Status(%q) inside an outer repository = %v; want ErrNotFound", p, err)
		}
	}
}

// A timeout and a caller that goes away both kill git with its helpers.
func TestTimeoutAndCancelKillGit(t *testing.T) {
	srv := gittest.New(t, gittest.Options{Username: user, Password: token})
	for _, tc := range []struct {
		name   string
		cancel bool
		want   error
	}{
		{"timeout", false, errdefs.ErrTimeout},
		{"cancel", true, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "slow-" + tc.name + ".git"
			url := srv.Repo(t, name, map[string]string{"a.txt": "a\n"})
			f := newFixture(t)
			hold := srv.Hold()
			defer hold.Release()
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			req := sandboxapi.GitCloneRequest{URL: url, Credentials: auth}
			if !tc.cancel {
				req.TimeoutMS = 2000
			}
			done := make(chan error, 1)
			go func() {
				_, err := f.svc.Clone(ctx, req)
				done <- err
			}()
			var err error
			select {
			case <-hold.Arrived():
				if tc.cancel {
					cancel()
				}
				err = <-done
			case err = <-done: // a slow machine: the timeout came first
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Clone = %v; want %v", err, tc.want)
			}
			waitGone(t, name)
			if entries, _ := os.ReadDir(filepath.Join(f.root, "workspace")); len(entries) != 0 {
				t.Errorf("the killed clone left %d entries in /workspace", len(entries))
			}
		})
	}
}

// waitGone waits until no live process has needle on its command line.
func waitGone(t *testing.T, needle string) {
	t.Helper()
	var left []string
	for range 200 {
		left = processesWith(needle)
		if len(left) == 0 {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Errorf("processes still running: %q", left)
}

// processesWith lists the command lines of live (non-zombie) processes
// that contain needle.
func processesWith(needle string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if s := string(stat); strings.Contains(s[strings.LastIndexByte(s, ')')+1:], " Z ") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte(needle)) && pid != os.Getpid() {
			out = append(out, string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return out
}

// A commit's identity: the request's author, else the repository's
// configured one, else Corral's default (HOME has no configuration here).
func TestCommitIdentity(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	ws := filepath.Join(f.root, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, ws, "init", "--quiet")
	ident := func(commit string) string {
		return strings.TrimSpace(gittest.Git(t, ws, "log", "-1", "--format=%an <%ae> / %cn <%ce>", commit))
	}
	for _, tc := range []struct {
		name   string
		config map[string]string
		author *sandboxapi.GitIdentity
		want   string
	}{
		{"default", nil, nil, "Corral <corral@localhost> / Corral <corral@localhost>"},
		{"configured email only", map[string]string{"user.email": "me@example.com"}, nil, "Corral <me@example.com> / Corral <me@example.com>"},
		{"configured", map[string]string{"user.name": "Me"}, nil, "Me <me@example.com> / Me <me@example.com>"},
		{"request", nil, &sandboxapi.GitIdentity{Name: "Agent", Email: "agent@example.com"}, "Agent <agent@example.com> / Agent <agent@example.com>"},
	} {
		for k, v := range tc.config {
			gittest.Git(t, ws, "config", k, v)
		}
		res, err := f.svc.Commit(ctx, sandboxapi.GitCommitRequest{Message: tc.name, Author: tc.author, AllowEmpty: true})
		if err != nil {
			t.Fatalf("Commit(%s): %v", tc.name, err)
		}
		if got := ident(res.Commit); got != tc.want {
			t.Errorf("Commit(%s) identity = %q; want %q", tc.name, got, tc.want)
		}
	}
}

// Status lists at most MaxStatusFiles files and says it stopped.
func TestStatusIsCapped(t *testing.T) {
	f := newFixture(t)
	ws := filepath.Join(f.root, "workspace")
	if err := os.MkdirAll(filepath.Join(ws, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, ws, "init", "--quiet")
	for i := range gitops.MaxStatusFiles + 5 {
		if err := os.WriteFile(filepath.Join(ws, "out", strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := f.svc.Status(testContext(t), "/workspace", 0)
	if err != nil || len(st.Files) != gitops.MaxStatusFiles || !st.Truncated || st.Clean {
		t.Errorf("Status = %d files, truncated %v, clean %v, %v; want %d files, truncated", len(st.Files), st.Truncated, st.Clean, err, gitops.MaxStatusFiles)
	}
}
