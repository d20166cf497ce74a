// Package llmtest is a scripted LLM server for tests: an HTTP server on
// 127.0.0.1 that speaks the real wire formats of the model APIs, so the
// production providers (internal/llm/openai, internal/llm/anthropic) and
// the real agent CLIs (Claude Code, Codex, OpenCode, Gemini CLI) run
// against it unchanged, and answers with turns a test scripts in advance.
//
// APIs and the base URL each client wants (s.URL has no /v1):
//
//	OpenAI Chat Completions  POST /v1/chat/completions (or /chat/completions)
//	                         openai-go, OpenCode, OPENAI_BASE_URL: s.URL+"/v1"
//	OpenAI Responses         POST /v1/responses (or /responses)
//	                         Codex CLI (openai_base_url / a model provider): s.URL+"/v1"
//	Anthropic Messages       POST /v1/messages, POST /v1/messages/count_tokens
//	                         anthropic-sdk-go, Claude Code, ANTHROPIC_BASE_URL: s.URL
//	Gemini                   POST /v1beta/models/{model}:generateContent,
//	                         :streamGenerateContent?alt=sse, :countTokens
//	                         Gemini CLI, GOOGLE_GEMINI_BASE_URL: s.URL
//	Models                   GET /v1/models (OpenAI and Anthropic shapes at once),
//	                         GET /v1beta/models (Gemini)
//	Probe                    HEAD or GET / answers 200 (Claude Code's check)
//
// Checked by hand with the real CLIs, each running a scripted shell tool
// call and finishing:
//
//	Claude Code 2.1   ANTHROPIC_BASE_URL=s.URL ANTHROPIC_API_KEY=any;
//	                  claude -p ... --output-format stream-json --verbose
//	Codex 0.169       $CODEX_HOME/config.toml: model_provider = "x",
//	                  [model_providers.x] base_url = s.URL+"/v1",
//	                  wire_api = "responses", env_key = "OPENAI_API_KEY";
//	                  codex exec --json --skip-git-repo-check ...
//	Gemini CLI 0.61   GOOGLE_GEMINI_BASE_URL=s.URL GEMINI_API_KEY=any and
//	                  ~/.gemini/settings.json security.auth.selectedType =
//	                  "gemini-api-key"; gemini -p ... --output-format stream-json
//	OpenCode 1.18     OPENCODE_CONFIG=opencode.json with a provider using
//	                  "@ai-sdk/openai-compatible", options.baseURL =
//	                  s.URL+"/v1"; opencode run --format json -m x/model ...
//
// The CLIs make side requests (titles, Gemini's next-speaker check):
// answer them with Handle, e.g. when the request has no tools.
//
// Every request is recorded (Requests), normalised to llm.Message so a
// test can assert what the model was shown. Completion requests take the
// next scripted Turn, in order across all APIs; an interceptor (Handle)
// sees them first, for a CLI's side requests (titles, quota probes).
// Turns are streamed when the client asks for a stream. With no turn
// left the server answers 500 ("llmtest: no scripted turn left", with
// x-should-retry: false) and lists the request in Unexpected; it never
// calls t.Fatal from a handler goroutine.
package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/llm"
)

// API names, in Request.API.
const (
	APIOpenAIChat      = "openai-chat"
	APIAnthropic       = "anthropic"
	APIOpenAIResponses = "openai-responses"
	APIGemini          = "gemini"
	// Side requests, answered without a turn.
	APICountTokens = "count-tokens"
	APIModels      = "models"
	APIProbe       = "probe" // HEAD or GET / (Claude Code checks the server is up)
	APIUnknown     = "unknown"
)

// ToolCall is one call a scripted turn makes.
type ToolCall struct {
	ID   string // "" to generate one in the API's style
	Name string
	// Input is the arguments as raw JSON; it may be deliberately
	// malformed to test how a client copes.
	Input string
}

// Call returns a tool call of name with input marshalled to JSON and a
// fresh id.
func Call(name string, input any) ToolCall {
	b, err := json.Marshal(input)
	if err != nil {
		panic(fmt.Sprintf("llmtest.Call(%q): %v", name, err))
	}
	return ToolCall{ID: "call_" + randomID(), Name: name, Input: string(b)}
}

