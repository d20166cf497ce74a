package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/corral-sh/corral/internal/llm"
)

// responsesAPI is the OpenAI Responses API, as the Codex CLI uses it.
type responsesAPI struct{}

type responsesRequest struct {
	Model           string          `json:"model"`
	Instructions    string          `json:"instructions"`
	Input           json.RawMessage `json:"input"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	Tools           []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// responsesItem is an input item: a message, a call or a call's output.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"` // custom_tool_call
	Output    json.RawMessage `json:"output"`
}

func (responsesAPI) parse(body []byte, r *Request) error {
	var rr responsesRequest
	if err := json.Unmarshal(body, &rr); err != nil {
		return fmt.Errorf("responses request: %w", err)
	}
	r.Model, r.Stream, r.MaxTokens = rr.Model, rr.Stream, rr.MaxOutputTokens
	for _, t := range rr.Tools {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		r.Tools = append(r.Tools, name)
	}
	var system []string
	if rr.Instructions != "" {
		system = append(system, rr.Instructions)
	}
	var items []responsesItem
	var s string
	switch {
	case len(rr.Input) == 0 || string(rr.Input) == "null":
	case json.Unmarshal(rr.Input, &s) == nil:
		items = []responsesItem{{Type: "message", Role: "user", Content: rr.Input}}
	default:
		if err := json.Unmarshal(rr.Input, &items); err != nil {
			return fmt.Errorf("input: %w", err)
		}
	}
	add := func(role llm.Role, parts ...llm.Part) {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role && role == llm.RoleAssistant {
			// A message and the calls after it are one assistant turn.
			r.Messages[n-1].Content = append(r.Messages[n-1].Content, parts...)
			return
		}
		if n := len(r.Messages); n > 0 && role == llm.RoleUser && len(parts) == 1 && parts[0].Type == llm.PartToolResult && isToolResults(r.Messages[n-1]) {
			r.Messages[n-1].Content = append(r.Messages[n-1].Content, parts...)
			return
		}
		r.Messages = append(r.Messages, llm.Message{Role: role, Content: parts})
	}
	for _, it := range items {
		if it.Type == "" && it.Role != "" {
			it.Type = "message"
		}
		switch it.Type {
		case "message":
			parts, err := chatContent(it.Content)
			if err != nil {
				return err
			}
			switch it.Role {
			case "system", "developer":
				for _, p := range parts {
					system = append(system, p.Text)
				}
			case "assistant":
				add(llm.RoleAssistant, parts...)
			default:
				r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Content: parts})
			}
		case "function_call":
			add(llm.RoleAssistant, llm.Part{Type: llm.PartToolCall, CallID: it.CallID, Tool: it.Name, Input: llm.ToolInput(it.Arguments)})
		case "custom_tool_call":
			in, _ := json.Marshal(it.Input)
			add(llm.RoleAssistant, llm.Part{Type: llm.PartToolCall, CallID: it.CallID, Tool: it.Name, Input: in})
		case "function_call_output", "custom_tool_call_output":
			res := llm.Part{Type: llm.PartToolResult, CallID: it.CallID}
			var out string
			if json.Unmarshal(it.Output, &out) == nil {
				res.Text = out
			} else if parts, err := chatContent(it.Output); err == nil {
				var text []string
				for _, p := range parts {
					if p.Type == llm.PartImage {
						res.Images = append(res.Images, p)
					} else {
						text = append(text, p.Text)
					}
				}
				res.Text = strings.Join(text, "")
			}
			add(llm.RoleUser, res)
		}
	}
	r.System = strings.Join(system, "\n\n")
	return nil
}

func (responsesAPI) writeError(w http.ResponseWriter, status int, msg string, overflow bool) {
	if overflow {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
			"type":    "invalid_request_error", "param": "input", "code": "context_length_exceeded"}})
		return
	}
	chatAPI{}.writeError(w, status, msg, false)
}

// responseObject is a Response in the API's shape.
func responseObject(id, model, status string, created int64, output []any, usage map[string]any) map[string]any {
	return map[string]any{
		"id": id, "object": "response", "created_at": created, "status": status, "model": model,
		"output": output, "usage": usage, "error": nil, "incomplete_details": nil, "instructions": nil,
		"metadata": map[string]any{}, "parallel_tool_calls": true, "temperature": 1.0, "top_p": 1.0,
		"tool_choice": "auto", "tools": []any{}, "text": map[string]any{"format": map[string]any{"type": "text"}},
		"reasoning": map[string]any{"effort": nil, "summary": nil}, "truncation": "disabled",
		"store": false, "background": false, "previous_response_id": nil, "max_output_tokens": nil,
	}
}

