package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-sh/corral/internal/agent/gateway"
	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const realKey = "sk-real-0123456789abcdef" // what must never reach the sandbox side

// sandboxSide is what runs inside the sandbox: an HTTP client that can
// only dial the gateway's socket (as sandboxd's forward does).
type sandboxSide struct {
	t    *testing.T
	hc   *http.Client
	sock string
	seen strings.Builder // every byte of every answer, headers included
	mu   sync.Mutex
}

// start runs a gateway for provider with upstream base, listening in a
// fresh socket directory, and returns the sandbox side and the listener.
func start(t *testing.T, provider, base string, cfg gateway.Config, opts gateway.ListenOptions) (*sandboxSide, *gateway.Listener) {
	t.Helper()
	if cfg.Upstreams == nil {
		cfg.Upstreams = map[string]gateway.Upstream{provider: {BaseURL: base, Key: realKey}}
	}
	g, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := g.Listen(filepath.Join(dir, gateway.SocketName(provider)), provider, opts)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", l.Path)
	}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &sandboxSide{t: t, hc: &http.Client{Transport: tr}, sock: l.Path}, l
}

// do sends a request as a CLI would and returns the status and body,
// recording everything the sandbox side saw.
func (s *sandboxSide) do(method, path, body string, hdr ...string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, "http://gateway"+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	s.mu.Lock()
	resp.Header.Write(&s.seen)
	s.seen.Write(b)
	s.mu.Unlock()
	return resp.StatusCode, string(b)
}

// noKey fails if the real key reached the sandbox side.
func (s *sandboxSide) noKey() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Contains(s.seen.String(), realKey) {
		s.t.Errorf("the real key reached the sandbox side: %q", s.seen.String())
	}
}

const anthropicBody = `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":%t,"messages":[{"role":"user","content":"hi"}]}`

func TestAnthropicKeySwappedAndUsageCounted(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Turn{Text: "hello there", Usage: llmtest.Usage{Input: 11, Output: 7}},
		llmtest.Turn{Text: "again", Usage: llmtest.Usage{Input: 5, Output: 3}})
	var mu sync.Mutex
	var perAnswer []llm.Usage
	sb, l := start(t, gateway.Anthropic, srv.URL, gateway.Config{}, gateway.ListenOptions{
		Label: "job_1", OnUsage: func(u llm.Usage) { mu.Lock(); perAnswer = append(perAnswer, u); mu.Unlock() }})

	status, body := sb.do("POST", "/v1/messages", fmt.Sprintf(anthropicBody, true),
		"x-api-key", gateway.Placeholder, "anthropic-version", "2023-06-01", "Content-Type", "application/json")
	if status != 200 || !strings.Contains(body, `"text":"hel`) || !strings.Contains(body, "message_stop") {
		t.Fatalf("streamed answer: %d %s", status, body)
	}
	status, body = sb.do("POST", "/v1/messages", fmt.Sprintf(anthropicBody, false),
		"Authorization", "Bearer "+gateway.Placeholder, "anthropic-version", "2023-06-01")
	if status != 200 || !strings.Contains(body, `"again"`) {
		t.Fatalf("plain answer: %d %s", status, body)
	}
	for i, r := range srv.Requests() {
		if got := r.Header.Get("X-Api-Key"); got != realKey {
			t.Errorf("request %d: upstream x-api-key %q; want the real key", i, got)
		}
		if got := r.Header.Get("Authorization"); got != "" {
			t.Errorf("request %d: upstream Authorization %q; want none", i, got)
		}
		for name, vals := range r.Header {
			for _, v := range vals {
				if strings.Contains(v, gateway.Placeholder) {
					t.Errorf("request %d: the placeholder was forwarded in %s", i, name)
				}
			}
		}
		for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "Accept-Encoding"} {
			if r.Header.Get(h) != "" {
				t.Errorf("request %d: upstream got %s %q", i, h, r.Header.Get(h))
			}
		}
	}
	got, calls := l.Usage()
	if want := (llm.Usage{InputTokens: 16, OutputTokens: 10}); got != want || calls != 2 {
		t.Errorf("Usage() = %+v, %d; want %+v, 2", got, calls, want)
	}
	mu.Lock()
	if len(perAnswer) != 2 || perAnswer[0] != (llm.Usage{InputTokens: 11, OutputTokens: 7}) {
		t.Errorf("OnUsage saw %+v; want {11 7} then {5 3}", perAnswer)
	}
	mu.Unlock()
	sb.noKey()
}

