package webui_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
	"github.com/corral-sh/corral/internal/llm/llmtest"
	"github.com/corral-sh/corral/internal/runtime/catalog"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/template"
	"github.com/corral-sh/corral/internal/testenv"
)

// e2eToken is the admin token the server under test starts with.
const e2eToken = "crl_webui_e2e_admin_token_0123456789"

// TestE2E runs the web UI's end-to-end suite (web/e2e: Vitest driving
// Debian's Chromium through playwright-core) against a real `corral up`:
// the corral binary (CORRAL_TEST_BINARY, else built), the bwrap runtime,
// the minimal template, SQLite in a temporary directory. The browser
// reaches the server through a TCP proxy the suite can cut (POST to
// CORRAL_E2E_DROP_URL), to show that event streams and terminals resume
// after a dropped connection without losing or repeating output.
// Screenshots of every page go to artifacts/screenshots/ at the
// repository root. With CORRAL_E2E_DESKTOP=1 the Desktop tab is tested
// too, on a sandbox of the desktop template (imported here: about 2 GB). The server, and every sandbox it made, are gone when
// the test ends.
func TestE2E(t *testing.T) {
	webDir, err := filepath.Abs(filepath.Join("..", "..", "web"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Unavailable(t, "node is not installed (scripts/deps.sh explains how)")
	}
	vitest := filepath.Join(webDir, "node_modules", "vitest", "vitest.mjs")
	if _, err := os.Stat(filepath.Join(webDir, "node_modules", "playwright-core")); err != nil {
		testenv.Unavailable(t, "web/node_modules is missing: run `make web`")
	}
	chromium := os.Getenv("CORRAL_E2E_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		testenv.Unavailable(t, "Chromium is not installed at %s (scripts/deps.sh installs Debian's)", chromium)
	}

	bin := runtimetest.Binary(t)
	stateRoot := controlplanetest.StateRoot(t) // its cleanup deletes the sandboxes left behind
	tpl := controlplanetest.Prepare(t, "bwrap", stateRoot)
	desktopTpl := ""
	if os.Getenv("CORRAL_E2E_DESKTOP") != "" {
		desktopTpl = prepareDesktop(t, bin, stateRoot)
	}
	llm := scriptedAgent(t)
	srv := startUp(t, bin, stateRoot, "ANTHROPIC_BASE_URL="+llm.URL, "ANTHROPIC_API_KEY=sk-ant-e2e-not-a-key")
	checkRoutes(t, srv)

	cut := newCutProxy(t, strings.TrimPrefix(srv, "http://"))
	shots, err := filepath.Abs(filepath.Join("..", "..", "artifacts", "screenshots"))
	if err != nil {
		t.Fatal(err)
	}
	// This run's screenshots only (the folder is the suite's own).
	if err := os.RemoveAll(shots); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, vitest, "run", "--config", "e2e/vitest.config.ts")
	cmd.Dir = webDir
	cmd.Env = append(os.Environ(),
		"CORRAL_E2E_URL="+cut.url,
		"CORRAL_E2E_TOKEN="+e2eToken,
		"CORRAL_E2E_TEMPLATE="+tpl,
		"CORRAL_E2E_DESKTOP_TEMPLATE="+desktopTpl,
		"CORRAL_E2E_MODEL="+e2eModel,
		"CORRAL_E2E_DROP_URL="+cut.dropURL,
		"CORRAL_E2E_CHROMIUM="+chromium,
		"CORRAL_E2E_SCREENSHOTS="+shots,
		"NO_COLOR=1",
	)
	out := &lineLogger{t: t, prefix: "e2e: "}
	cmd.Stdout, cmd.Stderr = out, out
	// Vitest and the browsers it starts share a process group, which is
	// killed as a whole if the suite overruns.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	out.Flush()
	if err != nil {
		t.Fatalf("the end-to-end suite failed: %v (screenshots in %s)", err, shots)
	}
	if n := llm.Remaining(); n != 0 {
		t.Errorf("the built-in agent's job left %d scripted model turns unused", n)
	}
	if cut.drops() == 0 {
		t.Errorf("the suite never cut the connections; the resume tests did not run")
	}
	t.Logf("screenshots: %s", shots)
}

// prepareDesktop imports the desktop template (built by `corral template
// build --name desktop`, about 2 GB) into bwrap over stateRoot, for the
// opt-in Desktop tab test (CORRAL_E2E_DESKTOP=1).
func prepareDesktop(t *testing.T, bin, stateRoot string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rt, err := catalog.Open(ctx, "bwrap", catalog.Config{Binary: bin, StateRoot: stateRoot})
	if err != nil {
		testenv.Unavailable(t, "runtime bwrap: %v", err)
	}
	defer catalog.Close(rt)
	imp, ok := rt.(template.Importer)
	if !ok {
		t.Fatal("bwrap cannot hold templates")
	}
	def, err := template.Lookup("desktop")
	if err != nil {
		t.Fatal(err)
	}
	if err := template.Ensure(ctx, imp, def.Name, template.Options{}); err != nil {
		testenv.Unavailable(t, "cannot provide template %s: %v", def.Ref(), err)
	}
	return def.Ref()
}

// e2eModel is the model the built-in agent's job asks for.
const e2eModel = "anthropic/claude-sonnet-4-5"

// scriptedAgent is the model behind the suite's built-in agent job (a
// scripted server speaking Anthropic's real API): it says what it will
// do and runs a command that waits for /workspace/go, which the browser
// creates from the job's terminal after sending the agent a message; it
// then must have been shown that message, acts on it, and finishes.
func scriptedAgent(t *testing.T) *llmtest.Server {
	return llmtest.New(t,
		llmtest.Turn{
			Text:      "I will wait for the go signal.",
			ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "while [ ! -e /workspace/go ]; do sleep 0.2; done; echo hello-from-agent"})},
		},
		llmtest.Turn{
			Match: func(r llmtest.Request) bool {
				for _, m := range r.Messages {
					if strings.Contains(m.TextOf(), "please also say bye") {
						return true
					}
				}
				return false
			},
			ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "echo bye-from-agent"})},
		},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "Said hello, then bye as asked."})}},
	)
}

