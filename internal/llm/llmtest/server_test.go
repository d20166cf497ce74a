package llmtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
)

// post sends body to path and returns the status, headers and body.
func post(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

// recorder is a testing.TB that keeps Errorf calls instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestMatchFailureFailsTheTest(t *testing.T) {
	rec := &recorder{TB: t}
	s := llmtest.New(rec, llmtest.Turn{Text: "x", Match: func(r llmtest.Request) bool { return r.Model == "other" }})
	status, h, body := post(t, s.URL+"/v1/chat/completions", chatBody)
	if status != 400 || h.Get("X-Should-Retry") != "false" || !strings.Contains(body, "does not match") {
		t.Errorf("answer = %d %s", status, body)
	}
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], `model "m"`) || !strings.Contains(rec.errs[0], `"hi"`) {
		t.Errorf("test errors = %q, want one naming the request", rec.errs)
	}
}

func TestScriptOrderHandlersAndRespond(t *testing.T) {
	s := llmtest.New(t,
		llmtest.Turn{Text: "first", Match: func(r llmtest.Request) bool { return r.API == llmtest.APIOpenAIChat }},
		llmtest.Turn{Respond: func(r llmtest.Request) llmtest.Turn {
			return llmtest.Turn{Text: "you said " + r.Last().TextOf()}
		}},
	)
	// A side request (a title) never takes a scripted turn.
	s.Handle(func(r llmtest.Request) (llmtest.Turn, bool) {
		if strings.Contains(r.System, "title") {
			return llmtest.Turn{Text: "A Title"}, true
		}
		return llmtest.Turn{}, false
	})
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/messages", `{"model":"m","max_tokens":10,"system":"write a title","messages":[{"role":"user","content":"x"}]}`, "A Title"},
		{"/chat/completions", chatBody, "first"},
		{"/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"ping"}]}]}`, "you said ping"},
	} {
		status, _, body := post(t, s.URL+tc.path, tc.body)
		if status != 200 || !strings.Contains(body, tc.want) {
			t.Errorf("POST %s = %d %s, want %q", tc.path, status, body, tc.want)
		}
	}
	if s.Remaining() != 0 || len(s.Unexpected()) != 0 || len(s.Completions()) != 3 {
		t.Errorf("remaining %d, unexpected %d, completions %d", s.Remaining(), len(s.Unexpected()), len(s.Completions()))
	}
}

func TestUnexpectedRequests(t *testing.T) {
	s := llmtest.New(t)
	status, h, body := post(t, s.URL+"/v1/chat/completions", chatBody)
	if status != 500 || h.Get("X-Should-Retry") != "false" || !strings.Contains(body, "no scripted turn left") {
		t.Errorf("empty queue answer = %d %s", status, body)
	}
	status, _, _ = post(t, s.URL+"/v1/embeddings", `{}`)
	if status != 404 {
		t.Errorf("unknown path answer = %d, want 404", status)
	}
	req, _ := http.NewRequest(http.MethodHead, s.URL+"/", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD / = %v, %v; want 200", resp, err)
	}
	u := s.Unexpected()
	if len(u) != 2 || u[0].API != llmtest.APIOpenAIChat || u[1].Path != "/v1/embeddings" {
		t.Errorf("Unexpected() = %+v", u)
	}
}

func TestHostileBodies(t *testing.T) {
	s := llmtest.New(t, llmtest.Turn{Text: "never"})
	for _, tc := range []struct{ path, body, has string }{
		{"/v1/chat/completions", `{"model":`, `"type":"invalid_request_error"`},
		{"/v1/messages", `[1,2]`, `"type":"error"`},
		{"/v1/responses", `{"input":{"weird":true}}`, `"error"`},
		{"/v1beta/models/g:generateContent", `nope`, `"INVALID_ARGUMENT"`},
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":12}]}`, `"error"`},
	} {
		status, _, body := post(t, s.URL+tc.path, tc.body)
		if status != 400 || !strings.Contains(body, tc.has) {
			t.Errorf("POST %s %q = %d %s, want 400 with %s", tc.path, tc.body, status, body, tc.has)
		}
	}
	if s.Remaining() != 1 {
		t.Errorf("a malformed request took a turn")
	}
}

