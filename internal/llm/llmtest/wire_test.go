package llmtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
)

// The wire formats are checked by decoding them with the official SDKs
// (the streaming paths of Chat Completions and Messages are also the
// providers' own, see internal/llm/openai and internal/llm/anthropic).

func openaiClient(s *llmtest.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

func anthropicClient(s *llmtest.Server) anthropic.Client {
	return anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(s.URL),
		aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
}

var twoCalls = llmtest.Turn{Text: "Running.", ToolCalls: []llmtest.ToolCall{
	{ID: "call_a", Name: "bash", Input: `{"command":"ls"}`},
	{ID: "call_b", Name: "editor", Input: `{"path":"x.go"}`},
}, Usage: llmtest.Usage{Input: 42, Output: 7}}

func TestChatCompletionsWithSDK(t *testing.T) {
	s := llmtest.New(t, twoCalls, twoCalls)
	c := openaiClient(s)
	params := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

	resp, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ch := resp.Choices[0]
	if ch.Message.Content != "Running." || ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 2 ||
		ch.Message.ToolCalls[1].Function.Name != "editor" || ch.Message.ToolCalls[1].Function.Arguments != `{"path":"x.go"}` ||
		resp.Usage.PromptTokens != 42 || resp.Usage.CompletionTokens != 7 {
		t.Errorf("non-streaming completion = %s", resp.RawJSON())
	}

	params.StreamOptions.IncludeUsage = openai.Bool(true)
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("the SDK's accumulator rejected chunk %s", stream.Current().RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	m := acc.Choices[0].Message
	if m.Content != "Running." || len(m.ToolCalls) != 2 || m.ToolCalls[0].ID != "call_a" || m.ToolCalls[0].Function.Arguments != `{"command":"ls"}` ||
		acc.Choices[0].FinishReason != "tool_calls" || acc.Usage.TotalTokens != 49 {
		t.Errorf("accumulated stream = %+v, usage %+v", acc.Choices[0], acc.Usage)
	}
	if r := s.Completions()[1]; r.API != llmtest.APIOpenAIChat || !r.Stream || r.Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("request = %+v", r)
	}
}

func TestMessagesWithSDK(t *testing.T) {
	s := llmtest.New(t, twoCalls, twoCalls)
	c := anthropicClient(s)
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1000,
		System:   []anthropic.TextBlockParam{{Text: "be brief"}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}

	msg, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if len(msg.Content) != 3 || msg.Content[0].Text != "Running." || msg.Content[2].Name != "editor" ||
		string(msg.Content[2].Input) != `{"path":"x.go"}` || msg.StopReason != "tool_use" || msg.Usage.InputTokens != 42 {
		t.Errorf("non-streaming message = %s", msg.RawJSON())
	}

	stream := c.Messages.NewStreaming(context.Background(), params)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatalf("the SDK's Accumulate: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(acc.Content) != 3 || acc.Content[0].Text != "Running." || acc.Content[1].ID != "call_a" ||
		string(acc.Content[1].Input) != `{"command":"ls"}` || acc.StopReason != "tool_use" || acc.Usage.OutputTokens != 7 {
		t.Errorf("accumulated stream = %s", acc.RawJSON())
	}

	n, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("word ", 400)))}})
	if err != nil || n.InputTokens < 400 {
		t.Errorf("CountTokens = %+v, %v; want about 500", n, err)
	}
	r := s.Requests()
	if len(r) != 3 || r[0].System != "be brief" || r[0].Header.Get("X-Api-Key") != "sk-ant-test" || r[2].API != llmtest.APICountTokens {
		t.Errorf("requests = %+v", r)
	}
	if s.Remaining() != 0 || len(s.Unexpected()) != 0 {
		t.Errorf("remaining %d, unexpected %d", s.Remaining(), len(s.Unexpected()))
	}
}

func TestModelsWithSDKs(t *testing.T) {
	s := llmtest.New(t)
	s.SetModels("m1", "m2")
	oc, ac := openaiClient(s), anthropicClient(s)
	page, err := oc.Models.List(context.Background())
	if err != nil || len(page.Data) != 2 || page.Data[1].ID != "m2" {
		t.Errorf("openai Models.List = %+v, %v", page, err)
	}
	apage, err := ac.Models.List(context.Background(), anthropic.ModelListParams{})
	if err != nil || len(apage.Data) != 2 || apage.Data[0].ID != "m1" {
		t.Errorf("anthropic Models.List = %+v, %v", apage, err)
	}
}