// Usage is what a turn reports. Zero fields are estimated from the
// request and the answer.
type Usage struct {
	Input, Output int
}

// Turn is one scripted answer.
type Turn struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
	// Stop overrides the stop reason: one of llm.StopEnd,
	// llm.StopToolCalls, llm.StopMaxTokens; "" chooses from ToolCalls.
	Stop string

	// Status, if set, answers with this HTTP error instead, with the
	// API's real error body (ErrorBody as its message, or verbatim when
	// it begins with "{") and, for 429, Retry-After (RetryAfter,
	// rounded up to seconds) and Retry-After-Ms.
	Status     int
	ErrorBody  string
	RetryAfter time.Duration
	// ContextOverflow answers 400 with the API's real "the prompt is over
	// the context window" error.
	ContextOverflow bool

	// Match, if set, checks the request: when it returns false the test
	// fails with a clear message and the client gets a 400.
	Match func(Request) bool
	// Respond, if set, computes the turn from the request.
	Respond func(Request) Turn

	// Delay waits before answering (headers not yet sent).
	Delay time.Duration
	// Stall waits in the middle of a stream, after the first text delta
	// (to test cancellation).
	Stall time.Duration
	// Chunks splits Text into this many stream deltas (default 3, fewer
	// for short text).
	Chunks int
}

// ContextOverflow is a turn answering with the API's context-window error.
func ContextOverflow() Turn { return Turn{ContextOverflow: true} }

// Request is one request the server received, normalised.
type Request struct {
	API    string // APIOpenAIChat, APIAnthropic, ...
	Method string
	Path   string
	Model  string
	// System is the system prompt (OpenAI system and developer messages,
	// Anthropic system, Responses instructions, Gemini systemInstruction),
	// parts joined by a blank line.
	System    string
	Stream    bool
	Tools     []string // tool names, in order
	MaxTokens int
	// Messages is the conversation as llm messages: text, images
	// (data URLs decoded), tool calls (Input raw, see llm.ToolInput) and
	// tool results (a tool result's Tool is filled from the call it
	// answers when the wire format does not say).
	Messages []llm.Message
	Header   http.Header
	Query    url.Values // Gemini clients may send the key as ?key=
	Raw      []byte
}

// Last returns the last message of r (zero if none).
func (r Request) Last() llm.Message {
	if len(r.Messages) == 0 {
		return llm.Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// ToolResults returns the tool results in the messages after the last
// assistant message: what the client answered to the previous turn.
func (r Request) ToolResults() []llm.Part {
	var out []llm.Part
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != llm.RoleAssistant; i-- {
		var these []llm.Part
		for _, p := range r.Messages[i].Content {
			if p.Type == llm.PartToolResult {
				these = append(these, p)
			}
		}
		out = append(these, out...)
	}
	return out
}

// Server is a running scripted LLM server.
type Server struct {
	// URL is the base URL, http://127.0.0.1:port, without /v1.
	URL string

	t    testing.TB
	srv  *httptest.Server
	done chan struct{}

	mu         sync.Mutex
	turns      []Turn
	handlers   []func(Request) (Turn, bool)
	reqs       []Request
	unexpected []Request
	models     []string
}

// DefaultModels are the ids GET /v1/models lists unless SetModels says
// otherwise.
var DefaultModels = []string{"gpt-4o", "gpt-5-codex", "claude-sonnet-4-5", "gemini-2.5-pro"}

// New starts a server answering with turns, closed by t.Cleanup.
func New(t testing.TB, turns ...Turn) *Server {
	t.Helper()
	s := &Server{t: t, done: make(chan struct{}), turns: turns, models: DefaultModels}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, ending stalled streams. It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Handle installs an interceptor consulted, in installation order,
// before the script for every completion request: ok=false falls
// through.
func (s *Server) Handle(h func(Request) (Turn, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers = append(s.handlers, h)
}

// SetModels sets the model ids the models endpoints list.
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = ids
}

// Requests returns every request received so far, side requests
// included, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Completions returns the completion requests (the four chat APIs) so far.
func (s *Server) Completions() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if isCompletion(r.API) {
			out = append(out, r)
		}
	}
	return out
}

// Remaining is the number of scripted turns not yet used.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns)
}

