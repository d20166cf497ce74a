package builtin_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/builtin"
	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
	"github.com/corral-sh/corral/internal/llm/registry"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
	"github.com/corral-sh/corral/internal/testenv"
)

// harness runs the agent against a real sandboxd on the host (root /,
// workspace in a temp dir) and a scripted model, keeping the log in
// memory as the job engine would store it.
type harness struct {
	t    *testing.T
	s    *llmtest.Server
	ag   *builtin.Agent
	cl   *client.Client
	ws   string
	mu   sync.Mutex
	log  []cpapi.Event
	fail func(evs []agent.Event) error // optional: make Emit fail (a crash)
	sent bool
}

func newHarness(t *testing.T, turns ...llmtest.Turn) *harness {
	t.Helper()
	d := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{Root: "/", Token: "tok", Logger: quiet}})
	cl, err := client.New(d.URL, client.WithToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	s := llmtest.New(t, turns...)
	reg := registry.New(registry.Config{AnthropicBaseURL: s.URL, AnthropicKey: "k", OpenAIBaseURL: s.URL + "/v1", OpenAIKey: "k",
		Retry: llm.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}})
	return &harness{t: t, s: s, ag: builtin.New(builtin.Config{Models: reg}), cl: cl, ws: t.TempDir()}
}

func (h *harness) emit(_ context.Context, evs ...agent.Event) error {
	if h.fail != nil {
		if err := h.fail(evs); err != nil {
			return err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range evs {
		b, err := json.Marshal(ev.Data)
		if err != nil {
			return err
		}
		h.log = append(h.log, cpapi.Event{Seq: int64(len(h.log) + 1), Type: ev.Type, Data: b})
	}
	return nil
}

func (h *harness) run(model string, inbox <-chan agent.Injected) (*agent.Result, error) {
	h.mu.Lock()
	hist := append([]cpapi.Event{}, h.log...)
	h.mu.Unlock()
	return h.ag.Run(context.Background(), &agent.Session{JobID: "job_" + strings.ToLower(strings.ReplaceAll(h.t.Name(), "/", "_")),
		Task: "the task", Model: model, Sandbox: h.cl, Workdir: h.ws, History: hist, Emit: h.emit, Inbox: inbox,
		Env: map[string]string{"PATH": os.Getenv("PATH")}})
}

// TestScreenshotsReachTheModel: a computer action's screenshot goes to
// the provider as an image in the tool result (Anthropic) or the user
// message after it (OpenAI).
func TestScreenshotsReachTheModel(t *testing.T) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		testenv.Unavailable(t, "Xvfb is not installed")
	}
	for _, model := range []string{"anthropic/claude-sonnet-4-5", "openai/gpt-4o"} {
		t.Run(model, func(t *testing.T) {
			h := newHarness(t,
				llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("computer", map[string]any{"action": "screenshot"})}},
				llmtest.Turn{
					Match: func(r llmtest.Request) bool {
						for _, m := range r.Messages[max(len(r.Messages)-2, 0):] {
							for _, p := range m.Content {
								if p.Type == llm.PartImage && len(p.Data) > 0 {
									return true
								}
								for _, img := range p.Images {
									if len(img.Data) > 0 {
										return true
									}
								}
							}
						}
						return false
					},
					ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "saw it"})}},
			)
			res, err := h.run(model, nil)
			if err != nil || res.Summary != "saw it" {
				t.Fatalf("run: %+v %v", res, err)
			}
			var d cpapi.ToolResultData
			for _, e := range h.log {
				if e.Type == cpapi.EventToolResult {
					_ = json.Unmarshal(e.Data, &d)
					break
				}
			}
			if d.ImageCount != 1 {
				t.Errorf("tool.result = %+v", d)
			}
		})
	}
}

// TestReplayRebuildsTheConversation stops a run mid-job (its log write
// fails, as when the control plane dies), then resumes from the log: the
// resumed run's next request shows the model exactly the conversation
// the stopped run had built, and no tool runs twice.
func TestReplayRebuildsTheConversation(t *testing.T) {
	h := newHarness(t,
		llmtest.Turn{Text: "Starting.", ToolCalls: []llmtest.ToolCall{
			llmtest.Call("bash", map[string]any{"command": "echo one >> runs.txt; cat runs.txt"}),
			llmtest.Call("editor", map[string]any{"command": "create", "path": "a.txt", "file_text": "alpha\n"})}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "echo two >> runs.txt; cat runs.txt a.txt"})}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "done"})}},
	)
	// Crash when the second step's result is about to be written: the
	// command ran, its result never reached the log.
	results := 0
	h.fail = func(evs []agent.Event) error {
		for _, ev := range evs {
			if ev.Type == cpapi.EventToolResult {
				results++
				if results == 3 {
					return errCrash
				}
			}
		}
		return nil
	}
	if _, err := h.run("anthropic/claude-x", nil); err == nil || !strings.Contains(err.Error(), "crash") {
		t.Fatalf("first run: %v", err)
	}
	h.fail = nil
	res, err := h.run("anthropic/claude-x", nil)
	if err != nil || res.Summary != "done" {
		t.Fatalf("resumed run: %+v %v", res, err)
	}
	reqs := h.s.Completions()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls; want 3", len(reqs))
	}
	last := reqs[2]
	results3 := last.ToolResults()
	if len(results3) != 1 || strings.TrimSpace(results3[0].Text) != "one\ntwo\nalpha" {
		t.Fatalf("the recovered result = %+v", results3)
	}
	// The conversation before that result is the one the first run built.
	if len(last.Messages) != 5 || last.Messages[0].TextOf() != reqs[1].Messages[0].TextOf() ||
		len(last.Messages[2].Content) != len(reqs[1].Messages[2].Content) {
		t.Errorf("replayed conversation differs:\n%+v\nvs\n%+v", last.Messages, reqs[1].Messages)
	}
	runs, _ := os.ReadFile(h.ws + "/runs.txt")
	if string(runs) != "one\ntwo\n" {
		t.Errorf("runs.txt = %q: a command ran twice", runs)
	}
}

