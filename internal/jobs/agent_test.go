package jobs_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/builtin"
	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
	"github.com/corral-sh/corral/internal/llm/registry"
)

func builtinAgent(s *llmtest.Server) map[string]agent.Agent {
	reg := registry.New(registry.Config{AnthropicBaseURL: s.URL, AnthropicKey: "k",
		Retry: llm.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}})
	return map[string]agent.Agent{cpapi.AgentBuiltin: builtin.New(builtin.Config{Models: reg})}
}

// TestBuiltinIdleNudgeReachesTheAgent: the guardian's nudge on idleness
// travels the injection path: a system message in the log, in the next
// model call.
func TestBuiltinIdleNudgeReachesTheAgent(t *testing.T) {
	s := llmtest.New(t,
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "sleep 3; echo woke"})}},
		llmtest.Turn{
			Match: func(r llmtest.Request) bool {
				return strings.Contains(r.Last().TextOf(), "[Message from Corral]")
			},
			ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "nudged"})}},
	)
	e := newEnv(t, sqlite())
	opts := e.options()
	opts.IdleTimeout = 2500 * time.Millisecond
	opts.Agents = builtinAgent(s)
	m, _ := e.start(opts)
	j := e.final(m, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentBuiltin, Model: "anthropic/claude-x", Task: "wait"}).ID)
	if j.Status != cpapi.JobCompleted {
		t.Fatalf("job = %s %s\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
	var nudge bool
	for _, ev := range e.events(j.ID) {
		var d cpapi.MessageData
		if ev.Type == cpapi.EventMessage && json.Unmarshal(ev.Data, &d) == nil && d.Role == "system" {
			nudge = true
		}
	}
	if !nudge {
		t.Errorf("no nudge in the log:\n%s", e.dump(j.ID))
	}
}

// TestBuiltinBudgets: the step and token budgets end the job
// budget_exceeded, with the work so far in its artifacts.
func TestBuiltinBudgets(t *testing.T) {
	s := llmtest.New(t)
	s.Handle(func(llmtest.Request) (llmtest.Turn, bool) {
		return llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "echo step >> steps.txt"})},
			Usage: llmtest.Usage{Input: 1000, Output: 100}}, true
	})
	e := newEnv(t, sqlite())
	opts := e.options()
	opts.Agents = builtinAgent(s)
	opts.AgentBudget = agent.Budget{MaxSteps: 3}
	m, _ := e.start(opts)
	j := e.final(m, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentBuiltin, Model: "anthropic/claude-x", Task: "loop"}).ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != agent.ReasonBudget {
		t.Fatalf("step budget: %s %s\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
	if n := len(s.Completions()); n != 3 {
		t.Errorf("%d model calls under a budget of 3", n)
	}

	opts.AgentBudget = agent.Budget{MaxTokens: 2500}
	m2, _ := e.start(opts)
	j = e.final(m2, e.submit(m2, cpapi.JobRequest{Agent: cpapi.AgentBuiltin, Model: "anthropic/claude-x", Task: "loop"}).ID)
	if j.Status != cpapi.JobFailed || j.StatusReason != agent.ReasonBudget {
		t.Fatalf("token budget: %s %s\n%s", j.Status, j.StatusReason, e.dump(j.ID))
	}
}
