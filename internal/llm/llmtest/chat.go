package llmtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/corral-sh/corral/internal/llm"
)

// chatAPI is OpenAI Chat Completions.
type chatAPI struct{}

type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

// chatPart is a content part of a chat message.
type chatPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// An object {"url": ...} in Chat Completions, a string in Responses.
	ImageURL json.RawMessage `json:"image_url"`
}

func (p chatPart) imageURL() string {
	var s string
	if json.Unmarshal(p.ImageURL, &s) == nil {
		return s
	}
	var o struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(p.ImageURL, &o)
	return o.URL
}

func (chatAPI) parse(body []byte, r *Request) error {
	var cr chatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		return fmt.Errorf("chat completions request: %w", err)
	}
	r.Model, r.Stream = cr.Model, cr.Stream
	r.MaxTokens = max(cr.MaxTokens, cr.MaxCompletionTokens)
	for _, t := range cr.Tools {
		name := t.Function.Name
		if name == "" {
			name = t.Name
		}
		r.Tools = append(r.Tools, name)
	}
	var system []string
	for _, m := range cr.Messages {
		parts, err := chatContent(m.Content)
		if err != nil {
			return err
		}
		switch m.Role {
		case "system", "developer":
			for _, p := range parts {
				system = append(system, p.Text)
			}
		case "user":
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Content: parts})
		case "assistant":
			msg := llm.Message{Role: llm.RoleAssistant, Content: parts}
			for _, c := range m.ToolCalls {
				msg.Content = append(msg.Content, llm.Part{Type: llm.PartToolCall, CallID: c.ID,
					Tool: c.Function.Name, Input: llm.ToolInput(c.Function.Arguments)})
			}
			r.Messages = append(r.Messages, msg)
		case "tool":
			var text []string
			for _, p := range parts {
				text = append(text, p.Text)
			}
			res := llm.Part{Type: llm.PartToolResult, CallID: m.ToolCallID, Text: strings.Join(text, "")}
			// Consecutive tool messages answer one assistant turn.
			if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == llm.RoleUser && isToolResults(r.Messages[n-1]) {
				r.Messages[n-1].Content = append(r.Messages[n-1].Content, res)
			} else {
				r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Part{res}})
			}
		}
	}
	r.System = strings.Join(system, "\n\n")
	return nil
}

func isToolResults(m llm.Message) bool {
	for _, p := range m.Content {
		if p.Type != llm.PartToolResult {
			return false
		}
	}
	return len(m.Content) > 0
}

// chatContent reads a chat message's content: a string, an array of
// parts, or null.
func chatContent(raw json.RawMessage) ([]llm.Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []llm.Part{llm.Text(s)}, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("message content: %w", err)
	}
	var out []llm.Part
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			out = append(out, llm.Text(p.Text))
		case "image_url", "input_image":
			out = append(out, imageFromURL(p.imageURL()))
		}
	}
	return out, nil
}

// imageFromURL decodes a data URL; another URL is kept in Text.
func imageFromURL(u string) llm.Part {
	rest, ok := strings.CutPrefix(u, "data:")
	if ok {
		meta, data, _ := strings.Cut(rest, ",")
		mt, _, _ := strings.Cut(meta, ";")
		if b, err := base64.StdEncoding.DecodeString(data); err == nil {
			return llm.Part{Type: llm.PartImage, MediaType: mt, Data: b}
		}
	}
	return llm.Part{Type: llm.PartImage, Text: u}
}

func (chatAPI) writeError(w http.ResponseWriter, status int, msg string, overflow bool) {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case overflow:
		msg = "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages."
		code = "context_length_exceeded"
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
		if msg == "" {
			msg = "Rate limit reached for requests. Please try again later."
		}
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
		if msg == "" {
			msg = "Incorrect API key provided."
		}
	case status >= 500:
		typ = "server_error"
		if msg == "" {
			msg = "The server had an error while processing your request. Sorry about that!"
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

func chatFinish(stop string) string {
	switch stop {
	case llm.StopToolCalls:
		return "tool_calls"
	case llm.StopMaxTokens:
		return "length"
	}
	return "stop"
}

func chatUsage(u Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": 0, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0}}
}

func (chatAPI) writeTurn(ctx context.Context, w http.ResponseWriter, req Request, t Turn, u Usage) error {
	var cr chatRequest
	_ = json.Unmarshal(req.Raw, &cr)
	id, created := "chatcmpl-"+randomID(), time.Now().Unix()
	calls := make([]ToolCall, len(t.ToolCalls))
	for i, c := range t.ToolCalls {
		if c.ID == "" {
			c.ID = "call_" + randomID()
		}
		calls[i] = c
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
		if t.Text != "" {
			msg["content"] = t.Text
		}
		if len(calls) > 0 {
			var tcs []map[string]any
			for _, c := range calls {
				tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": c.Input}})
			}
			msg["tool_calls"] = tcs
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": created,
			"model": req.Model, "system_fingerprint": nil,
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": chatFinish(t.stop())}},
			"usage":   chatUsage(u)})
		return nil
	}

	usage := cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage
	e := startSSE(ctx, w)
	chunk := func(delta map[string]any, finish any) error {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"system_fingerprint": nil,
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if usage {
			c["usage"] = nil
		}
		return e.send("", c)
	}
	if err := chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil); err != nil {
		return err
	}
	if t.Text != "" {
		for i, piece := range chunks(t.Text, t.Chunks) {
			if err := chunk(map[string]any{"content": piece}, nil); err != nil {
				return err
			}
			if i == 0 && !e.stall(t.Stall) {
				return ctx.Err()
			}
		}
	}
	for i, c := range calls {
		start := map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}
		if err := chunk(map[string]any{"tool_calls": []any{start}}, nil); err != nil {
			return err
		}
		for _, piece := range chunks(c.Input, 2) {
			d := map[string]any{"index": i, "function": map[string]any{"arguments": piece}}
			if err := chunk(map[string]any{"tool_calls": []any{d}}, nil); err != nil {
				return err
			}
		}
	}
	if err := chunk(map[string]any{}, chatFinish(t.stop())); err != nil {
		return err
	}
	if usage {
		if err := e.send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "system_fingerprint": nil, "choices": []any{}, "usage": chatUsage(u)}); err != nil {
			return err
		}
	}
	return e.send("", "[DONE]")
}
