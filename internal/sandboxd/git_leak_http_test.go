package sandboxd_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/gittest"
	"github.com/corral-sh/corral/internal/sandboxd"
)

// Environment of TestGitLeakDaemonChild.
const (
	gitLeakSocketEnv = "CORRAL_TEST_GIT_LEAK_SOCKET"
	gitLeakRootEnv   = "CORRAL_TEST_GIT_LEAK_ROOT"
	gitLeakPIDNSEnv  = "CORRAL_TEST_GIT_LEAK_PIDNS"
)

// TestGitCredentialsLeakNowhere runs a daemon as its own process (PID 1 of
// a PID namespace where the machine allows, as in a container, with the
// orphan reaper on), clones and pushes through it with a distinctive
// token, fails a clone and a push with another, and then looks for both
// everywhere: the workspace tree with .git, the daemon's HOME and
// temporary directory, everything it logged at debug level, every HTTP
// response body, and the command lines and environments of every process
// on the machine while a clone held its credentials in flight. Zero hits;
// and the token did reach the git server, as basic auth.
func TestGitCredentialsLeakNowhere(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a daemon process")
	}
	token := "ghp_LeakCheck" + randomHex(t)
	wrong := "ghp_WrongLeakCheck" + randomHex(t)
	secrets := []string{
		token, wrong,
		base64.StdEncoding.EncodeToString([]byte(gitUser + ":" + token)),
		base64.StdEncoding.EncodeToString([]byte(gitUser + ":" + wrong)),
	}
	srv := gittest.New(t, gittest.Options{Username: gitUser, Password: token})
	url := srv.Repo(t, "app.git", map[string]string{"README.md": "# app\n"})
	auth := &sandboxapi.GitCredentials{Username: gitUser, Password: token}
	bad := &sandboxapi.GitCredentials{Username: gitUser, Password: wrong}

	dir := t.TempDir()
	root, home, tmp := filepath.Join(dir, "root"), filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{root, home, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "sd.sock")
	logs := startLeakDaemon(t, sock, root, home, tmp)
	rec := &bodyRecorder{}
	c, err := client.New("unix:"+sock, client.WithHTTPClient(&http.Client{Transport: rec.transport(sock)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitUntil(t, "the daemon answers", func() bool { _, err := c.Health(ctx); return err == nil })

	// A clone held in flight after it authenticated: git and its helper
	// hold the token now. Look at every process.
	hold := srv.Hold()
	cloned := make(chan error, 1)
	go func() {
		_, err := c.GitClone(ctx, sandboxapi.GitCloneRequest{URL: url, Branch: "corral/leak", Credentials: auth})
		cloned <- err
	}()
	select {
	case <-hold.Arrived():
	case err := <-cloned:
		t.Fatalf("clone ended before it reached the server: %v", err)
	}
	gits, hits := scanProcesses(secrets, url)
	hold.Release()
	if err := <-cloned; err != nil {
		t.Fatalf("GitClone: %v", err)
	}
	if gits == 0 {
		t.Errorf("no git process was running during the held clone; the process scan saw nothing")
	}
	for _, h := range hits {
		t.Errorf("a secret is visible in the process list: %s", h)
	}

	if _, err := c.WriteFile(ctx, "/workspace/new.txt", strings.NewReader("new\n"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GitCommit(ctx, sandboxapi.GitCommitRequest{Message: "leak check", Author: author, All: true}); err != nil {
		t.Fatalf("GitCommit: %v", err)
	}
	if _, err := c.GitPush(ctx, sandboxapi.GitPushRequest{URL: url, Credentials: auth}); err != nil {
		t.Fatalf("GitPush: %v", err)
	}
	if _, err := c.GitPush(ctx, sandboxapi.GitPushRequest{SetUpstream: true, Credentials: auth}); err != nil {
		t.Fatalf("GitPush to origin: %v", err)
	}
	if _, err := c.GitClone(ctx, sandboxapi.GitCloneRequest{URL: url, Path: "/other", Credentials: bad}); !errors.Is(err, client.ErrUnprocessable) {
		t.Errorf("GitClone with a wrong token = %v; want ErrUnprocessable", err)
	}
	if _, err := c.GitPush(ctx, sandboxapi.GitPushRequest{RemoteBranch: "x", Credentials: bad}); !errors.Is(err, client.ErrUnprocessable) {
		t.Errorf("GitPush with a wrong token = %v; want ErrUnprocessable", err)
	}
	if _, err := c.GitClone(ctx, sandboxapi.GitCloneRequest{URL: strings.Replace(url, "://", "://"+gitUser+":"+wrong+"@", 1), Path: "/third"}); !errors.Is(err, client.ErrUnprocessable) {
		t.Errorf("GitClone with a wrong token in the URL = %v; want ErrUnprocessable", err)
	}
	if _, err := c.GitStatus(ctx, ""); err != nil {
		t.Errorf("GitStatus: %v", err)
	}
	if _, err := c.GitLog(ctx, "", client.GitLogOptions{}); err != nil {
		t.Errorf("GitLog: %v", err)
	}
	if h := srv.Head(t, "app.git", "corral/leak"); h == "" {
		t.Errorf("the push did not reach the server")
	}
	logs.stop() // flushes its log; later checks read a finished daemon

	for _, tree := range []struct{ name, dir string }{{"the sandbox root", root}, {"HOME", home}, {"TMPDIR", tmp}} {
		for _, h := range grepTree(t, tree.dir, secrets) {
			t.Errorf("a secret is on disk in %s: %s", tree.name, h)
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("the daemon left %d entries in its temporary directory", len(entries))
	}
	out := logs.String()
	if logs.pidns && !strings.Contains(out, "PID 1") {
		t.Errorf("the daemon did not run as PID 1 of its namespace")
	}
	if !strings.Contains(out, "msg=git") || !strings.Contains(out, "request failed") {
		t.Errorf("the daemon's log lacks its git and error lines; the capture is broken:\n%s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("a secret is in the daemon's log")
		}
		if bytes.Contains(rec.bodies(), []byte(s)) {
			t.Errorf("a secret is in an HTTP response body")
		}
	}
	want := "Basic " + secrets[2]
	arrived := false
	for _, r := range srv.Requests() {
		arrived = arrived || r.Header.Get("Authorization") == want
	}
	if !arrived {
		t.Errorf("no request to the git server carried the token as basic auth")
	}
}

// TestGitLeakDaemonChild is TestGitCredentialsLeakNowhere's daemon:
// sandboxd.Run logging everything at debug level to stderr.
func TestGitLeakDaemonChild(t *testing.T) {
	sock := os.Getenv(gitLeakSocketEnv)
	if sock == "" {
		t.Skip("helper process for TestGitCredentialsLeakNowhere")
	}
	if os.Getenv(gitLeakPIDNSEnv) == "1" {
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			t.Fatalf("make mounts private: %v", err)
		}
		if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			t.Fatalf("mount /proc: %v", err)
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	slog.SetDefault(log) // problem.Write logs there
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err := sandboxd.Run(ctx, sandboxd.RunConfig{
		Listen: "unix:" + sock,
		Config: sandboxd.Config{Root: os.Getenv(gitLeakRootEnv), Logger: log, KillGrace: time.Second},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// leakDaemon is the daemon process's captured output and its stop.
type leakDaemon struct {
	mu    sync.Mutex
	out   bytes.Buffer
	stop  func()
	pidns bool // PID 1 of its own PID namespace
}

func (l *leakDaemon) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.Write(p)
}

func (l *leakDaemon) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.String()
}

// startLeakDaemon starts TestGitLeakDaemonChild, in a new PID namespace
// when the machine allows it.
func startLeakDaemon(t *testing.T, sock, root, home, tmp string) *leakDaemon {
	t.Helper()
	l := &leakDaemon{}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "TMPDIR" {
			env = append(env, kv)
		}
	}
	env = append(env, gitLeakSocketEnv+"="+sock, gitLeakRootEnv+"="+root, "HOME="+home, "TMPDIR="+tmp)
	start := func(pidns bool) (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGitLeakDaemonChild$", "-test.v")
		cmd.Env = append(env, gitLeakPIDNSEnv+"="+map[bool]string{true: "1", false: "0"}[pidns])
		cmd.Stdout, cmd.Stderr = l, l
		if pidns {
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Unshareflags: syscall.CLONE_NEWNS}
		}
		return cmd, cmd.Start()
	}
	cmd, err := start(true)
	l.pidns = err == nil
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		t.Logf("no PID namespace here (%v): the daemon runs as a plain process", err)
		cmd, err = start(false)
	}
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var once sync.Once
	l.stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
		})
	}
	t.Cleanup(func() {
		l.stop()
		if t.Failed() {
			t.Logf("daemon output:\n%s", l.String())
		}
	})
	return l
}

