package llm_test

import (
	"testing"

	"github.com/corral-sh/corral/internal/llm"
)

func TestContextWindow(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  int
	}{
		{"gpt-4o", 128_000},
		{"gpt-4o-mini-2024-07-18", 128_000},
		{"openai/gpt-4.1", 1_047_576},
		{"gpt-4.1-mini", 1_047_576},
		{"gpt-4", 8_192},
		{"gpt-4-turbo", 128_000},
		{"o3-mini", 200_000},
		{"o1-mini", 128_000},
		{"gpt-5-codex", 272_000},
		{"anthropic/claude-sonnet-4-5", 200_000},
		{"Claude-3-5-Haiku-Latest", 200_000},
		{"openai/openai/gpt-4o", 128_000}, // OpenRouter names
		{"gemini-2.5-pro", 1_048_576},
		{"qwen2.5-coder:7b", llm.DefaultContextWindow},
		{"", llm.DefaultContextWindow},
	} {
		if got := llm.ContextWindow(tc.model); got != tc.want {
			t.Errorf("ContextWindow(%q) = %d, want %d", tc.model, got, tc.want)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	text := make([]byte, 4000)
	for i := range text {
		text[i] = 'a'
	}
	msgs := []llm.Message{llm.UserText(string(text))}
	if got := llm.EstimateTokens(msgs); got < 1000 || got > 1020 {
		t.Errorf("EstimateTokens(4000 bytes) = %d, want about 1000", got)
	}
	withImage := append(msgs, llm.Message{Role: llm.RoleUser, Content: []llm.Part{{Type: llm.PartToolResult, Text: "x",
		Images: []llm.Part{{Type: llm.PartImage, Data: make([]byte, 1<<20)}}}}})
	if got, base := llm.EstimateTokens(withImage), llm.EstimateTokens(msgs); got-base < llm.ImageTokens || got-base > llm.ImageTokens+20 {
		t.Errorf("an image adds %d tokens, want about %d whatever its size", got-base, llm.ImageTokens)
	}
	if got := llm.EstimateTokens(nil); got != 0 {
		t.Errorf("EstimateTokens(nil) = %d, want 0", got)
	}
	req := llm.Request{System: string(text), Messages: msgs}
	if got := llm.EstimateRequestTokens(req); got < 2000 {
		t.Errorf("EstimateRequestTokens with a 4000-byte system prompt = %d, want >= 2000", got)
	}
}

func TestToolInput(t *testing.T) {
	for _, tc := range []struct {
		raw, input string
		malformed  bool
		args       string
	}{
		{`{"a":1}`, `{"a":1}`, false, `{"a":1}`},
		{`  {"a": [1, 2]} `, `{"a": [1, 2]}`, false, `{"a": [1, 2]}`},
		{``, `{}`, false, `{}`},
		{`{"a": "unterminated`, `"{\"a\": \"unterminated"`, true, `{"a": "unterminated`},
		{`[1,2]`, `"[1,2]"`, true, `[1,2]`},
		{`null`, `"null"`, true, `null`},
	} {
		in := llm.ToolInput(tc.raw)
		if string(in) != tc.input {
			t.Errorf("ToolInput(%q) = %s, want %s", tc.raw, in, tc.input)
		}
		p := llm.Part{Type: llm.PartToolCall, Input: in}
		raw, bad := llm.MalformedInput(p)
		if bad != tc.malformed || (bad && raw != tc.raw) {
			t.Errorf("MalformedInput(%s) = %q, %v; want %q, %v", in, raw, bad, tc.raw, tc.malformed)
		}
		if got := llm.ToolArguments(p); got != tc.args {
			t.Errorf("ToolArguments(%s) = %q, want %q", in, got, tc.args)
		}
	}
}
