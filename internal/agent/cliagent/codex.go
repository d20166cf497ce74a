package cliagent

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/gateway"
)

// codex runs the Codex CLI (@openai/codex) non-interactively:
//
//	codex exec [resume THREAD] --json --dangerously-bypass-approvals-and-sandbox
//	      --skip-git-repo-check -c model_provider="corral" -c model_providers.corral.…
//	      [-m MODEL] -- PROMPT
//
// The model provider "corral" points Codex at the gateway's forward with
// the Responses API over plain HTTP (Codex would try a WebSocket first).
// codex exec has no streaming input: a message injected while it runs is
// queued, and when the run ends Corral continues the same thread with
// `codex exec resume THREAD` and the queued messages as the prompt.
type codex struct{}

func (codex) name() string { return "codex" }

func (codex) provider(model string) (string, string, error) {
	return oneProvider(model, gateway.OpenAI)
}

func (codex) streaming() bool { return false }

// codexKeyEnv holds the placeholder key Codex sends.
const codexKeyEnv = "CORRAL_LLM_API_KEY"

func (codex) command(in runInput) (command, error) {
	args := []string{"exec"}
	if in.session != "" {
		args = append(args, "resume")
	}
	args = append(args, "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
		"-c", `model_provider="corral"`,
		"-c", `model_providers.corral.name="Corral gateway"`,
		"-c", "model_providers.corral.base_url="+strconv.Quote(in.baseURL),
		"-c", `model_providers.corral.env_key="`+codexKeyEnv+`"`,
		"-c", `model_providers.corral.wire_api="responses"`,
		"-c", `model_providers.corral.supports_websockets=false`,
		"-c", "check_for_update_on_startup=false")
	if in.model != "" {
		args = append(args, "-m", in.model)
	}
	if in.session != "" {
		args = append(args, in.session)
	}
	args = append(args, "--", in.prompt)
	return command{path: "codex", args: args, env: map[string]string{codexKeyEnv: gateway.Placeholder}}, nil
}

func (codex) newTranslator(run int) translator { return &codexTranslator{run: run} }

type codexTranslator struct {
	run     int
	out     outcome
	pending pendingText
	started map[string]bool // items whose tool.call was written
}

type codexItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Message          string          `json:"message"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Status           string          `json:"status"`
	Changes          json.RawMessage `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            json.RawMessage `json:"error"`
	Query            string          `json:"query"`
	Items            []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	} `json:"items"`
}

type codexEvent struct {
	Type     string     `json:"type"`
	ThreadID string     `json:"thread_id"`
	Item     *codexItem `json:"item"`
	Message  string     `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

// callID makes an item id unique in the job: items count from item_0 in
// every run.
func (t *codexTranslator) callID(id string) string {
	if t.run <= 1 {
		return id
	}
	return fmt.Sprintf("%s.r%d", id, t.run)
}

func (t *codexTranslator) translate(line []byte) ([]agent.Event, signal) {
	var ev codexEvent
	if json.Unmarshal(line, &ev) != nil {
		return nil, signal{}
	}
	var out []agent.Event
	switch ev.Type {
	case "thread.started":
		t.out.session = ev.ThreadID
	case "item.started", "item.updated":
		if ev.Item != nil && ev.Type == "item.started" {
			out = append(out, t.call(ev.Item)...)
		}
	case "item.completed":
		if ev.Item != nil {
			out = append(out, t.completed(ev.Item)...)
		}
	case "turn.completed":
		out = append(out, t.pending.asMessage()...)
		if s, ok := lastMessage(out); ok {
			t.out.summary = s
		}
		t.out.steps++
		if ev.Usage != nil {
			t.out.tokens += ev.Usage.InputTokens + ev.Usage.OutputTokens
		}
		t.out.failed = ""
	case "turn.failed":
		out = append(out, t.pending.asMessage()...)
		msg := "the turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			msg = strings.TrimSpace(ev.Error.Message)
		}
		t.out.failed = msg
		out = append(out, errorEvent("codex", msg, false))
	case "error":
		out = append(out, errorEvent("codex", ev.Message, false))
	}
	return out, signal{}
}

// call writes the tool.call of an item that is a tool use, once.
func (t *codexTranslator) call(it *codexItem) []agent.Event {
	var tool string
	var input json.RawMessage
	switch it.Type {
	case "command_execution":
		tool, input = "shell", objectInput(map[string]string{"command": it.Command})
	case "file_change":
		tool, input = "apply_patch", objectInput(map[string]json.RawMessage{"changes": it.Changes})
	case "mcp_tool_call":
		tool, input = it.Server+"."+it.Tool, it.Arguments
	case "web_search":
		tool, input = "web_search", objectInput(map[string]string{"query": it.Query})
	default:
		return nil
	}
	if t.started == nil {
		t.started = map[string]bool{}
	}
	if t.started[it.ID] {
		return nil
	}
	t.started[it.ID] = true
	out := t.pending.asThought()
	return append(out, toolCallEvent(t.callID(it.ID), tool, input))
}

func (t *codexTranslator) completed(it *codexItem) []agent.Event {
	switch it.Type {
	case "agent_message":
		return t.pending.add("turn", it.Text)
	case "reasoning":
		if strings.TrimSpace(it.Text) == "" {
			return nil
		}
		return []agent.Event{thoughtEvent(it.Text)}
	case "todo_list":
		var b strings.Builder
		for _, x := range it.Items {
			mark := "[ ]"
			if x.Completed {
				mark = "[x]"
			}
			fmt.Fprintf(&b, "%s %s\n", mark, x.Text)
		}
		return []agent.Event{thoughtEvent("Plan:\n" + b.String())}
	case "error":
		return []agent.Event{errorEvent("codex", it.Message, false)}
	}
	out := t.call(it)
	id := t.callID(it.ID)
	failed := it.Status == "failed" || it.Status == "declined"
	switch it.Type {
	case "command_execution":
		isErr := failed || (it.ExitCode != nil && *it.ExitCode != 0)
		out = append(out, toolResultEvent(id, "shell", it.AggregatedOutput, it.ExitCode, isErr))
	case "file_change":
		out = append(out, toolResultEvent(id, "apply_patch", "patch "+it.Status, nil, failed))
	case "mcp_tool_call":
		res := string(it.Result)
		if failed && len(it.Error) > 0 && string(it.Error) != "null" {
			res = string(it.Error)
		}
		out = append(out, toolResultEvent(id, it.Server+"."+it.Tool, res, nil, failed))
	case "web_search":
		out = append(out, toolResultEvent(id, "web_search", "", nil, failed))
	}
	return out
}

func (t *codexTranslator) finish() []agent.Event {
	evs := t.pending.asMessage()
	if s, ok := lastMessage(evs); ok {
		t.out.summary = s
	}
	return evs
}

func (t *codexTranslator) outcome() outcome { return t.out }
