// Package anthropic is the llm.Provider for Anthropic's Messages API, over
// the official SDK github.com/anthropics/anthropic-sdk-go.
//
// Every completion is streamed and accumulated from the events
// (text_delta, input_json_delta); tool calls are tool_use blocks, tool
// results tool_result blocks (text and images, is_error). The API wants
// alternating roles, so consecutive messages of one role are merged, with
// tool results first in a user message. Usage maps one to one
// (input_tokens excludes cache reads and writes, as in llm.Usage). Tool
// input that is not JSON is kept as described in llm.ToolInput; sent
// back to the API it becomes {}, the only shape tool_use takes, and the
// tool result says what was wrong. Retries and the per-attempt
// timeout are llm.RetryPolicy's; the SDK's own retries are off. The
// provider never reads the environment (nor the SDK's profile files): its
// key and base URL are what New is given.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/corral-sh/corral/internal/llm"
)

// Name is the provider's prefix in Corral model strings.
const Name = "anthropic"

// DefaultBaseURL is Anthropic's own API (without /v1).
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is the output limit sent when the request sets none;
// the API requires one.
const DefaultMaxTokens = 8192

// Options configures a Provider.
type Options struct {
	// BaseURL is the API root without /v1 (ANTHROPIC_BASE_URL); ""
	// means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key; "" sends no key (a local proxy).
	APIKey string
	// Retry is the retry policy; its zero value is the default.
	Retry llm.RetryPolicy
	// HTTPClient, if set, replaces the default client.
	HTTPClient *http.Client
}