func TestResponsesWithSDK(t *testing.T) {
	s := llmtest.New(t, twoCalls, twoCalls, llmtest.Turn{Text: "plain answer", Chunks: 2})
	c := openaiClient(s)
	params := responses.ResponseNewParams{Model: "gpt-5-codex", Instructions: openai.String("be brief"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}

	resp, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if resp.OutputText() != "Running." || len(resp.Output) != 3 || resp.Usage.InputTokens != 42 || resp.Status != "completed" {
		t.Errorf("non-streaming response = %s", resp.RawJSON())
	}
	if fc := resp.Output[1].AsFunctionCall(); fc.CallID != "call_a" || fc.Name != "bash" || fc.Arguments != `{"command":"ls"}` {
		t.Errorf("function call item = %+v", fc)
	}

	var types []string
	var text strings.Builder
	var completed responses.Response
	var args []string
	stream := c.Responses.NewStreaming(context.Background(), params)
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.function_call_arguments.done":
			args = append(args, ev.Arguments)
		case "response.completed":
			completed = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	want := "response.created response.in_progress " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " +
		"response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events:\n%s\nwant:\n%s", got, want)
	}
	if text.String() != "Running." || strings.Join(args, "|") != `{"command":"ls"}|{"path":"x.go"}` {
		t.Errorf("streamed text %q, arguments %q", text.String(), args)
	}
	if completed.OutputText() != "Running." || completed.Usage.TotalTokens != 49 || len(completed.Output) != 3 ||
		completed.Output[2].AsFunctionCall().Name != "editor" {
		t.Errorf("completed response = %s", completed.RawJSON())
	}

	stream = c.Responses.NewStreaming(context.Background(), params)
	text.Reset()
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
	}
	if stream.Err() != nil || text.String() != "plain answer" {
		t.Errorf("plain stream = %q, %v", text.String(), stream.Err())
	}
	if r := s.Completions()[0]; r.API != llmtest.APIOpenAIResponses || r.System != "be brief" || r.Messages[0].TextOf() != "hi" {
		t.Errorf("request = %+v", r)
	}
}

// TestResponsesInputItems sends a Codex-like body: instructions, a
// developer message, a function call, its output, an image.
func TestResponsesInputItems(t *testing.T) {
	s := llmtest.New(t, llmtest.Turn{Text: "ok"})
	body := `{"model":"gpt-5-codex","instructions":"You are Codex.","stream":true,
	 "tools":[{"type":"function","name":"shell","parameters":{"type":"object"}},{"type":"custom","name":"apply_patch"},{"type":"web_search"}],
	 "input":[
	  {"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions/>"}]},
	  {"type":"message","role":"user","content":[{"type":"input_text","text":"list files"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0K"}]},
	  {"type":"reasoning","summary":[],"encrypted_content":null},
	  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Listing."}]},
	  {"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"},
	  {"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch","call_id":"call_2"},
	  {"type":"function_call_output","call_id":"call_1","output":"a.go"},
	  {"type":"custom_tool_call_output","call_id":"call_2","output":"Done!"}
	 ]}`
	resp, err := http.Post(s.URL+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r := s.Completions()[0]
	if r.System != "You are Codex.\n\n<permissions/>" || strings.Join(r.Tools, ",") != "shell,apply_patch,web_search" {
		t.Errorf("system %q, tools %q", r.System, r.Tools)
	}
	if len(r.Messages) != 3 {
		t.Fatalf("messages = %+v, want user, assistant, tool results", r.Messages)
	}
	u := r.Messages[0].Content
	if len(u) != 2 || u[0].Text != "list files" || u[1].Type != llm.PartImage || u[1].MediaType != "image/png" || !bytes.HasPrefix(u[1].Data, []byte("\x89PNG")) {
		t.Errorf("user message = %+v", u)
	}
	a := r.Messages[1].Content
	if len(a) != 3 || a[0].Text != "Listing." || a[1].Tool != "shell" || string(a[1].Input) != `{"command":["ls"]}` || a[2].Tool != "apply_patch" {
		t.Errorf("assistant message = %+v", a)
	}
	res := r.ToolResults()
	if len(res) != 2 || res[0].Text != "a.go" || res[0].Tool != "shell" || res[1].Text != "Done!" || res[1].Tool != "apply_patch" {
		t.Errorf("tool results = %+v", res)
	}
}

func TestResponsesCustomToolCall(t *testing.T) {
	s := llmtest.New(t, llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "apply_patch", Input: "*** Begin Patch\n*** End Patch"}}})
	c := openaiClient(s)
	resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-5-codex",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("patch it")},
		Tools: []responses.ToolUnionParam{{OfCustom: &responses.CustomToolParam{Name: "apply_patch"}}}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if ct := resp.Output[0].AsCustomToolCall(); ct.Name != "apply_patch" || ct.Input != "*** Begin Patch\n*** End Patch" || ct.CallID != "c1" {
		t.Errorf("custom tool call = %s", resp.Output[0].RawJSON())
	}
}

