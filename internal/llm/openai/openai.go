// Package openai is the llm.Provider for OpenAI-compatible Chat
// Completions endpoints (OpenAI, vLLM, Ollama, llama.cpp server,
// OpenRouter...), over the official SDK github.com/openai/openai-go/v3.
//
// Every completion is streamed (with stream_options.include_usage) and
// accumulated; tools are function tools; tool results go back as
// role=tool messages (an error result's text prefixed with "Error: ",
// since the role has no error flag), and the images of a tool result,
// which that role cannot carry, as a user message right after them
// ("Images from tool call <id>:" and the images). Usage.InputTokens
// excludes cached prompt tokens, which are in CacheReadTokens.
// Arguments that are not JSON are kept as described in llm.ToolInput and
// sent back verbatim. Retries and the
// per-attempt timeout are llm.RetryPolicy's; the SDK's own retries are
// off. The provider never reads the environment: its key and base URL
// are what New is given (internal/llm/registry reads the variables).
package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/corral-sh/corral/internal/llm"
)

// Name is the provider's prefix in Corral model strings.
const Name = "openai"

// DefaultBaseURL is OpenAI's own API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configures a Provider.
type Options struct {
	// BaseURL is the API root including /v1 (OPENAI_BASE_URL); ""
	// means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; "" sends no Authorization header
	// (local servers need none).
	APIKey string
	// Retry is the retry policy; its zero value is the default.
	Retry llm.RetryPolicy
	// HTTPClient, if set, replaces the default client.
	HTTPClient *http.Client
}

// Provider is an OpenAI-compatible Chat Completions API.
type Provider struct {
	chat     openai.ChatCompletionService
	key      string
	official bool
	retry    llm.RetryPolicy
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
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	u, _ := url.Parse(base)
	return &Provider{
		// The service, not openai.NewClient: the client would pick up
		// OPENAI_* variables behind the caller's back.
		chat:     openai.NewChatCompletionService(opts...),
		key:      o.APIKey,
		official: u != nil && u.Hostname() == "api.openai.com",
		retry:    o.Retry,
	}
}

// Name returns "openai".
func (p *Provider) Name() string { return Name }

