package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
	"github.com/corral-sh/corral/internal/llm/openai"
)

func newProvider(s *llmtest.Server, key string, retry llm.RetryPolicy) llm.Provider {
	return openai.New(openai.Options{BaseURL: s.URL + "/v1", APIKey: key, Retry: retry})
}

func TestProviderSuite(t *testing.T) {
	llmtest.ProviderSuite(t, "openai", newProvider)
}

var png = []byte("\x89PNG\r\n\x1a\nnot really a png")

func TestToolResultsAndImagesOnTheWire(t *testing.T) {
	s := llmtest.New(t, llmtest.Turn{Text: "seen"})
	p := newProvider(s, "k", llm.RetryPolicy{})
	req := llm.Request{Model: "gpt-4o", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Part{llm.Text("Look:"), {Type: llm.PartImage, MediaType: "image/png", Data: png}}},
		{Role: llm.RoleAssistant, Content: []llm.Part{
			{Type: llm.PartToolCall, CallID: "c1", Tool: "screenshot", Input: json.RawMessage(`{}`)},
			{Type: llm.PartToolCall, CallID: "c2", Tool: "bash", Input: json.RawMessage(`{"command":"false"}`)}}},
		{Role: llm.RoleUser, Content: []llm.Part{
			{Type: llm.PartToolResult, CallID: "c1", Text: "a screenshot", Images: []llm.Part{{Type: llm.PartImage, MediaType: "image/png", Data: png}}},
			{Type: llm.PartToolResult, CallID: "c2", Text: "exit status 1", IsError: true},
			llm.Text("Go on.")}},
	}}
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got := s.Completions()[0].Messages
	// user(text+image), assistant(2 calls), tool results (role=tool, as
	// one user message), then a user message with the screenshot and text.
	if len(got) != 4 {
		t.Fatalf("server saw %d messages, want 4: %+v", len(got), got)
	}
	if img := got[0].Content[1]; img.Type != llm.PartImage || img.MediaType != "image/png" || !bytes.Equal(img.Data, png) {
		t.Errorf("user image = %+v", img)
	}
	res := got[2].Content
	if len(res) != 2 || res[0].Text != "a screenshot" || res[0].Tool != "screenshot" || res[1].Text != "Error: exit status 1" {
		t.Errorf("tool results = %+v", res)
	}
	last := got[3].Content
	if len(last) != 3 || last[0].Text != "Images from tool call c1:" || !bytes.Equal(last[1].Data, png) || last[2].Text != "Go on." {
		t.Errorf("message after the tool results = %+v", last)
	}
}

func TestNoKeyNoEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	s := llmtest.New(t, llmtest.Turn{Text: "hi"})
	p := openai.New(openai.Options{BaseURL: s.URL + "/v1"})
	if _, err := p.Complete(context.Background(), llm.Request{Model: "llama3", MaxTokens: 100, Messages: []llm.Message{llm.UserText("hi")}}, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	r := s.Completions()[0]
	if h := r.Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}
	// A local server gets max_tokens (OpenAI itself max_completion_tokens).
	var body map[string]any
	if err := json.Unmarshal(r.Raw, &body); err != nil {
		t.Fatal(err)
	}
	if body["max_tokens"] != 100.0 || body["max_completion_tokens"] != nil {
		t.Errorf("max tokens fields = %v, %v; want max_tokens 100", body["max_tokens"], body["max_completion_tokens"])
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v, want include_usage", body["stream_options"])
	}
}

// TestServerQuirks covers streams llmtest does not produce: every call at
// index 0 (older Ollama), no call ids (llama.cpp), finish_reason "stop"
// after tool calls, an error event in the middle of a stream and a stream
// cut before its finish_reason.
func TestServerQuirks(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		first := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}` + "\n\n"
		switch calls.Add(1) {
		case 1:
			fmt.Fprint(w, first+`data: {"error":{"message":"upstream hiccup","type":"server_error","code":null}}`+"\n\n")
			return
		case 2:
			fmt.Fprint(w, first) // cut before finish_reason
			return
		}
		for _, c := range []string{
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},"finish_reason":null}]}`,
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"bash","arguments":"{\"command\":\"pwd\"}"}}]},"finish_reason":null}]}`,
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"type":"function","function":{"name":"noid","arguments":""}}]},"finish_reason":null}]}`,
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`[DONE]`,
		} {
			fmt.Fprint(w, "data: "+c+"\n\n")
		}
	}))
	defer srv.Close()
	p := openai.New(openai.Options{BaseURL: srv.URL, Retry: llm.RetryPolicy{MinBackoff: time.Millisecond}})
	resp, err := p.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("x")}}, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if calls.Load() != 3 {
		t.Errorf("server saw %d requests, want 3 (the error event and the cut stream retried)", calls.Load())
	}
	tc := resp.Message.ToolCalls()
	if len(tc) != 3 || tc[0].CallID != "a" || tc[1].CallID != "b" || string(tc[1].Input) != `{"command":"pwd"}` || tc[2].Tool != "noid" || tc[2].CallID == "" || string(tc[2].Input) != "{}" {
		t.Errorf("tool calls = %+v", tc)
	}
	if resp.StopReason != llm.StopToolCalls {
		t.Errorf("stop = %q, want %q", resp.StopReason, llm.StopToolCalls)
	}
}
