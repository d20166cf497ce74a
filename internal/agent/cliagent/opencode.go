package cliagent

import (
	"encoding/json"
	"strings"

	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/gateway"
)

// openCode runs OpenCode (opencode-ai) non-interactively:
//
//	opencode run --format json --auto [-m PROVIDER/MODEL] [--session ID] -- PROMPT
//
// Its configuration comes whole from OPENCODE_CONFIG_CONTENT: the
// provider (anthropic or openai, after the job's model) with the
// gateway's forward as its baseURL and the placeholder key, the model as
// both the main and the small model (so titles use the same provider),
// no sharing and no auto-update; model metadata is not fetched (no
// network). --auto approves every permission; the sandbox is the
// boundary. opencode run has no streaming input: a message injected while
// it runs is queued and sent as `opencode run --session ID` when it ends.
type openCode struct{}

func (openCode) name() string { return "opencode" }

// OpenCode speaks to either provider; with no model it uses Anthropic's.
func (openCode) provider(model string) (string, string, error) {
	return eitherProvider(model, gateway.Anthropic, gateway.OpenAI)
}

func (openCode) streaming() bool { return false }

// opencodeDefaults are the models when the job names none.
var opencodeDefaults = map[string]string{gateway.Anthropic: "claude-sonnet-4-5", gateway.OpenAI: "gpt-5"}

func (openCode) command(in runInput) (command, error) {
	model := in.model
	if model == "" {
		model = opencodeDefaults[in.provider]
	}
	base := in.baseURL
	if in.provider == gateway.Anthropic {
		base += "/v1" // the AI SDK's Anthropic base includes the version
	}
	full := in.provider + "/" + model
	cfg := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"autoupdate":  false,
		"share":       "disabled",
		"model":       full,
		"small_model": full,
		"provider": map[string]any{
			in.provider: map[string]any{
				"options": map[string]any{"baseURL": base, "apiKey": gateway.Placeholder},
				"models":  map[string]any{model: map[string]any{}},
			},
		},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return command{}, err
	}
	args := []string{"run", "--format", "json", "--auto", "-m", full}
	if in.session != "" {
		args = append(args, "--session", in.session)
	}
	args = append(args, "--", in.prompt)
	return command{path: "opencode", args: args, env: map[string]string{
		"OPENCODE_CONFIG_CONTENT":          string(b),
		"OPENCODE_DISABLE_MODELS_FETCH":    "1",
		"OPENCODE_DISABLE_AUTOUPDATE":      "1",
		"OPENCODE_DISABLE_SHARE":           "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
	}}, nil
}

func (openCode) newTranslator(int) translator { return &openCodeTranslator{} }

type openCodeTranslator struct {
	out     outcome
	pending pendingText
}

type openCodeEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      struct {
		Type      string `json:"type"`
		MessageID string `json:"messageID"`
		Text      string `json:"text"`
		Tool      string `json:"tool"`
		CallID    string `json:"callID"`
		Reason    string `json:"reason"`
		State     struct {
			Status   string          `json:"status"`
			Input    json.RawMessage `json:"input"`
			Output   string          `json:"output"`
			Error    string          `json:"error"`
			Metadata struct {
				Exit *int `json:"exit"`
			} `json:"metadata"`
		} `json:"state"`
		Tokens struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
			Cache  struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
}

func (t *openCodeTranslator) translate(line []byte) ([]agent.Event, signal) {
	var ev openCodeEvent
	if json.Unmarshal(line, &ev) != nil {
		return nil, signal{}
	}
	if ev.SessionID != "" {
		t.out.session = ev.SessionID
	}
	var out []agent.Event
	p := ev.Part
	switch ev.Type {
	case "text":
		out = append(out, t.pending.add(p.MessageID, p.Text)...)
	case "reasoning":
		if strings.TrimSpace(p.Text) != "" {
			out = append(out, thoughtEvent(p.Text))
		}
	case "tool_use":
		out = append(out, t.pending.asThought()...)
		out = append(out, toolCallEvent(p.CallID, p.Tool, p.State.Input))
		output, isErr := p.State.Output, p.State.Status == "error"
		if isErr && output == "" {
			output = p.State.Error
		}
		exit := p.State.Metadata.Exit
		if exit != nil && *exit != 0 {
			isErr = true
		}
		out = append(out, toolResultEvent(p.CallID, p.Tool, output, exit, isErr))
	case "step_finish":
		if p.Reason == "tool-calls" {
			out = append(out, t.pending.asThought()...)
		} else {
			out = append(out, t.pending.asMessage()...)
			if s, ok := lastMessage(out); ok {
				t.out.summary = s
			}
		}
		t.out.steps++
		t.out.tokens += p.Tokens.Input + p.Tokens.Output + p.Tokens.Cache.Read + p.Tokens.Cache.Write
	case "error":
		msg := "OpenCode reported an error"
		if ev.Error != nil {
			msg = ev.Error.Name
			if ev.Error.Data.Message != "" {
				msg = ev.Error.Data.Message
			}
		}
		t.out.failed = msg
		out = append(out, errorEvent("opencode", msg, false))
	}
	return out, signal{}
}

func (t *openCodeTranslator) finish() []agent.Event {
	evs := t.pending.asMessage()
	if s, ok := lastMessage(evs); ok {
		t.out.summary = s
	}
	return evs
}

func (t *openCodeTranslator) outcome() outcome { return t.out }