// Complete runs one streamed chat completion, with retries.
func (p *Provider) Complete(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	params, err := p.params(req)
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

// toolCall accumulates one streamed tool call.
type toolCall struct {
	id, name string
	args     strings.Builder
}

// attempt is one streamed request. streamed reports whether onDelta saw
// any text.
func (p *Provider) attempt(ctx context.Context, params openai.ChatCompletionNewParams, onDelta func(llm.Delta)) (resp *llm.Response, streamed bool, err error) {
	stream := p.chat.NewStreaming(ctx, params)
	defer stream.Close()

	var (
		text   strings.Builder
		calls  []*toolCall
		byIdx  = map[int64]*toolCall{}
		finish string
		model  string
		usage  llm.Usage
	)
	for stream.Next() {
		ch := stream.Current()
		if ch.Model != "" {
			model = ch.Model
		}
		if ch.JSON.Usage.Valid() && ch.Usage.TotalTokens+ch.Usage.PromptTokens > 0 {
			cached := ch.Usage.PromptTokensDetails.CachedTokens
			usage = llm.Usage{
				InputTokens:      ch.Usage.PromptTokens - cached,
				OutputTokens:     ch.Usage.CompletionTokens,
				CacheReadTokens:  cached,
				CacheWriteTokens: ch.Usage.PromptTokensDetails.CacheWriteTokens,
			}
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			if d := c.Delta.Content; d != "" {
				text.WriteString(d)
				if onDelta != nil {
					onDelta(llm.Delta{Text: d})
					streamed = true
				}
			}
			for _, tc := range c.Delta.ToolCalls {
				cur := byIdx[tc.Index]
				// Some servers send each whole call at index 0: a new id
				// at a taken index starts a new call.
				if cur == nil || (tc.ID != "" && cur.id != "" && tc.ID != cur.id) {
					cur = &toolCall{}
					byIdx[tc.Index] = cur
					calls = append(calls, cur)
				}
				if tc.ID != "" {
					cur.id = tc.ID
				}
				if tc.Function.Name != "" {
					cur.name = tc.Function.Name
				}
				cur.args.WriteString(tc.Function.Arguments)
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, streamed, err
	}
	if finish == "" {
		// Every server we know ends a choice with a finish_reason; without
		// one the stream was cut and the answer may be partial.
		return nil, streamed, errors.New("the stream ended without a finish_reason")
	}

	msg := llm.Message{Role: llm.RoleAssistant}
	if text.Len() > 0 {
		msg.Content = append(msg.Content, llm.Text(text.String()))
	}
	for i, c := range calls {
		id := c.id
		if id == "" { // llama.cpp and friends may omit it
			id = fmt.Sprintf("call_%d", i)
		}
		msg.Content = append(msg.Content, llm.Part{
			Type: llm.PartToolCall, CallID: id, Tool: c.name,
			Input: llm.ToolInput(c.args.String()),
		})
	}
	if model == "" {
		model = string(params.Model)
	}
	return &llm.Response{Message: msg, Usage: usage, StopReason: stopReason(finish, len(calls) > 0), Model: model}, streamed, nil
}

// stopReason normalises a finish_reason. A server that says "stop" after
// tool calls (some local ones do) still wants tool results.
func stopReason(finish string, calls bool) string {
	switch {
	case finish == "tool_calls" || finish == "function_call" || (calls && finish == "stop"):
		return llm.StopToolCalls
	case finish == "stop":
		return llm.StopEnd
	case finish == "length":
		return llm.StopMaxTokens
	}
	return llm.StopOther
}

// convertError turns an attempt's error into an *llm.Error (no key, no
// request body) and the wait the server asked for.
func (p *Provider) convertError(ctx context.Context, err error) (*llm.Error, time.Duration) {
	var apiErr *openai.Error
	var streamErr *ssestream.StreamError
	switch {
	case errors.As(err, &apiErr):
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		msg = llm.Shorten(msg, p.key)
		var after time.Duration
		if apiErr.Response != nil {
			after = llm.RetryAfter(apiErr.Response.Header)
		}
		if apiErr.Code == "context_length_exceeded" || (!llm.RetryableStatus(apiErr.StatusCode) && llm.IsContextWindowMessage(msg)) {
			return llm.ContextWindowError(Name, apiErr.StatusCode, msg), 0
		}
		retry := llm.RetryableStatus(apiErr.StatusCode)
		if apiErr.Response != nil && apiErr.Response.Header.Get("X-Should-Retry") == "false" {
			retry = false
		}
		return &llm.Error{Provider: Name, Status: apiErr.StatusCode, Message: msg,
			Retryable: retry, Err: errors.New(msg)}, after
	case errors.As(err, &streamErr):
		// An error event in the stream: {"error": {"message", "code", ...}}.
		var body struct {
			Error struct {
				Message string `json:"message"`
				Code    any    `json:"code"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		_ = json.Unmarshal(streamErr.Event.Data, &body)
		msg := llm.Shorten(body.Error.Message, p.key)
		if msg == "" {
			msg = "error event in the stream"
		}
		code := fmt.Sprint(body.Error.Code)
		if code == "context_length_exceeded" || llm.IsContextWindowMessage(msg) {
			return llm.ContextWindowError(Name, 0, msg), 0
		}
		retry := body.Error.Type != "invalid_request_error"
		return &llm.Error{Provider: Name, Message: msg, Retryable: retry, Err: errors.New(msg)}, 0
	case ctx.Err() != nil:
		// The attempt's own deadline (RetryPolicy.Timeout); the caller's
		// context is checked by RetryPolicy.Do.
		return &llm.Error{Provider: Name, Message: "attempt timed out", Retryable: true, Err: context.DeadlineExceeded}, 0
	}
	// Connection errors, a cut stream, garbage from a proxy.
	msg := llm.Shorten(err.Error(), p.key)
	return &llm.Error{Provider: Name, Message: msg, Retryable: true, Err: errors.New(msg)}, 0
}

// params translates req to the SDK's request.
func (p *Provider) params(req llm.Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		// OpenAI's reasoning models refuse max_tokens; many local
		// servers only know it.
		if p.official {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		msgs, err := messages(m)
		if err != nil {
			return params, err
		}
		params.Messages = append(params.Messages, msgs...)
	}
	for _, t := range req.Tools {
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(t.Schema) > 0 {
			schema = nil
			if err := json.Unmarshal(t.Schema, &schema); err != nil {
				return params, fmt.Errorf("tool %q: schema: %w", t.Name, err)
			}
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	return params, nil
}

// messages translates one llm.Message; a user message with tool results
// becomes several wire messages.
func messages(m llm.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case llm.RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if t := m.TextOf(); t != "" {
			a.Content.OfString = openai.String(t)
		}
		for _, c := range m.ToolCalls() {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: c.CallID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name: c.Tool, Arguments: llm.ToolArguments(c),
					},
				},
			})
		}
		if !a.Content.OfString.Valid() && len(a.ToolCalls) == 0 {
			return nil, nil
		}
		return []openai.ChatCompletionMessageParamUnion{{OfAssistant: &a}}, nil
	case llm.RoleUser:
	default:
		return nil, fmt.Errorf("message role %q is not user or assistant", m.Role)
	}

	var out []openai.ChatCompletionMessageParamUnion
	var parts []openai.ChatCompletionContentPartUnionParam
	images := false
	for _, p := range m.Content {
		switch p.Type {
		case llm.PartToolResult:
			text := p.Text
			if p.IsError {
				text = "Error: " + text
			}
			out = append(out, openai.ToolMessage(text, p.CallID))
			if len(p.Images) > 0 {
				parts = append(parts, openai.TextContentPart(fmt.Sprintf("Images from tool call %s:", p.CallID)))
				for _, img := range p.Images {
					parts = append(parts, imagePart(img))
				}
				images = true
			}
		case llm.PartText:
			parts = append(parts, openai.TextContentPart(p.Text))
		case llm.PartImage:
			parts = append(parts, imagePart(p))
			images = true
		case llm.PartToolCall:
			return nil, fmt.Errorf("a tool call in a user message")
		}
	}
	switch {
	case len(parts) == 0:
	case !images:
		// Plain text as a string: the form every server understands.
		var b strings.Builder
		for i, p := range parts {
			if i > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(p.OfText.Text)
		}
		out = append(out, openai.UserMessage(b.String()))
	default:
		out = append(out, openai.UserMessage(parts))
	}
	return out, nil
}

func imagePart(p llm.Part) openai.ChatCompletionContentPartUnionParam {
	return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
		URL: "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data),
	})
}