// TestStreamFlushes reads the first text delta while the upstream stalls
// in the middle of its stream: the gateway must not hold it back.
func TestStreamFlushes(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Text: "first second third", Chunks: 3, Stall: time.Hour})
	sb, _ := start(t, gateway.Anthropic, srv.URL, gateway.Config{}, gateway.ListenOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://gateway/v1/messages", strings.NewReader(fmt.Sprintf(anthropicBody, true)))
	req.Header.Set("x-api-key", gateway.Placeholder)
	resp, err := sb.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "text_delta") {
			cancel() // got it while the upstream still stalls
			return
		}
	}
	t.Fatalf("no text delta before the stall ended: %v", sc.Err())
}

func TestOpenAIBasePathAndBearer(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Text: "ok", Usage: llmtest.Usage{Input: 3, Output: 2}})
	sb, l := start(t, gateway.OpenAI, srv.URL+"/v1", gateway.Config{}, gateway.ListenOptions{})
	status, body := sb.do("POST", "/chat/completions",
		`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
		"Authorization", "Bearer "+gateway.Placeholder)
	if status != 200 || !strings.Contains(body, "[DONE]") {
		t.Fatalf("answer: %d %s", status, body)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" || reqs[0].Header.Get("Authorization") != "Bearer "+realKey {
		t.Fatalf("upstream saw %q with Authorization %q; want /v1/chat/completions with the real key",
			reqs[0].Path, reqs[0].Header.Get("Authorization"))
	}
	if u, _ := l.Usage(); u != (llm.Usage{InputTokens: 3, OutputTokens: 2}) {
		t.Errorf("Usage() = %+v; want {3 2}", u)
	}
	sb.noKey()
}

// TestGoogleKeyParamDropped: Gemini clients may put the key in ?key=.
func TestGoogleKeyParamDropped(t *testing.T) {
	var mu sync.Mutex
	var got *http.Request
	up := newRecorder(t, &mu, &got)
	sb, _ := start(t, gateway.Google, up, gateway.Config{}, gateway.ListenOptions{})
	status, _ := sb.do("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key="+gateway.Placeholder, `{}`,
		"x-goog-api-key", gateway.Placeholder)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	mu.Lock()
	defer mu.Unlock()
	if q := got.URL.Query(); q.Has("key") || q.Get("alt") != "sse" {
		t.Errorf("upstream query %q; want alt=sse and no key", got.URL.RawQuery)
	}
	if k := got.Header.Get("X-Goog-Api-Key"); k != realKey {
		t.Errorf("upstream x-goog-api-key %q; want the real key", k)
	}
}

// newRecorder is an upstream that keeps the last request and answers
// with an empty event stream.
func newRecorder(t *testing.T, mu *sync.Mutex, got **http.Request) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*got = r.Clone(context.Background())
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"usageMetadata\":{\"promptTokenCount\":4,\"candidatesTokenCount\":2}}\n\n")
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String()
}

func TestRefusals(t *testing.T) {
	srv := llmtest.New(t)
	sb, _ := start(t, gateway.Anthropic, srv.URL, gateway.Config{MaxBody: 1024}, gateway.ListenOptions{})
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"files API", "POST", "/v1/files", `{}`, 403},
		{"batches listing", "GET", "/v1/messages/batches", "", 403},
		{"admin", "GET", "/v1/organizations/me", "", 403},
		{"traversal", "POST", "/v1/messages/../organizations", `{}`, 400},
		{"double slash", "POST", "/v1//messages", `{}`, 400},
		{"encoded slash", "POST", "/v1/messages%2F..%2Fx", `{}`, 400},
		{"too large", "POST", "/v1/messages", strings.Repeat("x", 2048), 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := sb.do(tt.method, tt.path, tt.body, "x-api-key", gateway.Placeholder)
			if status != tt.want || !strings.Contains(body, `"error"`) {
				t.Errorf("%s %s: %d %s; want %d with a JSON error", tt.method, tt.path, status, body, tt.want)
			}
		})
	}
	// A chunked body over the limit is cut too (no Content-Length).
	pr, pw := io.Pipe()
	go func() { pw.Write([]byte(strings.Repeat("y", 4096))); pw.Close() }()
	req, _ := http.NewRequest("POST", "http://gateway/v1/messages", pr)
	resp, err := sb.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Errorf("chunked oversize body: status %d; want an error", resp.StatusCode)
	}
	if n := len(srv.Requests()); n > 0 {
		t.Errorf("%d refused requests reached the upstream; want 0", n)
	}
}

// TestErrorBodyMasksKey: an upstream that quotes the key in its error
// (OpenAI's "Incorrect API key provided: ...") does not leak it.
func TestErrorBodyMasksKey(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 401, ErrorBody: "Incorrect API key provided: " + realKey + "."})
	sb, _ := start(t, gateway.Anthropic, srv.URL, gateway.Config{}, gateway.ListenOptions{})
	status, body := sb.do("POST", "/v1/messages", fmt.Sprintf(anthropicBody, false), "x-api-key", gateway.Placeholder)
	if status != 401 || !strings.Contains(body, "[redacted by corral]") {
		t.Fatalf("%d %s; want 401 with the key masked", status, body)
	}
	sb.noKey()
}

func TestUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sb, _ := start(t, gateway.Anthropic, "http://"+addr, gateway.Config{}, gateway.ListenOptions{})
	status, body := sb.do("POST", "/v1/messages", fmt.Sprintf(anthropicBody, false))
	if status != http.StatusBadGateway || !strings.Contains(body, "did not answer") {
		t.Fatalf("%d %s; want 502", status, body)
	}
}

func TestConcurrentRequestsBounded(t *testing.T) {
	const n = 12
	var turns []llmtest.Turn
	for range n {
		turns = append(turns, llmtest.Turn{Text: "x", Usage: llmtest.Usage{Input: 1, Output: 1}})
	}
	srv := llmtest.New(t, turns...)
	sb, l := start(t, gateway.Anthropic, srv.URL, gateway.Config{MaxConcurrent: 2}, gateway.ListenOptions{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, body := sb.do("POST", "/v1/messages", fmt.Sprintf(anthropicBody, true)); status != 200 {
				t.Errorf("%d %s", status, body)
			}
		}()
	}
	wg.Wait()
	if u, calls := l.Usage(); calls != n || u.InputTokens != n {
		t.Errorf("Usage() = %+v, %d; want %d answers", u, calls, n)
	}
}

func TestListenSocketLifecycle(t *testing.T) {
	g, err := gateway.New(gateway.Config{Upstreams: map[string]gateway.Upstream{gateway.OpenAI: {BaseURL: "http://127.0.0.1:1/v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, gateway.SocketName(gateway.OpenAI))
	if err := os.WriteFile(path, []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := g.Listen(path, gateway.OpenAI, gateway.ListenOptions{})
	if err != nil {
		t.Fatalf("Listen over a stale file: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode %v, %v; want a 0666 socket", fi.Mode(), err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket outlived Close: %v", err)
	}
	if _, err := g.Listen(path, gateway.Anthropic, gateway.ListenOptions{}); err == nil {
		t.Fatal("Listen for an unconfigured provider succeeded")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, ups := range []map[string]gateway.Upstream{
		{"mistral": {BaseURL: "https://api.mistral.ai"}},
		{gateway.OpenAI: {BaseURL: "ftp://x"}},
		{gateway.OpenAI: {BaseURL: "api.openai.com"}},
	} {
		if _, err := gateway.New(gateway.Config{Upstreams: ups}); err == nil {
			t.Errorf("New(%v) succeeded", ups)
		}
	}
}