func (responsesAPI) writeTurn(ctx context.Context, w http.ResponseWriter, req Request, t Turn, u Usage) error {
	var rr responsesRequest
	_ = json.Unmarshal(req.Raw, &rr)
	custom := map[string]bool{}
	for _, tool := range rr.Tools {
		if tool.Type == "custom" {
			custom[tool.Name] = true
		}
	}
	id, created := "resp_"+randomID(), time.Now().Unix()
	usage := map[string]any{"input_tokens": u.Input, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": u.Input + u.Output}
	textPart := func(text string) map[string]any {
		return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
	}
	msgItem := func(status string, content []any) map[string]any {
		return map[string]any{"id": "msg_" + id[5:], "type": "message", "status": status, "role": "assistant", "content": content}
	}
	callItem := func(c ToolCall, status, args string) map[string]any {
		if custom[c.Name] {
			return map[string]any{"id": "ctc_" + c.ID, "type": "custom_tool_call", "status": status,
				"call_id": c.ID, "name": c.Name, "input": args}
		}
		return map[string]any{"id": "fc_" + c.ID, "type": "function_call", "status": status,
			"call_id": c.ID, "name": c.Name, "arguments": args}
	}
	calls := make([]ToolCall, len(t.ToolCalls))
	for i, c := range t.ToolCalls {
		if c.ID == "" {
			c.ID = "call_" + randomID()
		}
		calls[i] = c
	}
	var output []any
	if t.Text != "" {
		output = append(output, msgItem("completed", []any{textPart(t.Text)}))
	}
	for _, c := range calls {
		output = append(output, callItem(c, "completed", c.Input))
	}
	status := "completed"
	if t.stop() == llm.StopMaxTokens {
		status = "incomplete"
	}
	final := responseObject(id, req.Model, status, created, append([]any{}, output...), usage)
	if status == "incomplete" {
		final["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, final)
		return nil
	}

	e := startSSE(ctx, w)
	seq := 0
	send := func(typ string, fields map[string]any) error {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return e.send(typ, fields)
	}
	if err := send("response.created", map[string]any{"response": responseObject(id, req.Model, "in_progress", created, []any{}, nil)}); err != nil {
		return err
	}
	if err := send("response.in_progress", map[string]any{"response": responseObject(id, req.Model, "in_progress", created, []any{}, nil)}); err != nil {
		return err
	}
	index := 0
	if t.Text != "" {
		item := msgItem("in_progress", []any{})
		itemID := item["id"]
		if err := send("response.output_item.added", map[string]any{"output_index": index, "item": item}); err != nil {
			return err
		}
		if err := send("response.content_part.added", map[string]any{"item_id": itemID, "output_index": index,
			"content_index": 0, "part": textPart("")}); err != nil {
			return err
		}
		for i, piece := range chunks(t.Text, t.Chunks) {
			if err := send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": index,
				"content_index": 0, "delta": piece, "logprobs": []any{}}); err != nil {
				return err
			}
			if i == 0 && !e.stall(t.Stall) {
				return ctx.Err()
			}
		}
		if err := send("response.output_text.done", map[string]any{"item_id": itemID, "output_index": index,
			"content_index": 0, "text": t.Text, "logprobs": []any{}}); err != nil {
			return err
		}
		if err := send("response.content_part.done", map[string]any{"item_id": itemID, "output_index": index,
			"content_index": 0, "part": textPart(t.Text)}); err != nil {
			return err
		}
		if err := send("response.output_item.done", map[string]any{"output_index": index, "item": output[0]}); err != nil {
			return err
		}
		index++
	}
	for _, c := range calls {
		item := callItem(c, "in_progress", "")
		itemID := item["id"]
		if err := send("response.output_item.added", map[string]any{"output_index": index, "item": item}); err != nil {
			return err
		}
		event, field := "response.function_call_arguments", "arguments"
		if custom[c.Name] {
			event, field = "response.custom_tool_call_input", "input"
		}
		for _, piece := range chunks(c.Input, 2) {
			if err := send(event+".delta", map[string]any{"item_id": itemID, "output_index": index, "delta": piece}); err != nil {
				return err
			}
		}
		if err := send(event+".done", map[string]any{"item_id": itemID, "output_index": index, field: c.Input}); err != nil {
			return err
		}
		if err := send("response.output_item.done", map[string]any{"output_index": index, "item": callItem(c, "completed", c.Input)}); err != nil {
			return err
		}
		index++
	}
	done := "response.completed"
	if status == "incomplete" {
		done = "response.incomplete"
	}
	return send(done, map[string]any{"response": final})
}
