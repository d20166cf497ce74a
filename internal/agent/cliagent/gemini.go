package cliagent

import (
	"encoding/json"
	"strings"

	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/gateway"
)

// gemini runs Gemini CLI (@google/gemini-cli) headless:
//
//	gemini --output-format stream-json --yolo --skip-trust [-m MODEL]
//	       [--resume SESSION] --prompt=PROMPT
//
// GOOGLE_GEMINI_BASE_URL points it at the gateway's forward and
// GEMINI_API_KEY holds the placeholder. Headless mode needs an auth type
// in its settings, so Corral gives it a home of its own (GEMINI_CLI_HOME,
// under the agent's home) whose .gemini/settings.json selects the API
// key: the user's ~/.gemini is left alone (a system settings file would
// have to sit in a root-owned directory, which the sandbox user cannot
// make). Sessions live there too, which is where --resume finds them.
// Its headless mode has no streaming input: a message injected while it
// runs is queued and sent with --resume SESSION when it ends.
type gemini struct{}

func (gemini) name() string { return "gemini" }

func (gemini) provider(model string) (string, string, error) {
	return oneProvider(model, gateway.Google, "gemini")
}

func (gemini) streaming() bool { return false }

// geminiSettings is the settings file of Corral's Gemini home.
const geminiSettings = `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}`

func (gemini) command(in runInput) (command, error) {
	home := in.home + "/.corral/gemini"
	args := []string{"--output-format", "stream-json", "--yolo", "--skip-trust"}
	if in.model != "" {
		args = append(args, "-m", in.model)
	}
	if in.session != "" {
		args = append(args, "--resume", in.session)
	}
	args = append(args, "--prompt="+in.prompt)
	return command{
		path: "gemini", args: args,
		env: map[string]string{
			"GOOGLE_GEMINI_BASE_URL": in.baseURL,
			"GEMINI_API_KEY":         gateway.Placeholder,
			"GEMINI_CLI_HOME":        home,
		},
		files: map[string]string{home + "/.gemini/settings.json": geminiSettings},
	}, nil
}

func (gemini) newTranslator(int) translator { return &geminiTranslator{} }

type geminiTranslator struct {
	out     outcome
	pending pendingText
	tools   map[string]string // tool id → name
}

type geminiEvent struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     string          `json:"output"`
	Severity   string          `json:"severity"`
	Message    string          `json:"message"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		TotalTokens int64 `json:"total_tokens"`
		ToolCalls   int   `json:"tool_calls"`
	} `json:"stats"`
}

func (t *geminiTranslator) translate(line []byte) ([]agent.Event, signal) {
	var ev geminiEvent
	if json.Unmarshal(line, &ev) != nil {
		return nil, signal{}
	}
	if ev.SessionID != "" {
		t.out.session = ev.SessionID
	}
	var out []agent.Event
	switch ev.Type {
	case "message":
		if ev.Role == "assistant" {
			// Deltas of one answer arrive as separate events: join them
			// without separators.
			if t.pending.text == "" {
				t.pending.key = "turn"
			}
			t.pending.text += ev.Content
		}
	case "tool_use":
		out = append(out, t.pending.asThought()...)
		if t.tools == nil {
			t.tools = map[string]string{}
		}
		t.tools[ev.ToolID] = ev.ToolName
		out = append(out, toolCallEvent(ev.ToolID, ev.ToolName, ev.Parameters))
	case "tool_result":
		output, isErr := ev.Output, ev.Status != "success"
		if isErr && ev.Error != nil && output == "" {
			output = ev.Error.Message
		}
		out = append(out, toolResultEvent(ev.ToolID, t.tools[ev.ToolID], output, nil, isErr))
	case "error":
		msg := ev.Message
		if msg == "" && ev.Error != nil {
			msg = ev.Error.Message
		}
		out = append(out, errorEvent("gemini", msg, false))
	case "result":
		out = append(out, t.pending.asMessage()...)
		if s, ok := lastMessage(out); ok {
			t.out.summary = s
		}
		if ev.Stats != nil {
			t.out.tokens += ev.Stats.TotalTokens
		}
		t.out.steps++
		if ev.Status != "" && ev.Status != "success" {
			msg := "Gemini CLI reported " + ev.Status
			if ev.Error != nil && ev.Error.Message != "" {
				msg = strings.TrimSpace(ev.Error.Message)
			}
			t.out.failed = msg
			out = append(out, errorEvent("gemini", msg, false))
		}
	}
	return out, signal{}
}

func (t *geminiTranslator) finish() []agent.Event {
	evs := t.pending.asMessage()
	if s, ok := lastMessage(evs); ok {
		t.out.summary = s
	}
	return evs
}

func (t *geminiTranslator) outcome() outcome { return t.out }