// TestInjectedMessagesAreReplayedInPlace: a message injected mid-run is
// part of the conversation at the same place after a resume.
func TestInjectedMessagesAreReplayedInPlace(t *testing.T) {
	inbox := make(chan agent.Injected, 1)
	h := newHarness(t,
		llmtest.Turn{Respond: func(llmtest.Request) llmtest.Turn {
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "true"})}}
		}},
		llmtest.Turn{Match: func(r llmtest.Request) bool { return strings.Contains(r.Last().TextOf(), "use tabs") },
			ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "true"})}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "ok"})}},
		// The resumed run's one call.
		llmtest.Turn{Match: func(r llmtest.Request) bool {
			n := 0
			for _, m := range r.Messages {
				if strings.Contains(m.TextOf(), "use tabs") {
					n++
				}
			}
			return n == 1
		}, ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "ok again"})}},
	)
	// The message is in the log (as the job engine writes it) and in the
	// inbox before the second call.
	h.fail = func(evs []agent.Event) error {
		for _, ev := range evs {
			if ev.Type == cpapi.EventToolResult && len(inbox) == 0 && !h.sent {
				h.sent = true
				h.mu.Lock()
				seq := int64(len(h.log) + 1)
				b, _ := json.Marshal(cpapi.MessageData{Role: "user", Text: "please use tabs"})
				h.log = append(h.log, cpapi.Event{Seq: seq, Type: cpapi.EventMessage, Data: b})
				h.mu.Unlock()
				inbox <- agent.Injected{Seq: seq, Role: "user", Text: "please use tabs"}
			}
		}
		return nil
	}
	if res, err := h.run("anthropic/claude-x", inbox); err != nil || res.Summary != "ok" {
		t.Fatalf("run: %+v %v", res, err)
	}
	// Replay the whole log minus the finish, then ask again.
	h.fail = nil
	h.mu.Lock()
	for i := len(h.log) - 1; i >= 0; i-- {
		if h.log[i].Type == cpapi.EventLLMRequest {
			h.log = h.log[:i]
			break
		}
	}
	h.mu.Unlock()
	if res, err := h.run("anthropic/claude-x", nil); err != nil || res.Summary != "ok again" {
		t.Fatalf("resumed: %+v %v", res, err)
	}
}

var errCrash = crashErr{}

type crashErr struct{}

func (crashErr) Error() string { return "crash: the log is gone" }

// TestBrowserAndLSPToolsThroughTheModel: the scripted model drives the
// browser tool on a page and the lsp tool on a planted compile error, and
// sees what they found.
func TestBrowserAndLSPToolsThroughTheModel(t *testing.T) {
	for _, p := range []string{"chromium", "gopls", "go"} {
		if _, err := exec.LookPath(p); err != nil {
			testenv.Unavailable(t, "%s is not installed", p)
		}
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<html><head><title>Shop</title></head><body><button onclick="this.textContent='Bought'">Buy</button></body></html>`)
	}))
	defer page.Close()
	h := newHarness(t,
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("browser", map[string]any{"action": "navigate", "url": page.URL})}},
		llmtest.Turn{Match: func(r llmtest.Request) bool { return strings.Contains(lastResultText(r), "Shop") },
			ToolCalls: []llmtest.ToolCall{llmtest.Call("browser", map[string]any{"action": "click", "selector": "button"})}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("browser", map[string]any{"action": "text"})}},
		llmtest.Turn{Match: func(r llmtest.Request) bool { return strings.Contains(lastResultText(r), "Bought") },
			ToolCalls: []llmtest.ToolCall{llmtest.Call("lsp", map[string]any{"action": "diagnostics", "path": "main.go"})}},
		llmtest.Turn{Match: func(r llmtest.Request) bool { return strings.Contains(lastResultText(r), "main.go:4:") },
			ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "bought; found the error"})}},
	)
	os.WriteFile(h.ws+"/go.mod", []byte("module example.com/m\n\ngo 1.21\n"), 0o644)
	os.WriteFile(h.ws+"/main.go", []byte("package main\n\nfunc main() {\n\tvar n int = \"x\"\n\t_ = n\n}\n"), 0o644)
	res, err := h.run("anthropic/claude-sonnet-4-5", nil)
	if err != nil || res.Summary != "bought; found the error" {
		t.Fatalf("run: %+v %v", res, err)
	}
}

// quiet drops the test daemons' request logs.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func lastResultText(r llmtest.Request) string {
	res := r.ToolResults()
	if len(res) == 0 {
		return ""
	}
	return res[len(res)-1].Text
}