// Unexpected returns the requests that found no turn left, or went to a
// path the server does not know.
func (s *Server) Unexpected() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.unexpected...)
}

func isCompletion(api string) bool {
	switch api {
	case APIOpenAIChat, APIAnthropic, APIOpenAIResponses, APIGemini:
		return true
	}
	return false
}

// api is one wire format: how to read its requests and write its answers.
type api interface {
	parse(body []byte, r *Request) error
	writeError(w http.ResponseWriter, status int, msg string, overflow bool)
	writeTurn(ctx context.Context, w http.ResponseWriter, req Request, t Turn, u Usage) error
}

const maxBody = 64 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "llmtest: reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Query: r.URL.Query(), Raw: body}
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	var a api
	switch {
	case r.Method == http.MethodPost && path == "/chat/completions":
		req.API, a = APIOpenAIChat, chatAPI{}
	case r.Method == http.MethodPost && path == "/responses":
		req.API, a = APIOpenAIResponses, responsesAPI{}
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		req.API, a = APIAnthropic, messagesAPI{}
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		req.API = APICountTokens
		s.countTokens(w, messagesAPI{}, body, req, func(n int) any { return map[string]int{"input_tokens": n} })
		return
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1beta/models/"):
		model, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
		req.Model = model
		switch method {
		case "generateContent", "streamGenerateContent":
			req.API, a = APIGemini, geminiAPI{stream: method == "streamGenerateContent"}
		case "countTokens":
			req.API = APICountTokens
			s.countTokens(w, geminiAPI{}, body, req, func(n int) any { return map[string]int{"totalTokens": n} })
			return
		}
	case (r.Method == http.MethodHead || r.Method == http.MethodGet) && r.URL.Path == "/":
		req.API = APIProbe
		s.record(req)
		w.WriteHeader(http.StatusOK)
		return
	case r.Method == http.MethodGet && (path == "/models" || r.URL.Path == "/v1beta/models"):
		req.API = APIModels
		s.record(req)
		s.writeModels(w, r.URL.Path == "/v1beta/models")
		return
	}
	if a == nil {
		req.API = APIUnknown
		s.record(req)
		s.mu.Lock()
		s.unexpected = append(s.unexpected, req)
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("llmtest: no route for %s %s", r.Method, r.URL.Path), "type": "not_found_error"}})
		return
	}
	if err := a.parse(body, &req); err != nil {
		s.record(req)
		a.writeError(w, http.StatusBadRequest, "llmtest: "+err.Error(), false)
		return
	}
	linkToolNames(req.Messages)
	s.record(req)

	turn, ok, msg := s.next(req)
	if !ok {
		w.Header().Set("x-should-retry", "false")
		status := http.StatusInternalServerError
		if msg != noTurnLeft {
			status = http.StatusBadRequest
		}
		a.writeError(w, status, msg, false)
		return
	}
	if !s.wait(r.Context(), turn.Delay) {
		return
	}
	if turn.ContextOverflow {
		a.writeError(w, http.StatusBadRequest, "", true)
		return
	}
	if turn.Status != 0 {
		if turn.Status == http.StatusTooManyRequests {
			ms := turn.RetryAfter.Milliseconds()
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(ms, 10))
			w.Header().Set("Retry-After", strconv.FormatInt((ms+999)/1000, 10))
		}
		if strings.HasPrefix(turn.ErrorBody, "{") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(turn.Status)
			_, _ = io.WriteString(w, turn.ErrorBody)
			return
		}
		a.writeError(w, turn.Status, turn.ErrorBody, false)
		return
	}
	u := turn.Usage
	if u.Input == 0 {
		u.Input = max(1, llm.EstimateRequestTokens(llm.Request{System: req.System, Messages: req.Messages}))
	}
	if u.Output == 0 {
		n := len(turn.Text)
		for _, c := range turn.ToolCalls {
			n += len(c.Name) + len(c.Input)
		}
		u.Output = max(1, (n+3)/4)
	}
	ctx, cancel := s.context(r.Context())
	defer cancel()
	_ = a.writeTurn(ctx, w, req, turn, u)
}

