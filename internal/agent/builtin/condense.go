package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/llm"
)

// Condensation tuning.
const (
	condensePartMax = 2000 // bytes of one part in the text the summariser reads
	condenseShare   = 0.5  // of the window, the most the summariser is sent
)

// tokens estimates the size of the next request's conversation: the last
// answer's reported usage plus an estimate of what came after it.
func (r *run) tokens() int {
	if r.st.ctxTokens > 0 {
		pending := llm.Message{Role: llm.RoleUser, Content: r.st.parts}
		return r.st.ctxTokens + llm.EstimateTokens([]llm.Message{pending})
	}
	return llm.EstimateTokens(r.st.conversation(nil))
}

// maybeCondense replaces the middle of the conversation with a summary
// the model writes when the conversation nears the window (or at once
// when force: the provider said it did not fit). The task (the first
// message) and the recent turns stay; the kept tail starts at an
// assistant message, so tool calls and their results stay together.
func (r *run) maybeCondense(ctx context.Context, force bool) error {
	window := r.a.cfg.ContextWindow(r.full)
	before := r.tokens()
	if !force && float64(before) < float64(window)*r.a.cfg.CondenseAt {
		return nil
	}
	keep := r.a.cfg.KeepRecent
	if force {
		keep = max(keep/2, 2)
	}
	msgs := r.st.msgs
	const head = 1
	from := len(msgs) - keep
	for from < len(msgs) && msgs[from].Role != llm.RoleAssistant {
		from++
	}
	if from >= len(msgs) || from <= head+1 {
		if force {
			return agent.Fail(agent.ReasonLLM, "the conversation does not fit the model's context window even after condensing", nil)
		}
		return nil // nothing old enough to condense yet
	}
	text := renderForSummary(msgs[head:from], int(float64(window)*condenseShare)*4)
	req := llm.Request{Model: r.model, System: condenseSystem, MaxTokens: r.a.cfg.MaxOutputTokens,
		Messages: []llm.Message{llm.UserText(fmt.Sprintf("The agent's task:\n%s\n\nThe conversation to summarise:\n%s\n\nWrite the summary now.", r.st.task, text))}}
	start := time.Now()
	resp, err := r.prov.Complete(ctx, req, nil)
	if err != nil {
		return r.llmErr(ctx, err)
	}
	content, _ := json.Marshal(resp.Message.Content)
	summary := strings.TrimSpace(resp.Message.TextOf())
	if summary == "" {
		summary = "(the summariser returned nothing; use recall to look up earlier work)"
	}
	after := append([]llm.Message{msgs[0], llm.UserText(summaryText(summary))}, msgs[from:]...)
	return r.record(ctx,
		agent.Event{Type: cpapi.EventLLMRequest, Data: cpapi.LLMRequestData{
			Step: r.st.step, Model: r.full, Messages: 1, EstTokens: llm.EstimateTokens(req.Messages), Purpose: "condense"}},
		agent.Event{Type: cpapi.EventLLMResponse, Data: cpapi.LLMResponseData{Step: r.st.step, Model: r.full, Content: content,
			StopReason: resp.StopReason, Usage: toAPIUsage(resp.Usage), DurationMS: time.Since(start).Milliseconds(), Purpose: "condense"}},
		agent.Event{Type: cpapi.EventCondensed, Data: cpapi.CondensedData{Summary: summary, Head: head, From: from,
			Dropped: from - head, TokensBefore: before, TokensAfter: llm.EstimateTokens(after)}})
}

// renderForSummary writes messages as plain text for the summariser, each
// part cut to condensePartMax and the whole to limit bytes.
func renderForSummary(msgs []llm.Message, limit int) string {
	var b strings.Builder
	for _, m := range msgs {
		for _, p := range m.Content {
			switch p.Type {
			case llm.PartText:
				fmt.Fprintf(&b, "[%s] %s\n", m.Role, clip(p.Text, condensePartMax))
			case llm.PartToolCall:
				fmt.Fprintf(&b, "[tool call %s] %s\n", p.Tool, clip(string(p.Input), condensePartMax))
			case llm.PartToolResult:
				status := "result"
				if p.IsError {
					status = "error"
				}
				fmt.Fprintf(&b, "[tool %s] %s\n", status, clip(p.Text, condensePartMax))
			case llm.PartImage:
				b.WriteString("[image]\n")
			}
		}
	}
	s := b.String()
	if len(s) > limit && limit > 0 {
		half := limit / 2
		s = s[:half] + "\n[…]\n" + s[len(s)-half:]
	}
	return strings.ToValidUTF8(s, "")
}