func TestGemini(t *testing.T) {
	s := llmtest.New(t, twoCalls, llmtest.Turn{Text: "hello gemini", Chunks: 2})
	body := `{"contents":[
	  {"role":"user","parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0K"}}]},
	  {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]},
	  {"role":"user","parts":[{"functionResponse":{"id":"x1","name":"run_shell_command","response":{"output":"a.go"}}},
	                          {"functionResponse":{"name":"read_file","response":{"error":"no such file"}}}]}],
	 "systemInstruction":{"parts":[{"text":"You are Gemini CLI."}]},
	 "tools":[{"functionDeclarations":[{"name":"run_shell_command"},{"name":"read_file"}]}]}`
	post := func(path string) *http.Response {
		req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(body))
		req.Header.Set("x-goog-api-key", "gemini-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	type chunk struct {
		Candidates []struct {
			Content struct {
				Role  string            `json:"role"`
				Parts []json.RawMessage `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata *struct {
			PromptTokenCount, CandidatesTokenCount int
		} `json:"usageMetadata"`
	}
	resp := post("/v1beta/models/gemini-2.5-pro:generateContent")
	var one chunk
	if err := json.NewDecoder(resp.Body).Decode(&one); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(one.Candidates) != 1 || len(one.Candidates[0].Content.Parts) != 3 || one.Candidates[0].FinishReason != "STOP" ||
		one.UsageMetadata.PromptTokenCount != 42 || !strings.Contains(string(one.Candidates[0].Content.Parts[2]), `"functionCall":{"args":{"path":"x.go"},"id":"call_b","name":"editor"}`) {
		t.Errorf("generateContent = %+v", one)
	}

	resp = post("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	var text strings.Builder
	var last chunk
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		var p struct{ Text string }
		_ = json.Unmarshal(c.Candidates[0].Content.Parts[0], &p)
		text.WriteString(p.Text)
		last = c
	}
	resp.Body.Close()
	if text.String() != "hello gemini" || last.Candidates[0].FinishReason != "STOP" || last.UsageMetadata == nil {
		t.Errorf("stream text %q, last chunk %+v", text.String(), last)
	}

	resp = post("/v1beta/models/gemini-2.5-pro:countTokens")
	var count struct{ TotalTokens int }
	_ = json.NewDecoder(resp.Body).Decode(&count)
	resp.Body.Close()
	if count.TotalTokens < 1 {
		t.Errorf("countTokens = %d", count.TotalTokens)
	}

	r := s.Completions()[0]
	if r.API != llmtest.APIGemini || r.Model != "gemini-2.5-pro" || r.System != "You are Gemini CLI." || r.Header.Get("X-Goog-Api-Key") != "gemini-key" ||
		strings.Join(r.Tools, ",") != "run_shell_command,read_file" || r.Stream {
		t.Errorf("request = %+v", r)
	}
	if len(r.Messages) != 3 || r.Messages[0].Content[1].MediaType != "image/png" || r.Messages[1].Role != llm.RoleAssistant {
		t.Fatalf("messages = %+v", r.Messages)
	}
	res := r.ToolResults()
	if len(res) != 2 || res[0].Text != "a.go" || res[0].CallID != "x1" || !res[1].IsError || res[1].Text != "no such file" {
		t.Errorf("tool results = %+v", res)
	}
	if !s.Completions()[1].Stream {
		t.Errorf("streamGenerateContent not recorded as a stream")
	}
}

func TestGeminiMalformedCall(t *testing.T) {
	s := llmtest.New(t, llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "x", Input: "{nope"}}})
	resp, err := http.Post(s.URL+"/v1beta/models/g:generateContent", "application/json", strings.NewReader(`{"contents":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"finishReason":"MALFORMED_FUNCTION_CALL"`) {
		t.Errorf("body = %s", b)
	}
}