const noTurnLeft = "llmtest: no scripted turn left"

// next picks the turn for req: an interceptor's, or the script's next.
// On failure it returns the message for the client.
func (s *Server) next(req Request) (Turn, bool, string) {
	s.mu.Lock()
	handlers := append([]func(Request) (Turn, bool)(nil), s.handlers...)
	s.mu.Unlock()
	for _, h := range handlers {
		if t, ok := h(req); ok {
			return resolve(t, req), true, ""
		}
	}
	s.mu.Lock()
	if len(s.turns) == 0 {
		s.unexpected = append(s.unexpected, req)
		s.mu.Unlock()
		return Turn{}, false, noTurnLeft
	}
	t := s.turns[0]
	s.turns = s.turns[1:]
	n := len(s.reqs)
	s.mu.Unlock()
	if t.Match != nil && !t.Match(req) {
		s.t.Errorf("llmtest: request %d (%s %s, model %q, last message %q) does not match the scripted turn",
			n, req.API, req.Path, req.Model, lastText(req))
		return Turn{}, false, "llmtest: the request does not match the scripted turn"
	}
	return resolve(t, req), true, ""
}

func resolve(t Turn, req Request) Turn {
	for t.Respond != nil {
		t = t.Respond(req)
	}
	return t
}

func lastText(r Request) string {
	m := r.Last()
	if t := m.TextOf(); t != "" {
		return llm.Shorten(t, "")
	}
	for _, p := range m.Content {
		if p.Type == llm.PartToolResult {
			return "tool result: " + llm.Shorten(p.Text, "")
		}
	}
	return ""
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

// context is the request's context, also ended by Close.
func (s *Server) context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// wait sleeps d unless the client leaves or the server closes first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

func (s *Server) countTokens(w http.ResponseWriter, a api, body []byte, req Request, shape func(int) any) {
	var parsed Request
	if err := a.parse(body, &parsed); err != nil {
		s.record(req)
		a.writeError(w, http.StatusBadRequest, "llmtest: "+err.Error(), false)
		return
	}
	req.Model, req.System, req.Messages, req.Tools = parsed.Model, parsed.System, parsed.Messages, parsed.Tools
	s.record(req)
	n := llm.EstimateRequestTokens(llm.Request{System: req.System, Messages: req.Messages})
	writeJSON(w, http.StatusOK, shape(max(n, 1)))
}

func (s *Server) writeModels(w http.ResponseWriter, gemini bool) {
	s.mu.Lock()
	ids := append([]string(nil), s.models...)
	s.mu.Unlock()
	if gemini {
		var models []map[string]any
		for _, id := range ids {
			models = append(models, map[string]any{"name": "models/" + id, "displayName": id,
				"supportedGenerationMethods": []string{"generateContent", "countTokens"}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"models": models})
		return
	}
	// One list both OpenAI's and Anthropic's clients accept.
	data := []map[string]any{}
	for _, id := range ids {
		data = append(data, map[string]any{"id": id, "object": "model", "created": 1700000000,
			"owned_by": "llmtest", "type": "model", "display_name": id, "created_at": "2025-01-01T00:00:00Z"})
	}
	first, last := "", ""
	if len(ids) > 0 {
		first, last = ids[0], ids[len(ids)-1]
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data,
		"has_more": false, "first_id": first, "last_id": last})
}

// linkToolNames fills the Tool of tool results from the calls they answer.
func linkToolNames(msgs []llm.Message) {
	names := map[string]string{}
	for i := range msgs {
		for j := range msgs[i].Content {
			p := &msgs[i].Content[j]
			switch {
			case p.Type == llm.PartToolCall:
				names[p.CallID] = p.Tool
			case p.Type == llm.PartToolResult && p.Tool == "":
				p.Tool = names[p.CallID]
			}
		}
	}
}

// stop is the turn's normalised stop reason.
func (t Turn) stop() string {
	if t.Stop != "" {
		return t.Stop
	}
	if len(t.ToolCalls) > 0 {
		return llm.StopToolCalls
	}
	return llm.StopEnd
}
