package anthropic_test

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
	"github.com/corral-sh/corral/internal/llm/anthropic"
	"github.com/corral-sh/corral/internal/llm/llmtest"
)

func newProvider(s *llmtest.Server, key string, retry llm.RetryPolicy) llm.Provider {
	return anthropic.New(anthropic.Options{BaseURL: s.URL, APIKey: key, Retry: retry})
}

func TestProviderSuite(t *testing.T) {
	llmtest.ProviderSuite(t, "anthropic", newProvider)
}

var png = []byte("\x89PNG\r\n\x1a\nnot really a png")

func TestToolResultsMergedOnTheWire(t *testing.T) {
	s := llmtest.New(t, llmtest.Turn{Text: "seen"})
	p := newProvider(s, "k", llm.RetryPolicy{})
	req := llm.Request{Model: "claude-sonnet-4-5", System: "sys", Messages: []llm.Message{
		llm.UserText("first"),
		{Role: llm.RoleUser, Content: []llm.Part{llm.Text("second"), {Type: llm.PartImage, MediaType: "image/png", Data: png}}},
		{Role: llm.RoleAssistant, Content: []llm.Part{llm.Text("calling"),
			{Type: llm.PartToolCall, CallID: "toolu_1", Tool: "screenshot", Input: json.RawMessage(`{}`)},
			{Type: llm.PartToolCall, CallID: "toolu_2", Tool: "bash", Input: json.RawMessage(`{"command":"false"}`)}}},
		{Role: llm.RoleUser, Content: []llm.Part{
			{Type: llm.PartToolResult, CallID: "toolu_1", Text: "a screenshot", Images: []llm.Part{{Type: llm.PartImage, MediaType: "image/png", Data: png}}},
			{Type: llm.PartToolResult, CallID: "toolu_2", Text: "exit status 1", IsError: true}}},
		llm.UserText("injected: hurry up"),                         // a second user message in a row
		{Role: llm.RoleUser, Content: []llm.Part{llm.Text("   ")}}, // empty text is dropped
	}}
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	r := s.Completions()[0]
	if r.System != "sys" || r.MaxTokens != anthropic.DefaultMaxTokens {
		t.Errorf("system, max_tokens = %q, %d", r.System, r.MaxTokens)
	}
	got := r.Messages
	if len(got) != 3 {
		t.Fatalf("server saw %d messages, want 3 alternating: %+v", len(got), got)
	}
	for i, role := range []llm.Role{llm.RoleUser, llm.RoleAssistant, llm.RoleUser} {
		if got[i].Role != role {
			t.Errorf("message %d role = %q, want %q", i, got[i].Role, role)
		}
	}
	if c := got[0].Content; len(c) != 3 || c[0].Text != "first" || c[1].Text != "second" || !bytes.Equal(c[2].Data, png) {
		t.Errorf("first user message = %+v", c)
	}
	c := got[2].Content
	if len(c) != 3 {
		t.Fatalf("last user message = %+v, want 2 results and the text", c)
	}
	if c[0].Type != llm.PartToolResult || c[0].Text != "a screenshot" || len(c[0].Images) != 1 || !bytes.Equal(c[0].Images[0].Data, png) || c[0].Images[0].MediaType != "image/png" || c[0].IsError {
		t.Errorf("result 1 = %+v", c[0])
	}
	if c[1].Type != llm.PartToolResult || !c[1].IsError || c[1].Text != "exit status 1" || c[1].Tool != "bash" {
		t.Errorf("result 2 = %+v", c[1])
	}
	if c[2].Text != "injected: hurry up" {
		t.Errorf("text after the results = %+v", c[2])
	}
}

func TestNoKeyNoEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	s := llmtest.New(t, llmtest.Turn{Text: "hi"})
	p := anthropic.New(anthropic.Options{BaseURL: s.URL})
	resp, err := p.Complete(context.Background(), llm.Request{Model: "m", MaxTokens: 77, Messages: []llm.Message{llm.UserText("hi")}}, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Message.TextOf() != "hi" {
		t.Errorf("text = %q", resp.Message.TextOf())
	}
	r := s.Completions()[0]
	if h := r.Header.Get("X-Api-Key") + r.Header.Get("Authorization"); h != "" {
		t.Errorf("credentials sent: %q, want none", h)
	}
	if r.MaxTokens != 77 {
		t.Errorf("max_tokens = %d, want 77", r.MaxTokens)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		t.Errorf("no anthropic-version header")
	}
}

// TestStreamErrorEvent: an overloaded_error event after a 200 is retried;
// a stream cut before message_stop is an error, not a short answer.
func TestStreamErrorEvent(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		start := `event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":4,"cache_creation_input_tokens":2}}}` + "\n\n"
		switch calls.Add(1) {
		case 1:
			fmt.Fprint(w, start+"event: error\n"+`data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`+"\n\n")
		case 2:
			fmt.Fprint(w, start) // cut
		default:
			fmt.Fprint(w, start+
				"event: content_block_start\n"+`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n"+
				"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`+"\n\n"+
				"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":0}`+"\n\n"+
				"event: message_delta\n"+`data: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":9}}`+"\n\n"+
				"event: message_stop\n"+`data: {"type":"message_stop"}`+"\n\n")
		}
	}))
	defer srv.Close()
	p := anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: llm.RetryPolicy{MinBackoff: time.Millisecond}})
	resp, err := p.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("x")}}, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if calls.Load() != 3 {
		t.Errorf("server saw %d requests, want 3", calls.Load())
	}
	want := llm.Usage{InputTokens: 10, OutputTokens: 9, CacheReadTokens: 4, CacheWriteTokens: 2}
	if resp.Usage != want || resp.StopReason != llm.StopMaxTokens || resp.Message.TextOf() != "ok" {
		t.Errorf("response = %+v, want usage %+v, stop max_tokens, text ok", resp, want)
	}
}
