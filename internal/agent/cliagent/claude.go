package cliagent

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/gateway"
)

// claudeCode runs Claude Code (@anthropic-ai/claude-code) in print mode
// with stream-json on both sides:
//
//	claude -p --output-format stream-json --input-format stream-json
//	       --verbose --replay-user-messages --dangerously-skip-permissions
//	       [--model M] [--resume SESSION]
//
// The task and every injected message are user messages written to stdin
// ({"type":"user","message":{"role":"user","content":[{"type":"text",...}]}}).
// Claude Code takes a message that arrives mid-turn into the running turn
// (at the next tool result: "The user sent a new message while you were
// working") and one that arrives between turns as a new turn; with
// --replay-user-messages it echoes each one on stdout as it takes it in.
// Stdin is closed once a result has arrived and every message written
// was echoed; the CLI then exits. The sandbox is the isolation boundary,
// so permission prompts are skipped.
type claudeCode struct{}

func (claudeCode) name() string { return "claude-code" }

func (claudeCode) provider(model string) (string, string, error) {
	return oneProvider(model, gateway.Anthropic)
}

func (claudeCode) streaming() bool { return true }

func (claudeCode) command(in runInput) (command, error) {
	args := []string{"-p", "--output-format", "stream-json", "--input-format", "stream-json",
		"--verbose", "--replay-user-messages", "--dangerously-skip-permissions"}
	if in.model != "" {
		args = append(args, "--model", in.model)
	}
	if in.session != "" {
		args = append(args, "--resume", in.session)
	}
	return command{
		path: "claude", args: args,
		env: map[string]string{
			"ANTHROPIC_BASE_URL": in.baseURL,
			"ANTHROPIC_API_KEY":  gateway.Placeholder,
			// No update checks, telemetry or error reports: none could
			// leave the sandbox anyway, and each would cost a timeout.
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"DISABLE_AUTOUPDATER":                      "1",
			"DISABLE_TELEMETRY":                        "1",
			"DISABLE_ERROR_REPORTING":                  "1",
			// Claude Code refuses to skip permissions as root unless told
			// it is in a sandbox (the local runtime runs as the host user).
			"IS_SANDBOX": "1",
		},
	}, nil
}

// claudeUserMessage is one stream-json input line.
func claudeUserMessage(text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}},
	})
	return append(b, '\n')
}

func (claudeCode) newTranslator(int) translator {
	return &claudeTranslator{tools: map[string]string{}}
}

type claudeTranslator struct {
	out     outcome
	pending pendingText
	tools   map[string]string // tool_use id → tool name
}

// claudeEvent is the part of a stream-json event the translation reads.
type claudeEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	IsReplay  bool   `json:"isReplay"`
	Error     string `json:"error"` // an assistant message Claude Code made up to show an API error
	Message   struct {
		ID      string `json:"id"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Thinking  string          `json:"thinking"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		} `json:"content"`
	} `json:"message"`
	// result
	Result   string   `json:"result"`
	IsError  bool     `json:"is_error"`
	NumTurns int      `json:"num_turns"`
	Errors   []string `json:"errors"`
	Usage    struct {
		InputTokens   int64 `json:"input_tokens"`
		OutputTokens  int64 `json:"output_tokens"`
		CacheCreation int64 `json:"cache_creation_input_tokens"`
		CacheRead     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

var exitCodeLine = regexp.MustCompile(`^Exit code (\d+)`)

func (t *claudeTranslator) translate(line []byte) ([]agent.Event, signal) {
	var ev claudeEvent
	if json.Unmarshal(line, &ev) != nil {
		return nil, signal{}
	}
	if ev.SessionID != "" {
		t.out.session = ev.SessionID
	}
	var out []agent.Event
	switch ev.Type {
	case "assistant":
		if ev.Error != "" {
			return nil, signal{} // the result that follows reports it
		}
		for _, b := range ev.Message.Content {
			switch b.Type {
			case "text":
				out = append(out, t.pending.add(ev.Message.ID, b.Text)...)
			case "thinking":
				if strings.TrimSpace(b.Thinking) != "" {
					out = append(out, thoughtEvent(b.Thinking))
				}
			case "tool_use":
				out = append(out, t.pending.asThought()...)
				t.tools[b.ID] = b.Name
				out = append(out, toolCallEvent(b.ID, b.Name, b.Input))
			}
		}
	case "user":
		if ev.IsReplay {
			return nil, signal{took: 1}
		}
		for _, b := range ev.Message.Content {
			if b.Type != "tool_result" {
				continue
			}
			out = append(out, t.pending.asMessage()...)
			tool := t.tools[b.ToolUseID]
			text := claudeContentText(b.Content)
			var exit *int
			if tool == "Bash" {
				if m := exitCodeLine.FindStringSubmatch(text); b.IsError && m != nil {
					n, _ := strconv.Atoi(m[1])
					exit = intPtr(n)
				} else if !b.IsError {
					exit = intPtr(0)
				}
			}
			out = append(out, toolResultEvent(b.ToolUseID, tool, text, exit, b.IsError))
		}
	case "result":
		out = append(out, t.pending.asMessage()...)
		t.out.steps += ev.NumTurns
		u := ev.Usage
		t.out.tokens += u.InputTokens + u.OutputTokens + u.CacheCreation + u.CacheRead
		if ev.Result != "" {
			t.out.summary = ev.Result
		}
		if ev.IsError || (ev.Subtype != "" && ev.Subtype != "success") {
			msg := ev.Result
			if msg == "" {
				msg = strings.Join(ev.Errors, "; ")
			}
			if msg == "" {
				msg = "Claude Code reported " + ev.Subtype
			}
			t.out.failed = msg
			out = append(out, errorEvent("claude-code", msg, false))
		} else {
			t.out.failed = "" // a later turn succeeded
		}
		return out, signal{turnDone: true}
	}
	return out, signal{}
}

// claudeContentText is a tool result's content: a string, or text blocks.
func claudeContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			} else {
				parts = append(parts, "["+b.Type+"]")
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

func (t *claudeTranslator) finish() []agent.Event {
	evs := t.pending.asMessage()
	if s, ok := lastMessage(evs); ok && t.out.summary == "" {
		t.out.summary = s
	}
	return evs
}

func (t *claudeTranslator) outcome() outcome { return t.out }