func TestErrorTurns(t *testing.T) {
	s := llmtest.New(t,
		llmtest.Turn{Status: 429, RetryAfter: 1500 * time.Millisecond},
		llmtest.Turn{Status: 529},
		llmtest.Turn{Status: 503, ErrorBody: `{"custom":true}`},
		llmtest.ContextOverflow(),
	)
	status, h, body := post(t, s.URL+"/v1/chat/completions", chatBody)
	if status != 429 || h.Get("Retry-After") != "2" || h.Get("Retry-After-Ms") != "1500" || !strings.Contains(body, "rate_limit_exceeded") {
		t.Errorf("429 = %d %v %s", status, h, body)
	}
	status, _, body = post(t, s.URL+"/v1/messages", `{"model":"m","max_tokens":1,"messages":[]}`)
	if status != 529 || !strings.Contains(body, `"overloaded_error"`) {
		t.Errorf("529 = %d %s", status, body)
	}
	status, _, body = post(t, s.URL+"/v1/messages", `{"model":"m","max_tokens":1,"messages":[]}`)
	if status != 503 || strings.TrimSpace(body) != `{"custom":true}` {
		t.Errorf("verbatim body = %d %s", status, body)
	}
	status, _, body = post(t, s.URL+"/v1/messages", `{"model":"m","max_tokens":1,"messages":[]}`)
	if status != 400 || !strings.Contains(body, "prompt is too long") {
		t.Errorf("overflow = %d %s", status, body)
	}
}

func TestUsageEstimated(t *testing.T) {
	s := llmtest.New(t, llmtest.Turn{Text: strings.Repeat("x", 400)})
	long := strings.Repeat("word ", 800)
	status, _, body := post(t, s.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+long+`"}]}`)
	var resp struct {
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal([]byte(body), &resp)
	// 4000 bytes of prompt, 400 of answer, about 4 bytes a token.
	if u := resp.Usage; status != 200 || u.Prompt < 900 || u.Prompt > 1100 || u.Completion != 100 {
		t.Errorf("usage = %+v (%d)", u, status)
	}
}

func TestConcurrentClients(t *testing.T) {
	const n = 16
	s := llmtest.New(t)
	for i := range n {
		s.Add(llmtest.Turn{Text: fmt.Sprintf("answer-%d", i), Chunks: 2})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, body := "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
			if i%2 == 1 {
				path, body = "/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
			}
			resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			text := string(b)
			for j := range n {
				// the answer arrives in two deltas: "answe" + "r-N"
				if strings.Contains(text, fmt.Sprintf(`r-%d"`, j)) {
					mu.Lock()
					seen[fmt.Sprint(j)] = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n || s.Remaining() != 0 || len(s.Completions()) != n {
		t.Errorf("answers seen %d, remaining %d, completions %d; want each turn used once", len(seen), s.Remaining(), len(s.Completions()))
	}
}

// TestCloseEndsStalledStreams: a stream stalled for an hour does not
// keep Close (and so the test's cleanup) waiting.
func TestCloseEndsStalledStreams(t *testing.T) {
	s := llmtest.New(t, llmtest.Turn{Text: "stalls here", Stall: time.Hour}, llmtest.Turn{Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, body := range []string{`{"model":"m","stream":true,"messages":[]}`, `{"model":"m","messages":[]}`} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/chat/completions", strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			started <- struct{}{}
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	// Wait until the stalled stream has begun (the delayed one is in the
	// handler once it is recorded).
	<-started
	for len(s.Completions()) < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	s.Close()
	wg.Wait()
	s.Close() // idempotent
}

func TestRequestHelpers(t *testing.T) {
	r := llmtest.Request{Messages: []llm.Message{
		llm.UserText("a"),
		{Role: llm.RoleAssistant, Content: []llm.Part{{Type: llm.PartToolCall, CallID: "1"}}},
		{Role: llm.RoleUser, Content: []llm.Part{{Type: llm.PartToolResult, CallID: "1", Text: "r1"}}},
		llm.UserText("b"),
	}}
	if got := r.ToolResults(); len(got) != 1 || got[0].Text != "r1" {
		t.Errorf("ToolResults() = %+v", got)
	}
	if r.Last().TextOf() != "b" {
		t.Errorf("Last() = %+v", r.Last())
	}
	c := llmtest.Call("bash", map[string]string{"command": "ls"})
	if c.Name != "bash" || c.Input != `{"command":"ls"}` || !strings.HasPrefix(c.ID, "call_") {
		t.Errorf("Call() = %+v", c)
	}
}