// Provider is Anthropic's Messages API.
type Provider struct {
	client anthropic.Client
	key    string
	retry  llm.RetryPolicy
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider for o. It makes no request.
func New(o Options) *Provider {
	base := o.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	return &Provider{client: anthropic.NewClient(opts...), key: o.APIKey, retry: o.Retry}
}

// Name returns "anthropic".
func (p *Provider) Name() string { return Name }

// Complete runs one streamed message, with retries.
func (p *Provider) Complete(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	params, err := newParams(req)
	if err != nil {
		return nil, &llm.Error{Provider: Name, Message: err.Error(), Err: err}
	}
	var resp *llm.Response
	err = p.retry.Do(ctx, Name, func(ctx context.Context) (bool, time.Duration, error) {
		r, streamed, err := p.attempt(ctx, params, onDelta)
		if err == nil {
			resp = r
			return false, 0, nil
		}
		e, after := p.convertError(ctx, err)
		// Once text reached onDelta, a retry would show it twice.
		return e.Retryable && !streamed, after, e
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// block accumulates one streamed content block.
type block struct {
	typ      string // text, tool_use, or another type we skip
	text     strings.Builder
	id, name string
	json     strings.Builder
}

func (p *Provider) attempt(ctx context.Context, params anthropic.MessageNewParams, onDelta func(llm.Delta)) (resp *llm.Response, streamed bool, err error) {
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	var (
		blocks  []*block
		byIndex = map[int64]*block{}
		stop    string
		model   string
		usage   llm.Usage
		stopped bool
	)
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			model = string(ev.Message.Model)
			u := ev.Message.Usage
			usage = llm.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
		case "content_block_start":
			b := &block{typ: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			b.text.WriteString(ev.ContentBlock.Text)
			byIndex[ev.Index] = b
			blocks = append(blocks, b)
		case "content_block_delta":
			b := byIndex[ev.Index]
			if b == nil {
				continue
			}
			switch ev.Delta.Type {
			case "text_delta":
				b.text.WriteString(ev.Delta.Text)
				if onDelta != nil && ev.Delta.Text != "" {
					onDelta(llm.Delta{Text: ev.Delta.Text})
					streamed = true
				}
			case "input_json_delta":
				b.json.WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				stop = string(ev.Delta.StopReason)
			}
			// Counts in message_delta are cumulative.
			u := ev.Usage
			if u.OutputTokens > 0 {
				usage.OutputTokens = u.OutputTokens
			}
			if u.InputTokens > 0 {
				usage.InputTokens = u.InputTokens
			}
			if u.CacheReadInputTokens > 0 {
				usage.CacheReadTokens = u.CacheReadInputTokens
			}
			if u.CacheCreationInputTokens > 0 {
				usage.CacheWriteTokens = u.CacheCreationInputTokens
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, streamed, err
	}
	if !stopped {
		return nil, streamed, errors.New("the stream ended before message_stop")
	}

	msg := llm.Message{Role: llm.RoleAssistant}
	calls := false
	for _, b := range blocks {
		switch b.typ {
		case "text":
			if b.text.Len() > 0 {
				msg.Content = append(msg.Content, llm.Text(b.text.String()))
			}
		case "tool_use":
			calls = true
			msg.Content = append(msg.Content, llm.Part{Type: llm.PartToolCall, CallID: b.id, Tool: b.name,
				Input: llm.ToolInput(b.json.String())})
		}
	}
	return &llm.Response{Message: msg, Usage: usage, StopReason: stopReason(stop, calls), Model: model}, streamed, nil
}

func stopReason(stop string, calls bool) string {
	switch stop {
	case "tool_use":
		return llm.StopToolCalls
	case "end_turn", "stop_sequence", "":
		if calls {
			return llm.StopToolCalls
		}
		return llm.StopEnd
	case "max_tokens", "model_context_window_exceeded":
		return llm.StopMaxTokens
	}
	return llm.StopOther
}

// errorStatus is the HTTP status of each error type, for errors that
// arrive as an event in a stream that began with 200.
var errorStatus = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
	"not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
	"api_error": 500, "timeout_error": 504, "overloaded_error": 529,
}

// convertError turns an attempt's error into an *llm.Error (no key, no
// request body) and the wait the server asked for.
func (p *Provider) convertError(ctx context.Context, err error) (*llm.Error, time.Duration) {
	var apiErr *anthropic.Error
	switch {
	case errors.As(err, &apiErr):
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
		status := apiErr.StatusCode
		if s, ok := errorStatus[body.Error.Type]; ok && (status < 400 || status == 0) {
			status = s // an error event after a 200
		}
		msg := body.Error.Message
		if msg == "" {
			msg = http.StatusText(status)
		}
		msg = llm.Shorten(msg, p.key)
		var after time.Duration
		if apiErr.Response != nil && apiErr.StatusCode >= 400 {
			after = llm.RetryAfter(apiErr.Response.Header)
		}
		if status == http.StatusRequestEntityTooLarge || (!llm.RetryableStatus(status) && llm.IsContextWindowMessage(msg)) {
			return llm.ContextWindowError(Name, status, msg), 0
		}
		retry := llm.RetryableStatus(status)
		if apiErr.Response != nil && apiErr.Response.Header.Get("X-Should-Retry") == "false" {
			retry = false
		}
		return &llm.Error{Provider: Name, Status: status, Message: msg,
			Retryable: retry, Err: errors.New(msg)}, after
	case ctx.Err() != nil:
		// The attempt's own deadline (RetryPolicy.Timeout); the caller's
		// context is checked by RetryPolicy.Do.
		return &llm.Error{Provider: Name, Message: "attempt timed out", Retryable: true, Err: context.DeadlineExceeded}, 0
	}
	msg := llm.Shorten(err.Error(), p.key)
	return &llm.Error{Provider: Name, Message: msg, Retryable: true, Err: errors.New(msg)}, 0
}

// newParams translates req to the SDK's request.
func newParams(req llm.Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: DefaultMaxTokens,
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = int64(req.MaxTokens)
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, m := range req.Messages {
		mp, err := message(m)
		if err != nil {
			return params, err
		}
		if len(mp.Content) == 0 {
			continue
		}
		// The API wants user and assistant to alternate.
		if n := len(params.Messages); n > 0 && params.Messages[n-1].Role == mp.Role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, mp.Content...)
			continue
		}
		params.Messages = append(params.Messages, mp)
	}
	for i := range params.Messages {
		if params.Messages[i].Role == anthropic.MessageParamRoleUser {
			// Tool results come first in a user message.
			c := params.Messages[i].Content
			sort.SliceStable(c, func(a, b int) bool { return c[a].OfToolResult != nil && c[b].OfToolResult == nil })
		}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Schema)
		if err != nil {
			return params, fmt.Errorf("tool %q: schema: %w", t.Name, err)
		}
		tp := anthropic.ToolUnionParamOfTool(schema, t.Name)
		if t.Description != "" {
			tp.OfTool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, tp)
	}
	return params, nil
}

func inputSchema(raw json.RawMessage) (anthropic.ToolInputSchemaParam, error) {
	var s anthropic.ToolInputSchemaParam
	if len(raw) == 0 {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, err
	}
	s.Properties = m["properties"]
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	delete(m, "properties")
	delete(m, "required")
	delete(m, "type")
	if len(m) > 0 {
		s.ExtraFields = m
	}
	return s, nil
}

// message translates one llm.Message. Empty text is dropped (the API
// rejects empty text blocks).
func message(m llm.Message) (anthropic.MessageParam, error) {
	var blocks []anthropic.ContentBlockParamUnion
	for _, p := range m.Content {
		switch p.Type {
		case llm.PartText:
			if strings.TrimSpace(p.Text) != "" {
				blocks = append(blocks, anthropic.NewTextBlock(p.Text))
			}
		case llm.PartImage:
			blocks = append(blocks, imageBlock(p))
		case llm.PartToolCall:
			// A malformed call (see llm.ToolInput) goes back as {}: the
			// API only takes objects, and the tool result already says
			// what was wrong.
			var input any = json.RawMessage(p.Input)
			if _, bad := llm.MalformedInput(p); bad || len(p.Input) == 0 {
				input = map[string]any{}
			}
			blocks = append(blocks, anthropic.NewToolUseBlock(p.CallID, input, p.Tool))
		case llm.PartToolResult:
			blocks = append(blocks, toolResult(p))
		}
	}
	switch m.Role {
	case llm.RoleUser:
		return anthropic.NewUserMessage(blocks...), nil
	case llm.RoleAssistant:
		return anthropic.NewAssistantMessage(blocks...), nil
	}
	return anthropic.MessageParam{}, fmt.Errorf("message role %q is not user or assistant", m.Role)
}

func toolResult(p llm.Part) anthropic.ContentBlockParamUnion {
	r := anthropic.ToolResultBlockParam{ToolUseID: p.CallID}
	if p.IsError {
		r.IsError = anthropic.Bool(true)
	}
	text := p.Text
	if text == "" && p.IsError {
		text = "error" // an error result may not be empty
	}
	if text != "" {
		r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: text}})
	}
	for _, img := range p.Images {
		r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: imageBlock(img).OfImage})
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &r}
}

func imageBlock(p llm.Part) anthropic.ContentBlockParamUnion {
	return anthropic.NewImageBlockBase64(p.MediaType, base64.StdEncoding.EncodeToString(p.Data))
}
