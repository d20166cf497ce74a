// Package llm is Corral's provider-neutral view of a chat model with tool
// calling: a conversation of messages made of parts (text, images, tool
// calls and their results), the tools the model may call, and one
// completion at a time, streamed.
//
// Providers (internal/llm/openai, internal/llm/anthropic) translate this
// view to and from their official SDKs; the agent loop (internal/agent)
// only ever sees these types. Nothing here holds a key: keys live in the
// provider values and never appear in a Request, a Response or an error.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Role says who wrote a message.
type Role string

// Roles. System text is not a message: it is Request.System.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// PartType is the kind of a message part.
type PartType string

// Part types.
const (
	PartText       PartType = "text"        // Text
	PartImage      PartType = "image"       // MediaType + Data
	PartToolCall   PartType = "tool_call"   // CallID, Tool, Input (assistant messages)
	PartToolResult PartType = "tool_result" // CallID, Text, IsError, Images (user messages)
)

// Part is one piece of a message. Which fields are set depends on Type.
type Part struct {
	Type PartType `json:"type"`
	Text string   `json:"text,omitempty"`

	// Image.
	MediaType string `json:"media_type,omitempty"` // "image/png"
	Data      []byte `json:"data,omitempty"`       // raw bytes (base64 in JSON)

	// Tool call and tool result.
	CallID  string          `json:"call_id,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"` // a JSON object
	IsError bool            `json:"is_error,omitempty"`
	// Images attached to a tool result (a screenshot); providers that
	// cannot carry images in a tool result add them as a user message.
	Images []Part `json:"images,omitempty"`
}

// Text returns a text part.
func Text(s string) Part { return Part{Type: PartText, Text: s} }

// Message is one turn of the conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content []Part `json:"content"`
}

// UserText returns a user message holding s.
func UserText(s string) Message { return Message{Role: RoleUser, Content: []Part{Text(s)}} }

// TextOf joins the text parts of m.
func (m Message) TextOf() string {
	var b strings.Builder
	for _, p := range m.Content {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the tool-call parts of m, in order.
func (m Message) ToolCalls() []Part {
	var out []Part
	for _, p := range m.Content {
		if p.Type == PartToolCall {
			out = append(out, p)
		}
	}
	return out
}

// Tool is a function the model may call. Schema is a JSON Schema object
// for its input.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// Request is one completion.
type Request struct {
	// Model is the provider's own model name ("gpt-4o", "claude-sonnet-4-5"),
	// without Corral's "openai/" prefix.
	Model     string    `json:"model"`
	System    string    `json:"system,omitempty"`
	Messages  []Message `json:"messages"`
	Tools     []Tool    `json:"tools,omitempty"`
	MaxTokens int       `json:"max_tokens,omitempty"` // 0: the provider's default
}

// Usage is what one completion cost, in tokens.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens,
		u.CacheReadTokens + v.CacheReadTokens, u.CacheWriteTokens + v.CacheWriteTokens}
}

// Total is every token of the call: input, output and cache reads and
// writes (providers report InputTokens without the cached ones).
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// Stop reasons, normalised across providers.
const (
	StopEnd       = "end"        // the model finished its turn
	StopToolCalls = "tool_calls" // the model wants tool results
	StopMaxTokens = "max_tokens" // cut by the output limit
	StopOther     = "other"
)

// Response is a finished completion: the assistant message (text and tool
// calls, in the order the model produced them), usage and why it stopped.
type Response struct {
	Message    Message `json:"message"`
	Usage      Usage   `json:"usage"`
	StopReason string  `json:"stop_reason"`
	Model      string  `json:"model,omitempty"` // as the provider reported it
}

// Delta is a piece of a streamed completion, for live display. The
// Response is still the whole truth.
type Delta struct {
	Text string // assistant text as it arrives
}

// Provider is one model API.
type Provider interface {
	// Name is the provider's prefix in a Corral model string: "openai",
	// "anthropic".
	Name() string
	// Complete runs one streamed completion. onDelta, if not nil, sees
	// text as it arrives. Retries on 429 and 5xx with backoff and a
	// timeout per attempt are the provider's business; the error returned
	// after the last attempt is an *Error.
	Complete(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error)
}

// Error is a failed completion, safe to show (no keys, no request body).
type Error struct {
	Provider string
	Status   int    // HTTP status, 0 if the request never got an answer
	Message  string // the provider's message, shortened
	// Retryable reports whether another attempt later could succeed
	// (429, 5xx, timeouts, connection errors).
	Retryable bool
	Err       error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("llm: %s: status %d: %s", e.Provider, e.Status, e.Message)
	}
	return fmt.Sprintf("llm: %s: %s", e.Provider, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrContextWindow is matched (errors.Is) by errors saying the request
// did not fit the model's context window, so the caller can condense and
// try again.
var ErrContextWindow = errors.New("llm: the request is over the model's context window")

// SplitModel splits Corral's "provider/name" model string.
func SplitModel(model string) (provider, name string, err error) {
	provider, name, ok := strings.Cut(model, "/")
	if !ok || provider == "" || name == "" {
		return "", "", fmt.Errorf("llm: model %q is not provider/name", model)
	}
	return provider, name, nil
}
