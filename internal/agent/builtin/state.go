package builtin

import (
	"encoding/json"
	"slices"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent/tools"
	"github.com/corral-sh/corral/internal/llm"
)

// continueText is what the model is told when it ended a turn without
// calling a tool or finish (deterministic, so a replay rebuilds it).
const continueText = "[automatic] You ended your turn without calling a tool. If the task is done, call finish with a summary; " +
	"otherwise continue working with the tools."

// maxIdleTurns is how many turns in a row without a tool call end the run
// (with the model's last text as the summary).
const maxIdleTurns = 3

// observationMax caps a tool result as the model sees it; the log keeps
// more (tools.MaxOutput).
const observationMax = 16 << 10

// state is the conversation as it stands, rebuilt from the job's log by
// applying its events in order. The live loop writes an event and then
// applies it, the same way a replay does, so a resumed run sees exactly
// what the crashed one saw.
type state struct {
	task  string
	msgs  []llm.Message
	parts []llm.Part // the next user message: tool results, then texts
	inbox []agentMsg // injected messages not yet shown to the model

	step      int       // model calls made (steps, condensations excluded)
	usage     llm.Usage // every call, condensations included
	ctxTokens int       // the last step's input + output tokens: the context's size
	open      []llm.Part
	idleTurns int
	lastText  string
	finished  *string

	log  []cpapi.Event // the whole log, for recall
	seen map[int64]bool
}

type agentMsg struct {
	seq  int64
	role string
	text string
}

func newState(task string) *state {
	return &state{task: task, msgs: []llm.Message{llm.UserText(taskText(task))}, seen: map[int64]bool{}}
}

// addInjected queues an injected message unless it was seen.
func (s *state) addInjected(m agentMsg) {
	if m.seq != 0 {
		if s.seen[m.seq] {
			return
		}
		s.seen[m.seq] = true
	}
	s.inbox = append(s.inbox, m)
}

// apply folds one event of the log into the state.
func (s *state) apply(ev cpapi.Event) {
	s.log = append(s.log, ev)
	switch ev.Type {
	case cpapi.EventMessage:
		var d cpapi.MessageData
		if json.Unmarshal(ev.Data, &d) == nil && (d.Role == "user" || d.Role == "system") {
			s.addInjected(agentMsg{seq: ev.Seq, role: d.Role, text: d.Text})
		}
	case cpapi.EventLLMRequest:
		var d cpapi.LLMRequestData
		if json.Unmarshal(ev.Data, &d) != nil || d.Purpose != "" {
			return
		}
		s.step = d.Step
		s.flush(d.Injected)
	case cpapi.EventLLMResponse:
		var d cpapi.LLMResponseData
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		s.usage = s.usage.Add(fromAPIUsage(d.Usage))
		if d.Purpose != "" {
			return
		}
		var content []llm.Part
		_ = json.Unmarshal(d.Content, &content)
		m := llm.Message{Role: llm.RoleAssistant, Content: content}
		s.msgs = append(s.msgs, m)
		s.ctxTokens = int(d.Usage.InputTokens + d.Usage.CacheReadTokens + d.Usage.CacheWriteTokens + d.Usage.OutputTokens)
		s.open = m.ToolCalls()
		if t := m.TextOf(); t != "" {
			s.lastText = t
		}
		if len(s.open) == 0 {
			s.idleTurns++
			s.parts = append(s.parts, llm.Text(continueText))
		} else {
			s.idleTurns = 0
		}
	case cpapi.EventToolResult:
		var d cpapi.ToolResultData
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		out, _ := tools.Truncate(d.Output, observationMax)
		if out == "" {
			out = "(no output)"
		}
		s.parts = append(s.parts, llm.Part{Type: llm.PartToolResult, CallID: d.CallID, Text: out, IsError: d.IsError})
		s.open = slices.DeleteFunc(s.open, func(p llm.Part) bool { return p.CallID == d.CallID })
		if d.Tool == "finish" && !d.IsError {
			var in struct {
				Summary string `json:"summary"`
			}
			for _, c := range s.lastCalls() {
				if c.CallID == d.CallID {
					_ = json.Unmarshal(c.Input, &in)
				}
			}
			s.finished = &in.Summary
		}
	case cpapi.EventCondensed:
		var d cpapi.CondensedData
		if json.Unmarshal(ev.Data, &d) != nil || d.Head < 1 || d.From <= d.Head || d.From > len(s.msgs) {
			return
		}
		kept := slices.Clone(s.msgs[:d.Head])
		kept = append(kept, llm.UserText(summaryText(d.Summary)))
		s.msgs = append(kept, s.msgs[d.From:]...)
		s.ctxTokens = d.TokensAfter
	}
}

// lastCalls are the tool calls of the last assistant message.
func (s *state) lastCalls() []llm.Part {
	for i := len(s.msgs) - 1; i >= 0; i-- {
		if s.msgs[i].Role == llm.RoleAssistant {
			return s.msgs[i].ToolCalls()
		}
	}
	return nil
}

// flush turns the pending parts and the injected messages a request
// included into the next user message.
func (s *state) flush(injected []int64) {
	parts := s.parts
	s.parts = nil
	for _, seq := range injected {
		i := slices.IndexFunc(s.inbox, func(m agentMsg) bool { return m.seq == seq })
		if i < 0 {
			continue
		}
		m := s.inbox[i]
		s.inbox = slices.Delete(s.inbox, i, i+1)
		parts = append(parts, llm.Text(injectedText(m)))
	}
	if len(parts) > 0 {
		s.msgs = append(s.msgs, llm.Message{Role: llm.RoleUser, Content: parts})
	}
}

// conversation is what the next request sends: the messages plus the
// pending user message (as flush would make it, with every queued
// injected message).
func (s *state) conversation(injected []int64) []llm.Message {
	msgs := slices.Clone(s.msgs)
	parts := slices.Clone(s.parts)
	for _, seq := range injected {
		for _, m := range s.inbox {
			if m.seq == seq {
				parts = append(parts, llm.Text(injectedText(m)))
			}
		}
	}
	if len(parts) > 0 {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: parts})
	}
	return msgs
}

func fromAPIUsage(u cpapi.Usage) llm.Usage {
	return llm.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
}

func toAPIUsage(u llm.Usage) cpapi.Usage {
	return cpapi.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
}
