package cliagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent"
)

// A translator turns one run's native events (one JSON object per line of
// the CLI's stdout) into Corral events, and keeps what the run has said
// about its end. It is deterministic: fed the raw events of the job's log
// again, a fresh translator reaches the same state, which is how a
// resumed run carries on (its output is then discarded).
type translator interface {
	// translate handles one native event.
	translate(ev []byte) ([]agent.Event, signal)
	// finish flushes what is held back (text that waited to learn whether
	// tool calls follow it) once the run is over.
	finish() []agent.Event
	// outcome is what the events said so far.
	outcome() outcome
}

// signal is what a native event tells the runner beyond its translation.
type signal struct {
	took     int  // user messages the CLI took in (Claude's replays)
	turnDone bool // a turn ended (Claude's result)
}

// outcome is what a run's events said about how it went.
type outcome struct {
	session string // the CLI's session or thread id, to resume it
	summary string // the final answer
	failed  string // set when the CLI reported a failure: its message
	tokens  int64  // input + output tokens reported
	steps   int    // model calls or turns reported
}

// Bounds of what one translated event carries.
const (
	maxOutput = 64 << 10 // a tool's output, a message
	maxInput  = 64 << 10 // a tool call's input JSON
)

// clip shortens s to about n bytes, keeping its head and tail.
func clip(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	head, tail := s[:n/2], s[len(s)-n/2:]
	for !utf8.ValidString(head) && len(head) > 0 {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) && len(tail) > 0 {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n[… %d bytes cut by corral …]\n%s", head, len(s)-len(head)-len(tail), tail), true
}

// inputJSON is a tool input for a tool.call event: the JSON as given when
// it is an object of reasonable size, else a JSON string.
func inputJSON(raw json.RawMessage) json.RawMessage {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	if len(raw) <= maxInput && json.Valid(raw) {
		return raw
	}
	s, _ := clip(string(raw), maxInput)
	b, _ := json.Marshal(s)
	return b
}

// objectInput marshals v as a tool input (without escaping <, > and &,
// which shell commands are full of).
func objectInput(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage("{}")
	}
	return inputJSON(bytes.TrimSpace(b.Bytes()))
}

// Event constructors.

func messageEvent(text string) agent.Event {
	text, _ = clip(text, maxOutput)
	return agent.Event{Type: cpapi.EventMessage, Data: cpapi.MessageData{Role: "agent", Text: text}}
}

func thoughtEvent(text string) agent.Event {
	text, _ = clip(text, maxOutput)
	return agent.Event{Type: cpapi.EventAgentThought, Data: cpapi.ThoughtData{Text: text}}
}

func toolCallEvent(id, tool string, input json.RawMessage) agent.Event {
	return agent.Event{Type: cpapi.EventToolCall, Data: cpapi.ToolCallData{CallID: id, Tool: tool, Input: inputJSON(input)}}
}

func toolResultEvent(id, tool, output string, exit *int, isError bool) agent.Event {
	output, cut := clip(output, maxOutput)
	return agent.Event{Type: cpapi.EventToolResult, Data: cpapi.ToolResultData{
		CallID: id, Tool: tool, Output: output, ExitCode: exit, IsError: isError, Truncated: cut,
	}}
}

// ErrorData is the data of the error events the CLI agents write: what
// the CLI reported (or what went wrong around it), and which agent.
type ErrorData struct {
	Message string `json:"message"`
	Agent   string `json:"agent,omitempty"`
	// Fatal is set when the error ended the run.
	Fatal bool `json:"fatal,omitempty"`
}

func errorEvent(agentName, msg string, fatal bool) agent.Event {
	msg, _ = clip(strings.TrimSpace(msg), maxOutput)
	return agent.Event{Type: cpapi.EventError, Data: ErrorData{Message: msg, Agent: agentName, Fatal: fatal}}
}

func intPtr(n int) *int { return &n }

// pendingText holds an agent's text until the next event says what it
// was: a thought, when tool calls follow it in the same turn, or a
// message, when the turn ends with it.
type pendingText struct {
	text string
	key  string // the assistant message (or turn) it belongs to
}

func (p *pendingText) add(key, text string) []agent.Event {
	var out []agent.Event
	if p.text != "" && p.key != key {
		out = p.asMessage()
	}
	if p.text != "" {
		p.text += "\n\n"
	}
	p.text += text
	p.key = key
	return out
}

func (p *pendingText) asThought() []agent.Event {
	if strings.TrimSpace(p.text) == "" {
		p.text = ""
		return nil
	}
	ev := thoughtEvent(p.text)
	p.text = ""
	return []agent.Event{ev}
}

// asMessage flushes the text as the agent's message and returns it too.
func (p *pendingText) asMessage() []agent.Event {
	if strings.TrimSpace(p.text) == "" {
		p.text = ""
		return nil
	}
	ev := messageEvent(p.text)
	p.text = ""
	return []agent.Event{ev}
}

// lastMessage returns the text of the last message event in evs, if any.
func lastMessage(evs []agent.Event) (string, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		if d, ok := evs[i].Data.(cpapi.MessageData); ok {
			return d.Text, true
		}
	}
	return "", false
}
