package sandboxproxy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/sandboxes"
	"github.com/corral-sh/corral/internal/sandboxes/sandboxestest"
	"github.com/corral-sh/corral/internal/sandboxproxy"
)

func TestMain(m *testing.M) { os.Exit(sandboxestest.Main(m)) }

// fixture is a proxy over a real service, with two tenants, a and b, whose
// control-plane tokens are "cp-a" and "cp-b".
type fixture struct {
	env  *sandboxestest.Env
	srv  *httptest.Server
	a, b string
}

// tenantOf authenticates the test tokens, from the Authorization header or
// ?access_token=, as the control plane's auth does.
func tenantOf(tokens map[string]string) func(*http.Request) (string, bool) {
	return func(r *http.Request) (string, bool) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			tok = r.URL.Query().Get("access_token")
		}
		tn, ok := tokens[tok]
		return tn, ok
	}
}

func newFixture(t testing.TB, opts sandboxes.Options) *fixture {
	t.Helper()
	e := sandboxestest.New(t, opts)
	f := &fixture{env: e, a: e.Tenant(t, "a", 0), b: e.Tenant(t, "b", 0)}
	h := sandboxproxy.New(e.Service, tenantOf(map[string]string{"cp-a": f.a, "cp-b": f.b}), slog.New(slog.DiscardHandler))
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close) // runs before Env's cleanup
	return f
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// sandbox creates a sandbox for tenant a and returns it with an SDK client
// that reaches it through the proxy.
func (f *fixture) sandbox(t testing.TB) (*cpapi.Sandbox, *client.Client) {
	t.Helper()
	sb, err := f.env.Service.Create(ctxFor(t), f.a, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	return sb, f.client(t, sb.ID, "cp-a")
}

func (f *fixture) client(t testing.TB, id, token string) *client.Client {
	t.Helper()
	c, err := client.New(f.srv.URL+"/v1/sandboxes/"+id, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExec(t *testing.T) {
	f := newFixture(t, sandboxes.Options{})
	_, c := f.sandbox(t)
	res, err := c.Exec(ctxFor(t), sandboxapi.ExecRequest{Command: "sh", Args: []string{"-c", "echo out; echo err >&2; exit 3"}})
	if err != nil {
		t.Fatalf("Exec through the proxy = %v", err)
	}
	if res.Stdout != "out\n" || res.Stderr != "err\n" || res.ExitCode == nil || *res.ExitCode != 3 {
		t.Errorf("Exec = stdout %q stderr %q exit %v; want out, err, 3", res.Stdout, res.Stderr, res.ExitCode)
	}
}

// TestStreamsFlow checks that SSE passes unbuffered: the first chunk of a
// streamed exec arrives while the command still runs.
func TestStreamsFlow(t *testing.T) {
	f := newFixture(t, sandboxes.Options{})
	_, c := f.sandbox(t)
	start := time.Now()
	var first time.Duration
	var out bytes.Buffer
	res, err := c.ExecStream(ctxFor(t), sandboxapi.ExecRequest{Command: "sh", Args: []string{"-c", "echo a; sleep 1; echo b"}},
		func(_ string, data []byte) {
			if out.Len() == 0 {
				first = time.Since(start)
			}
			out.Write(data)
		})
	total := time.Since(start)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || out.String() != "a\nb\n" {
		t.Fatalf("ExecStream = %+v, %v, output %q; want exit 0, output a b", res, err, out.String())
	}
	if total < time.Second || first > total-500*time.Millisecond {
		t.Errorf("first chunk after %v of %v; want it before the 1 s sleep ended", first, total)
	}
}

func TestProcessEvents(t *testing.T) {
	f := newFixture(t, sandboxes.Options{})
	_, c := f.sandbox(t)
	ctx := ctxFor(t)
	events, err := c.Events(ctx, "")
	if err != nil {
		t.Fatalf("Events through the proxy = %v", err)
	}
	defer events.Close()
	p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		ev, err := events.Next()
		if err != nil {
			t.Fatalf("Next = %v after %v", err, seen)
		}
		if ev.Process.ID != p.ID {
			continue
		}
		seen = append(seen, ev.Type)
		if ev.Type == sandboxapi.EventProcessExited {
			break
		}
	}
	if seen[0] != sandboxapi.EventProcessCreated {
		t.Errorf("events of %s = %v; want created first, exited last", p.ID, seen)
	}
}

func TestWebSocket(t *testing.T) {
	f := newFixture(t, sandboxes.Options{})
	_, c := f.sandbox(t)
	ctx := ctxFor(t)
	p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "read line; echo got:$line"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Connect(ctx, p.ID, client.ConnectOptions{Offset: client.OffsetOldest})
	if err != nil {
		t.Fatalf("Connect through the proxy = %v", err)
	}
	defer s.Close()
	if _, err := s.Write([]byte("hello\n")); err != nil {
		t.Fatalf("Write = %v", err)
	}
	var out bytes.Buffer
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("Next = %v (output so far %q)", err, out.String())
		}
		out.Write(ev.Data)
		if ev.Exit != nil {
			if ev.Exit.ExitCode == nil || *ev.Exit.ExitCode != 0 {
				t.Errorf("exit = %+v; want 0", ev.Exit)
			}
			break
		}
	}
	if out.String() != "got:hello\n" {
		t.Errorf("output over the WebSocket = %q; want %q", out.String(), "got:hello\n")
	}
}