// bodyRecorder is a transport to a unix socket that keeps a copy of every
// response body.
type bodyRecorder struct {
	mu  sync.Mutex
	all bytes.Buffer
}

func (b *bodyRecorder) transport(sock string) http.RoundTripper {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.mu.Lock()
		b.all.Write(body)
		b.all.WriteByte('\n')
		b.mu.Unlock()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, err
	})
}

func (b *bodyRecorder) bodies() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.all.Bytes())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// scanProcesses reads the command line and environment of every process
// and returns how many were git working on url, and where a secret was
// found.
func scanProcesses(secrets []string, url string) (gits int, hits []string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(cmdline, []byte("git")) && bytes.Contains(cmdline, []byte(url)) {
			gits++
		}
		for _, s := range secrets {
			for what, b := range map[string][]byte{"cmdline": cmdline, "environ": environ} {
				if bytes.Contains(b, []byte(s)) {
					hits = append(hits, fmt.Sprintf("pid %s %s", e.Name(), what))
				}
			}
		}
	}
	return gits, hits
}

// grepTree returns the files under dir whose content or name holds a
// secret.
func grepTree(t *testing.T, dir string, secrets []string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) || strings.Contains(p, s) {
				hits = append(hits, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", dir, err)
	}
	return hits
}

func randomHex(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
