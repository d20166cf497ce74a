package llmtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/corral-sh/corral/internal/llm"
)

// messagesAPI is Anthropic Messages.
type messagesAPI struct{}

type messagesRequest struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"tools"`
}

// anthropicBlock is a content block of a message (or of a tool result).
type anthropicBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (messagesAPI) parse(body []byte, r *Request) error {
	var mr messagesRequest
	if err := json.Unmarshal(body, &mr); err != nil {
		return fmt.Errorf("messages request: %w", err)
	}
	r.Model, r.Stream, r.MaxTokens = mr.Model, mr.Stream, mr.MaxTokens
	for _, t := range mr.Tools {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		r.Tools = append(r.Tools, name)
	}
	sys, err := anthropicBlocks(mr.System)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	var system []string
	for _, b := range sys {
		system = append(system, b.Text)
	}
	r.System = strings.Join(system, "\n\n")
	for _, m := range mr.Messages {
		blocks, err := anthropicBlocks(m.Content)
		if err != nil {
			return err
		}
		msg := llm.Message{Role: llm.Role(m.Role)}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				msg.Content = append(msg.Content, llm.Text(b.Text))
			case "image":
				msg.Content = append(msg.Content, anthropicImage(b))
			case "tool_use":
				msg.Content = append(msg.Content, llm.Part{Type: llm.PartToolCall, CallID: b.ID, Tool: b.Name,
					Input: llm.ToolInput(string(b.Input))})
			case "tool_result":
				inner, err := anthropicBlocks(b.Content)
				if err != nil {
					return fmt.Errorf("tool_result content: %w", err)
				}
				res := llm.Part{Type: llm.PartToolResult, CallID: b.ToolUseID, IsError: b.IsError}
				var text []string
				for _, ib := range inner {
					switch ib.Type {
					case "text":
						text = append(text, ib.Text)
					case "image":
						res.Images = append(res.Images, anthropicImage(ib))
					}
				}
				res.Text = strings.Join(text, "\n")
				msg.Content = append(msg.Content, res)
			}
		}
		r.Messages = append(r.Messages, msg)
	}
	return nil
}

// anthropicBlocks reads content that is a string or an array of blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	return blocks, nil
}

func anthropicImage(b anthropicBlock) llm.Part {
	if b.Source.Type == "base64" {
		if data, err := base64.StdEncoding.DecodeString(b.Source.Data); err == nil {
			return llm.Part{Type: llm.PartImage, MediaType: b.Source.MediaType, Data: data}
		}
	}
	return llm.Part{Type: llm.PartImage, Text: b.Source.URL}
}

func (messagesAPI) writeError(w http.ResponseWriter, status int, msg string, overflow bool) {
	typ := "invalid_request_error"
	switch {
	case overflow:
		msg = "prompt is too long: 210000 tokens > 200000 maximum"
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
		if msg == "" {
			msg = "Number of request tokens has exceeded your per-minute rate limit"
		}
	case status == 529:
		typ = "overloaded_error"
		if msg == "" {
			msg = "Overloaded"
		}
	case status >= 500:
		typ = "api_error"
		if msg == "" {
			msg = "Internal server error"
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	w.Header().Set("request-id", "req_"+randomID())
	writeJSON(w, status, map[string]any{"type": "error",
		"error": map[string]any{"type": typ, "message": msg}, "request_id": "req_" + randomID()})
}

func anthropicStop(stop string) string {
	switch stop {
	case llm.StopToolCalls:
		return "tool_use"
	case llm.StopMaxTokens:
		return "max_tokens"
	}
	return "end_turn"
}

func (messagesAPI) writeTurn(ctx context.Context, w http.ResponseWriter, req Request, t Turn, u Usage) error {
	id := "msg_" + randomID()
	calls := make([]ToolCall, len(t.ToolCalls))
	for i, c := range t.ToolCalls {
		if c.ID == "" {
			c.ID = "toolu_" + randomID()
		}
		calls[i] = c
	}
	usage := map[string]any{"input_tokens": u.Input, "output_tokens": u.Output,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "service_tier": "standard"}
	if !req.Stream {
		content := []any{}
		if t.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": t.Text})
		}
		for _, c := range calls {
			var input any = json.RawMessage(c.Input)
			if !json.Valid([]byte(c.Input)) {
				input = c.Input // a JSON body cannot carry broken JSON: send it as a string
			}
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "type": "message", "role": "assistant",
			"model": req.Model, "content": content, "stop_reason": anthropicStop(t.stop()),
			"stop_sequence": nil, "usage": usage})
		return nil
	}

	e := startSSE(ctx, w)
	startUsage := map[string]any{"input_tokens": u.Input, "output_tokens": 1,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "service_tier": "standard"}
	if err := e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage}}); err != nil {
		return err
	}
	if err := e.send("ping", map[string]any{"type": "ping"}); err != nil {
		return err
	}
	index := 0
	if t.Text != "" {
		if err := e.send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}}); err != nil {
			return err
		}
		for i, piece := range chunks(t.Text, t.Chunks) {
			if err := e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": piece}}); err != nil {
				return err
			}
			if i == 0 && !e.stall(t.Stall) {
				return ctx.Err()
			}
		}
		if err := e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}); err != nil {
			return err
		}
		index++
	}
	for _, c := range calls {
		if err := e.send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}}); err != nil {
			return err
		}
		// The API opens with an empty partial_json, then the pieces.
		for _, piece := range append([]string{""}, chunks(c.Input, 2)...) {
			if err := e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": piece}}); err != nil {
				return err
			}
		}
		if err := e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}); err != nil {
			return err
		}
		index++
	}
	if err := e.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(t.stop()), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.Output}}); err != nil {
		return err
	}
	return e.send("message_stop", map[string]any{"type": "message_stop"})
}
