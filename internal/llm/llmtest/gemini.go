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

// geminiAPI is Google's Gemini API (generativelanguage v1beta), as the
// Gemini CLI uses it.
type geminiAPI struct{ stream bool }

type geminiPart struct {
	Text       string `json:"text,omitempty"`
	Thought    bool   `json:"thought,omitempty"`
	InlineData *struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData,omitempty"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type geminiRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []geminiPart `json:"parts"`
	} `json:"systemInstruction"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

func (g geminiAPI) parse(body []byte, r *Request) error {
	var gr geminiRequest
	if err := json.Unmarshal(body, &gr); err != nil {
		return fmt.Errorf("gemini request: %w", err)
	}
	r.Stream = g.stream
	r.MaxTokens = gr.GenerationConfig.MaxOutputTokens
	for _, t := range gr.Tools {
		for _, f := range t.FunctionDeclarations {
			r.Tools = append(r.Tools, f.Name)
		}
	}
	if gr.SystemInstruction != nil {
		var system []string
		for _, p := range gr.SystemInstruction.Parts {
			system = append(system, p.Text)
		}
		r.System = strings.Join(system, "\n\n")
	}
	for _, c := range gr.Contents {
		msg := llm.Message{Role: llm.RoleUser}
		if c.Role == "model" {
			msg.Role = llm.RoleAssistant
		}
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				if id == "" {
					id = p.FunctionCall.Name
				}
				in := llm.ToolInput(string(p.FunctionCall.Args))
				msg.Content = append(msg.Content, llm.Part{Type: llm.PartToolCall, CallID: id, Tool: p.FunctionCall.Name, Input: in})
			case p.FunctionResponse != nil:
				id := p.FunctionResponse.ID
				if id == "" {
					id = p.FunctionResponse.Name
				}
				res := llm.Part{Type: llm.PartToolResult, CallID: id, Tool: p.FunctionResponse.Name}
				res.Text, res.IsError = geminiResult(p.FunctionResponse.Response)
				msg.Content = append(msg.Content, res)
			case p.InlineData != nil:
				data, _ := base64.StdEncoding.DecodeString(p.InlineData.Data)
				msg.Content = append(msg.Content, llm.Part{Type: llm.PartImage, MediaType: p.InlineData.MimeType, Data: data})
			case p.Thought:
			default:
				msg.Content = append(msg.Content, llm.Text(p.Text))
			}
		}
		r.Messages = append(r.Messages, msg)
	}
	return nil
}

// geminiResult reads a functionResponse's response: {"output": text} or
// {"error": text} as the Gemini CLI sends them, other objects as JSON.
func geminiResult(raw json.RawMessage) (string, bool) {
	var r struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	if json.Unmarshal(raw, &r) == nil {
		switch {
		case r.Error != nil:
			return *r.Error, true
		case r.Output != nil:
			return *r.Output, false
		}
	}
	return string(raw), false
}

var geminiStatus = map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
	404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}

func (geminiAPI) writeError(w http.ResponseWriter, status int, msg string, overflow bool) {
	if overflow {
		msg = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	st := geminiStatus[status]
	if st == "" {
		st = "UNKNOWN"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}})
}

func (g geminiAPI) writeTurn(ctx context.Context, w http.ResponseWriter, req Request, t Turn, u Usage) error {
	finish := "STOP"
	if t.stop() == llm.StopMaxTokens {
		finish = "MAX_TOKENS"
	}
	var calls []any
	for _, c := range t.ToolCalls {
		var args map[string]any
		if json.Unmarshal([]byte(c.Input), &args) != nil {
			// Gemini reports a call it could not form instead of sending it.
			finish = "MALFORMED_FUNCTION_CALL"
			continue
		}
		fc := map[string]any{"name": c.Name, "args": args}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		calls = append(calls, map[string]any{"functionCall": fc})
	}
	usage := map[string]any{"promptTokenCount": u.Input, "candidatesTokenCount": u.Output, "totalTokenCount": u.Input + u.Output}
	chunk := func(parts []any, last bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		c := map[string]any{"candidates": []any{cand}, "modelVersion": req.Model, "responseId": randomID()}
		if last {
			cand["finishReason"] = finish
			c["usageMetadata"] = usage
		}
		return c
	}
	if !g.stream {
		var parts []any
		if t.Text != "" {
			parts = append(parts, map[string]any{"text": t.Text})
		}
		writeJSON(w, http.StatusOK, chunk(append(parts, calls...), true))
		return nil
	}
	e := startSSE(ctx, w)
	pieces := chunks(t.Text, t.Chunks)
	if t.Text == "" {
		pieces = nil
	}
	for i, piece := range pieces {
		last := i == len(pieces)-1 && len(calls) == 0
		if err := e.send("", chunk([]any{map[string]any{"text": piece}}, last)); err != nil {
			return err
		}
		if i == 0 && !e.stall(t.Stall) {
			return ctx.Err()
		}
	}
	if len(calls) > 0 || len(pieces) == 0 {
		if calls == nil {
			calls = []any{}
		}
		return e.send("", chunk(calls, true))
	}
	return nil
}