// startUp runs `corral up` on a free port with env added to its
// environment and returns its URL; the server is stopped (SIGTERM, then
// SIGKILL) when the test ends.
func startUp(t *testing.T, bin, stateRoot string, env ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dataDir := t.TempDir()
	logPath := filepath.Join(dataDir, "corral-up.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "up", "--listen", addr, "--data-dir", dataDir, "--runtime", "bwrap",
		"--state-root", stateRoot, "--pool-size", "0", "--log-level", "warn")
	cmd.Env = append(os.Environ(),
		"CORRAL_ADMIN_TOKEN="+e2eToken,
		"CORRAL_CONFIG="+filepath.Join(dataDir, "cli-config.json"), // never the user's own
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("corral up's log:\n%s", b)
			}
		}
	})
	url := "http://" + addr
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("corral up exited: %v\n%s", err, b)
		default:
		}
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("corral up did not get ready on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkRoutes: the real server answers the UI's paths with the UI and
// leaves the API's paths to the API.
func checkRoutes(t *testing.T, url string) {
	t.Helper()
	tests := []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/", 200, "text/html"},
		{"GET", "/jobs/job_x?tab=terminal", 200, "text/html"},
		{"GET", "/sandboxes/sb_x", 200, "text/html"},
		{"GET", "/login", 200, "text/html"},
		{"GET", "/healthz", 200, "application/json"},
		{"GET", "/openapi.json", 200, "application/json"},
		{"GET", "/metrics", 200, "text/plain"},
		{"GET", "/v1/jobs", 401, "application/problem+json"},
		{"GET", "/v1/nothing", 404, "application/problem+json"},
		{"GET", "/v2/nothing", 404, "application/problem+json"},
		{"GET", "/status/job_x", 401, "application/problem+json"},
		{"POST", "/schedule", 401, "application/problem+json"},
		{"GET", "/assets/none.js", 404, "application/problem+json"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, url+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && tt.path == "/" {
			t.Fatalf("the corral binary under test was built without the web UI: run `make build` (it runs `make web` first)")
		}
		if resp.StatusCode != tt.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.ctype) {
			t.Errorf("%s %s = %d %s; want %d %s (%.200s)", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.status, tt.ctype, body)
		}
	}
}

// cutProxy forwards TCP connections to the server and can cut them all
// at once, as a flaky network or a restarted load balancer would.
type cutProxy struct {
	url, dropURL string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cuts  int
}

func newCutProxy(t *testing.T, upstream string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{url: "http://" + ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.forward(c, upstream)
			}()
		}
	}()

	ctl := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		fmt.Fprint(w, p.drop())
	}), ReadHeaderTimeout: 5 * time.Second}
	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.dropURL = "http://" + cln.Addr().String() + "/drop"
	go func() { _ = ctl.Serve(cln) }()
	t.Cleanup(func() {
		_ = ctl.Close()
		ln.Close()
		p.drop()
		wg.Wait()
	})
	return p
}

func (p *cutProxy) forward(c net.Conn, upstream string) {
	up, err := net.Dial("tcp", upstream)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// drop closes every open connection and returns how many pairs it cut.
func (p *cutProxy) drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns) / 2
	for c := range p.conns {
		// A reset, not a FIN: the peers see a broken connection, not a
		// response that ended normally.
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
	if n > 0 {
		p.cuts++
	}
	return n
}

func (p *cutProxy) drops() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// lineLogger sends a child's output to t.Log line by line.
type lineLogger struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	buf    []byte
}

func (l *lineLogger) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			break
		}
		l.t.Log(l.prefix + string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(b), nil
}

func (l *lineLogger) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.t.Log(l.prefix + string(l.buf))
		l.buf = nil
	}
}
