// Package gittest runs a real git smart-HTTP server for tests: `git
// http-backend` as a CGI program behind net/http/cgi on 127.0.0.1, with
// HTTP basic authentication when a username is set and pushes enabled. It
// records every request (URL and headers), can hold requests in flight so a
// test can look at a clone while it runs, and reads branches, files and
// history straight from its bare repositories for assertions.
package gittest

import (
	"bytes"
	"crypto/subtle"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/testenv"
)

// Options configure a Server.
type Options struct {
	// Username and Password, when Username is set, are required as HTTP
	// basic credentials on every request.
	Username, Password string
}

// Request is one request the server received.
type Request struct {
	Method string
	// URL is the path and query ("/repo.git/info/refs?service=...").
	URL    string
	Header http.Header
}

// Server is a running git HTTP server. Its repositories live in a
// temporary directory; it stops when the test ends.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:port"; a repository's URL is
	// URL + "/" + name.
	URL  string
	dir  string
	opts Options

	mu       sync.Mutex
	requests []Request
	hold     *Hold
}

// New starts a server. A machine without git or git http-backend makes
// the test unavailable (skipped locally, failed in CI).
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Unavailable(t, "git is not installed: %v", err)
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		testenv.Unavailable(t, "git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		testenv.Unavailable(t, "git http-backend is not installed: %v", err)
	}
	s := &Server{dir: t.TempDir(), opts: opts}
	cgiHandler := &cgi.Handler{
		Path: backend,
		Dir:  s.dir,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.dir,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.dir,
		},
		InheritEnv: []string{"PATH"},
		Stderr:     io.Discard, // "Not a git repository: ..." for a missing one
	}
	srv := httptest.NewServer(s.handler(cgiHandler))
	t.Cleanup(func() {
		s.mu.Lock()
		if s.hold != nil {
			s.hold.Release()
		}
		s.mu.Unlock()
		srv.Close()
	})
	s.URL = srv.URL
	return s
}

// handler records each request, checks basic auth and holds requests that
// passed it while a Hold is in place.
func (s *Server) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, URL: r.URL.RequestURI(), Header: r.Header.Clone()})
		s.mu.Unlock()
		if s.opts.Username != "" {
			u, p, ok := r.BasicAuth()
			if !ok || !equal(u, s.opts.Username) || !equal(p, s.opts.Password) {
				w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		s.mu.Lock()
		h := s.hold
		s.mu.Unlock()
		if h != nil {
			h.wait(r)
		}
		next.ServeHTTP(w, r)
	})
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Hold keeps requests in flight: once a Hold is in place, every request
// that passes authentication waits until Release (or the request's end).
type Hold struct {
	once     sync.Once
	arrived  chan struct{}
	arriveMu sync.Once
	released chan struct{}
}

// Hold holds the requests that arrive from now on, past authentication,
// until the Hold is released. Arrived is closed when the first one waits:
// a client is then connected and, on a server with a username, has sent
// its credentials.
func (s *Server) Hold() *Hold {
	h := &Hold{arrived: make(chan struct{}), released: make(chan struct{})}
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
	return h
}

// Arrived is closed when the first held request waits.
func (h *Hold) Arrived() <-chan struct{} { return h.arrived }

// Release lets held and later requests through. It is idempotent.
func (h *Hold) Release() { h.once.Do(func() { close(h.released) }) }

func (h *Hold) wait(r *http.Request) {
	h.arriveMu.Do(func() { close(h.arrived) })
	select {
	case <-h.released:
	case <-r.Context().Done():
	}
}

// Dir returns the host path of bare repository name.
func (s *Server) Dir(name string) string { return filepath.Join(s.dir, name) }

// Repo creates bare repository name ("app.git") whose branch main holds
// one commit with files (path → content), and returns its URL.
func (s *Server) Repo(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	bare := s.Dir(name)
	Git(t, "", "init", "--quiet", "--bare", "--initial-branch=main", bare)
	Git(t, bare, "config", "http.receivepack", "true")
	s.Commit(t, name, "main", files, "initial commit")
	return s.URL + "/" + name
}

// Commit adds a commit to branch of repository name, straight into the
// bare repository (not over HTTP): files are written over the branch's
// tree (a new branch starts from main, or empty). It returns the commit id.
func (s *Server) Commit(t testing.TB, name, branch string, files map[string]string, message string) string {
	t.Helper()
	bare := s.Dir(name)
	work := t.TempDir()
	Git(t, "", "init", "--quiet", "--initial-branch="+branch, work)
	for _, from := range []string{branch, "main"} {
		if s.Head(t, name, from) != "" {
			Git(t, work, "fetch", "--quiet", bare, "refs/heads/"+from)
			Git(t, work, "reset", "--quiet", "--hard", "FETCH_HEAD")
			break
		}
	}
	for p, content := range files {
		full := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, work, "add", "-A")
	Git(t, work, "-c", "user.name=Gittest", "-c", "user.email=gittest@example.com",
		"commit", "--quiet", "--allow-empty", "-m", message)
	Git(t, work, "push", "--quiet", bare, "HEAD:refs/heads/"+branch)
	return strings.TrimSpace(Git(t, work, "rev-parse", "HEAD"))
}

// Head returns the commit branch points to in repository name, "" if the
// branch does not exist.
func (s *Server) Head(t testing.TB, name, branch string) string {
	t.Helper()
	out, err := command("", "--git-dir="+s.Dir(name), "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// File returns the content of path at rev in repository name; ok is false
// when it does not exist.
func (s *Server) File(t testing.TB, name, rev, path string) (content string, ok bool) {
	t.Helper()
	out, err := command("", "--git-dir="+s.Dir(name), "show", rev+":"+path).Output()
	if err != nil {
		return "", false
	}
	return string(out), true
}

// Commit is one commit of a Log.
type Commit struct {
	SHA, Subject, AuthorName, AuthorEmail string
	Parents                               []string
}

// Log returns the history of rev in repository name, newest first.
func (s *Server) Log(t testing.TB, name, rev string) []Commit {
	t.Helper()
	out := Git(t, "", "--git-dir="+s.Dir(name), "log", "--format=%H%x00%P%x00%s%x00%an%x00%ae", rev, "--")
	var log []Commit
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) != 5 {
			t.Fatalf("git log line %q: want 5 fields", line)
		}
		log = append(log, Commit{SHA: f[0], Parents: strings.Fields(f[1]), Subject: f[2], AuthorName: f[3], AuthorEmail: f[4]})
	}
	return log
}

// RejectPushes installs a pre-receive hook in repository name that
// declines every push updating branch, printing message to the pusher.
func (s *Server) RejectPushes(t testing.TB, name, branch, message string) {
	t.Helper()
	hook := "#!/bin/sh\nwhile read old new ref; do\n" +
		"  if [ \"$ref\" = 'refs/heads/" + branch + "' ]; then\n" +
		"    echo '" + strings.ReplaceAll(message, "'", "") + "' >&2\n    exit 1\n  fi\ndone\nexit 0\n"
	path := filepath.Join(s.Dir(name), "hooks", "pre-receive")
	if err := os.WriteFile(path, []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
}

// Git runs git in dir ("" for the current directory) with a fixed
// identity and no system or user configuration, and returns its output.
// A failure fails the test.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := command(dir, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
