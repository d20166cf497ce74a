package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/llm"
)

// Factory builds the provider under test for a server. It must point the
// provider at s (with the base URL that provider wants), send key, and
// use retry as its retry policy.
type Factory func(s *Server, key string, retry llm.RetryPolicy) llm.Provider

// ProviderSuite is the behaviour every llm.Provider shares, run against
// a scripted server: streamed text and deltas, several tool calls in one
// turn, a conversation shown back to the model, retries, errors that
// keep the key out, malformed tool arguments, cancellation. Wire details
// that differ between APIs (how tool results and images travel) are the
// provider's own tests.
func ProviderSuite(t *testing.T, name string, factory Factory) {
	fast := llm.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	const key = "sk-llmtest-SECRET-0123456789"
	complete := func(t *testing.T, p llm.Provider, req llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return p.Complete(ctx, req, onDelta)
	}
	hello := llm.Request{Model: "test-model", System: "You are terse.", Messages: []llm.Message{llm.UserText("Say hello")}}

	t.Run("StreamsText", func(t *testing.T) {
		s := New(t, Turn{Text: "Hello there, world!", Chunks: 3, Usage: Usage{Input: 17, Output: 5}})
		p := factory(s, key, fast)
		if got := p.Name(); got != name {
			t.Errorf("Name() = %q, want %q", got, name)
		}
		var deltas []string
		resp, err := complete(t, p, hello, func(d llm.Delta) { deltas = append(deltas, d.Text) })
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if got := resp.Message.TextOf(); got != "Hello there, world!" {
			t.Errorf("text = %q, want %q", got, "Hello there, world!")
		}
		if len(deltas) != 3 || strings.Join(deltas, "") != "Hello there, world!" {
			t.Errorf("deltas = %q, want 3 pieces of the text", deltas)
		}
		if resp.Message.Role != llm.RoleAssistant || resp.StopReason != llm.StopEnd {
			t.Errorf("role, stop = %q, %q; want assistant, %q", resp.Message.Role, resp.StopReason, llm.StopEnd)
		}
		if resp.Usage.InputTokens+resp.Usage.CacheReadTokens != 17 || resp.Usage.OutputTokens != 5 {
			t.Errorf("usage = %+v, want 17 in, 5 out", resp.Usage)
		}
		if resp.Model != "test-model" {
			t.Errorf("model = %q, want test-model", resp.Model)
		}
		reqs := s.Completions()
		if len(reqs) != 1 {
			t.Fatalf("server saw %d completions, want 1", len(reqs))
		}
		r := reqs[0]
		if !r.Stream || r.Model != "test-model" || r.System != "You are terse." {
			t.Errorf("request stream, model, system = %v, %q, %q", r.Stream, r.Model, r.System)
		}
		if len(r.Messages) != 1 || r.Messages[0].TextOf() != "Say hello" {
			t.Errorf("messages = %+v, want the one user message", r.Messages)
		}
		if !headerHas(r.Header, key) {
			t.Errorf("the key is in no request header: %v", r.Header)
		}
	})

	t.Run("ToolCalls", func(t *testing.T) {
		s := New(t, Turn{Text: "Let me look.", ToolCalls: []ToolCall{
			Call("bash", map[string]string{"command": "ls -la"}),
			{ID: "call_2", Name: "editor", Input: `{"command":"view","path":"/tmp/a.go"}`},
		}})
		p := factory(s, key, fast)
		req := hello
		req.Tools = []llm.Tool{
			{Name: "bash", Description: "Run a command", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
			{Name: "editor", Description: "Edit files", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"path":{"type":"string"}}}`)},
		}
		resp, err := complete(t, p, req, nil)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		calls := resp.Message.ToolCalls()
		if len(calls) != 2 {
			t.Fatalf("tool calls = %+v, want 2", resp.Message.Content)
		}
		if calls[0].Tool != "bash" || !jsonEqual(calls[0].Input, `{"command":"ls -la"}`) || calls[0].CallID == "" {
			t.Errorf("call 0 = %+v", calls[0])
		}
		if calls[1].Tool != "editor" || calls[1].CallID != "call_2" || !jsonEqual(calls[1].Input, `{"command":"view","path":"/tmp/a.go"}`) {
			t.Errorf("call 1 = %+v", calls[1])
		}
		if resp.Message.TextOf() != "Let me look." || resp.StopReason != llm.StopToolCalls {
			t.Errorf("text, stop = %q, %q", resp.Message.TextOf(), resp.StopReason)
		}
		if got := s.Completions()[0].Tools; strings.Join(got, ",") != "bash,editor" {
			t.Errorf("server saw tools %q, want bash,editor", got)
		}
	})

	t.Run("ConversationRoundTrip", func(t *testing.T) {
		s := New(t, Turn{Text: "Done."})
		p := factory(s, key, fast)
		req := hello
		req.Messages = []llm.Message{
			llm.UserText("List files"),
			{Role: llm.RoleAssistant, Content: []llm.Part{llm.Text("Listing."),
				{Type: llm.PartToolCall, CallID: "c1", Tool: "bash", Input: json.RawMessage(`{"command":"ls"}`)},
				{Type: llm.PartToolCall, CallID: "c2", Tool: "bash", Input: json.RawMessage(`{"command":"pwd"}`)}}},
			{Role: llm.RoleUser, Content: []llm.Part{
				{Type: llm.PartToolResult, CallID: "c1", Text: "a.go\nb.go"},
				{Type: llm.PartToolResult, CallID: "c2", Text: "/work"}}},
			llm.UserText("Now stop."),
		}
		if _, err := complete(t, p, req, nil); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		r := s.Completions()[0]
		var calls, results []llm.Part
		var texts []string
		for _, m := range r.Messages {
			for _, part := range m.Content {
				switch part.Type {
				case llm.PartToolCall:
					calls = append(calls, part)
				case llm.PartToolResult:
					results = append(results, part)
				case llm.PartText:
					texts = append(texts, string(m.Role)+":"+part.Text)
				}
			}
		}
		if len(calls) != 2 || calls[0].CallID != "c1" || calls[1].Tool != "bash" || !jsonEqual(calls[1].Input, `{"command":"pwd"}`) {
			t.Errorf("server saw calls %+v", calls)
		}
		if len(results) != 2 || results[0].CallID != "c1" || results[0].Text != "a.go\nb.go" || results[1].Tool != "bash" || results[1].Text != "/work" {
			t.Errorf("server saw results %+v", results)
		}
		if strings.Join(texts, "|") != "user:List files|assistant:Listing.|user:Now stop." {
			t.Errorf("server saw texts %q", texts)
		}
		if tr := r.ToolResults(); len(tr) != 2 {
			t.Errorf("Request.ToolResults() = %d parts, want 2", len(tr))
		}
	})

	t.Run("MalformedToolArguments", func(t *testing.T) {
		const broken = `{"command": "ls`
		s := New(t, Turn{ToolCalls: []ToolCall{{ID: "bad1", Name: "bash", Input: broken}}}, Turn{Text: "ok"})
		p := factory(s, key, fast)
		resp, err := complete(t, p, hello, nil)
		if err != nil {
			t.Fatalf("Complete with broken arguments: %v", err)
		}
		calls := resp.Message.ToolCalls()
		if len(calls) != 1 {
			t.Fatalf("tool calls = %+v, want 1", resp.Message.Content)
		}
		raw, bad := llm.MalformedInput(calls[0])
		if !bad || raw != broken {
			t.Errorf("MalformedInput = %q, %v; want %q, true", raw, bad, broken)
		}
		// The agent answers with an error observation; the provider must
		// be able to send the whole exchange back.
		req := hello
		req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleUser, Content: []llm.Part{
			{Type: llm.PartToolResult, CallID: calls[0].CallID, Text: "arguments are not valid JSON", IsError: true}}})
		if _, err := complete(t, p, req, nil); err != nil {
			t.Fatalf("Complete after a malformed call: %v", err)
		}
	})

	t.Run("RetriesRateLimit", func(t *testing.T) {
		s := New(t, Turn{Status: http.StatusTooManyRequests}, Turn{Status: http.StatusServiceUnavailable}, Turn{Text: "finally"})
		p := factory(s, key, fast)
		resp, err := complete(t, p, hello, nil)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if resp.Message.TextOf() != "finally" {
			t.Errorf("text = %q, want finally", resp.Message.TextOf())
		}
		if n := len(s.Completions()); n != 3 {
			t.Errorf("server saw %d requests, want 3", n)
		}
	})

	t.Run("ServerErrorsExhaustRetries", func(t *testing.T) {
		s := New(t, Turn{Status: 500}, Turn{Status: 500}, Turn{Status: 500}, Turn{Text: "never"})
		retry := fast
		retry.MaxRetries = 2
		p := factory(s, key, retry)
		_, err := complete(t, p, hello, nil)
		var e *llm.Error
		if !errors.As(err, &e) {
			t.Fatalf("err = %v (%T), want *llm.Error", err, err)
		}
		if e.Status != 500 || !e.Retryable || e.Provider != name {
			t.Errorf("error = %+v, want status 500, retryable, provider %q", e, name)
		}
		if s.Remaining() != 1 {
			t.Errorf("%d turns left, want 1 (three attempts)", s.Remaining())
		}
	})

	t.Run("ContextWindow", func(t *testing.T) {
		s := New(t, ContextOverflow(), Turn{Text: "never"})
		p := factory(s, key, fast)
		_, err := complete(t, p, hello, nil)
		if !errors.Is(err, llm.ErrContextWindow) {
			t.Fatalf("err = %v, want errors.Is ErrContextWindow", err)
		}
		var e *llm.Error
		if !errors.As(err, &e) || e.Retryable || e.Status != 400 {
			t.Errorf("error = %+v, want *llm.Error, status 400, not retryable", e)
		}
		if s.Remaining() != 1 {
			t.Errorf("the request was retried")
		}
	})

	t.Run("BadRequestNotRetried", func(t *testing.T) {
		s := New(t, Turn{Status: 400, ErrorBody: "messages: bad thing"}, Turn{Text: "never"})
		p := factory(s, key, fast)
		_, err := complete(t, p, hello, nil)
		var e *llm.Error
		if !errors.As(err, &e) || e.Retryable || e.Status != 400 || !strings.Contains(e.Message, "bad thing") {
			t.Fatalf("err = %v, want a 400 *llm.Error saying the message", err)
		}
		if errors.Is(err, llm.ErrContextWindow) {
			t.Errorf("a plain 400 matches ErrContextWindow")
		}
	})

	t.Run("KeyNeverInErrors", func(t *testing.T) {
		s := New(t, Turn{Status: 401, ErrorBody: "Incorrect API key provided: " + key + "."})
		p := factory(s, key, fast)
		_, err := complete(t, p, hello, nil)
		if err == nil {
			t.Fatal("Complete with a rejected key succeeded")
		}
		if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the key leaked into the error: %v", err)
		}
		for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), "SECRET") {
				t.Errorf("the key leaked into a wrapped error: %v", e)
			}
		}
		var le *llm.Error
		if !errors.As(err, &le) || le.Status != 401 || le.Retryable {
			t.Errorf("error = %+v, want status 401, not retryable", le)
		}
		if !headerHas(s.Completions()[0].Header, key) {
			t.Errorf("the key did not reach the server")
		}
	})

	t.Run("ConnectionRefused", func(t *testing.T) {
		s := New(t)
		s.Close() // its port now refuses
		retry := fast
		retry.MaxRetries = 1
		p := factory(s, key, retry)
		_, err := complete(t, p, hello, nil)
		var e *llm.Error
		if !errors.As(err, &e) || e.Status != 0 || !e.Retryable {
			t.Fatalf("err = %v, want a retryable *llm.Error without status", err)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the key leaked: %v", err)
		}
	})

	t.Run("AttemptTimeout", func(t *testing.T) {
		s := New(t, Turn{Delay: time.Minute}, Turn{Text: "second try"})
		retry := fast
		retry.Timeout = 200 * time.Millisecond
		p := factory(s, key, retry)
		resp, err := complete(t, p, hello, nil)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if resp.Message.TextOf() != "second try" {
			t.Errorf("text = %q, want the second attempt's", resp.Message.TextOf())
		}
	})

	t.Run("CancelMidStream", func(t *testing.T) {
		s := New(t, Turn{Text: "a long answer that stalls", Chunks: 4, Stall: time.Minute})
		p := factory(s, key, fast)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := p.Complete(ctx, hello, func(llm.Delta) { cancel() })
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want errors.Is context.Canceled", err)
			}
			var e *llm.Error
			if !errors.As(err, &e) || e.Retryable {
				t.Errorf("err = %#v, want a non-retryable *llm.Error", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Complete did not return after its context was cancelled")
		}
		if n := len(s.Completions()); n != 1 {
			t.Errorf("server saw %d requests, want 1 (no retry after cancel)", n)
		}
	})

	t.Run("NoTurnLeft", func(t *testing.T) {
		s := New(t)
		p := factory(s, key, fast)
		_, err := complete(t, p, hello, nil)
		var e *llm.Error
		if !errors.As(err, &e) || e.Status != 500 || !strings.Contains(e.Message, "no scripted turn left") {
			t.Fatalf("err = %v, want a 500 saying no scripted turn left", err)
		}
		if n := len(s.Unexpected()); n < 1 {
			t.Errorf("Unexpected() has %d requests, want at least 1", n)
		}
	})
}

func headerHas(h http.Header, value string) bool {
	for _, vs := range h {
		for _, v := range vs {
			if strings.Contains(v, value) {
				return true
			}
		}
	}
	return false
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