func TestLargeFiles(t *testing.T) {
	f := newFixture(t, sandboxes.Options{})
	_, c := f.sandbox(t)
	ctx := ctxFor(t)
	const size = 10 << 20
	data := make([]byte, size)
	rand.Read(data)
	info, err := c.WriteFile(ctx, "/workspace/big.bin", bytes.NewReader(data), 0o644)
	if err != nil || info.Size != size {
		t.Fatalf("WriteFile(10 MiB) = %+v, %v", info, err)
	}
	body, err := c.ReadFile(ctx, "/workspace/big.bin")
	if err != nil {
		t.Fatalf("ReadFile = %v", err)
	}
	defer body.Close()
	h := sha256.New()
	n, err := io.Copy(h, body)
	if err != nil || n != size || !bytes.Equal(h.Sum(nil), sha256Sum(data)) {
		t.Errorf("ReadFile = %d bytes, %v, same content %v; want the 10 MiB written", n, err, bytes.Equal(h.Sum(nil), sha256Sum(data)))
	}
}

func sha256Sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// TestCredentials: the caller's control-plane token, as a header or as
// ?access_token=, authenticates to the proxy; the real daemon, which
// accepts only its own token, answers, so the proxy sent that one.
func TestCredentials(t *testing.T) {
	f := newFixture(t, sandboxes.Options{})
	sb, _ := f.sandbox(t)
	base := f.srv.URL + "/v1/sandboxes/" + sb.ID
	for _, tc := range []struct {
		name   string
		url    string
		header string
	}{
		{"header", base + "/health", "Bearer cp-a"},
		{"access_token", base + "/health?access_token=cp-a", ""},
	} {
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: GET health = %d %s; want 200 from the daemon", tc.name, resp.StatusCode, body)
		}
	}
}

// wantProblem checks a problem+json answer.
func wantProblem(t *testing.T, resp *http.Response, status int, detail string) {
	t.Helper()
	defer resp.Body.Close()
	var d problem.Details
	err := json.NewDecoder(resp.Body).Decode(&d)
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != problem.ContentType || err != nil ||
		!strings.Contains(d.Detail, detail) {
		t.Errorf("%s %s = %d %q %+v (%v); want %d problem+json with detail containing %q",
			resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), d, err, status, detail)
	}
}

func get(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestNotFound(t *testing.T) {
	f := newFixture(t, sandboxes.Options{})
	sb, _ := f.sandbox(t)
	u := f.srv.URL + "/v1/sandboxes/"
	wantProblem(t, get(t, u+"sb_nosuchsandbox/health", "cp-a"), http.StatusNotFound, "not found")
	wantProblem(t, get(t, u+sb.ID+"/health", "cp-b"), http.StatusNotFound, "not found")
	wantProblem(t, get(t, u+"..%2Fjobs/health", "cp-a"), http.StatusNotFound, "no such route")
	wantProblem(t, get(t, u+sb.ID, "cp-a"), http.StatusNotFound, "no such route")
	wantProblem(t, get(t, u+sb.ID+"/health", ""), http.StatusUnauthorized, "bearer token")

	// The daemon's own errors pass through untouched.
	c := f.client(t, sb.ID, "cp-a")
	if _, err := c.GetProcess(ctxFor(t), "nope"); !errors.Is(err, client.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("GetProcess(nope) = %v; want the daemon's not found", err)
	}

	// After a delete the sandbox is gone from the proxy at once.
	if _, err := c.Health(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Service.Delete(ctxFor(t), f.a, sb.ID); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, get(t, u+sb.ID+"/health", "cp-a"), http.StatusNotFound, "not found")
}
