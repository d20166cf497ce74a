// Package builtin is Corral's own coding agent: a ReAct loop in the control
// plane that asks a model (internal/llm) what to do next and runs the tools
// it calls (internal/agent/tools) in the job's sandbox through sandboxd, so
// model keys never enter the sandbox.
//
// Every step is an event: llm.request, llm.response (the model's whole
// answer), agent.thought or message, tool.call, tool.result,
// context.condensed. The conversation is a fold over those events
// (state.apply), and the live loop applies each event it writes the same
// way, so after a crash a new run rebuilds exactly the conversation the
// old one had and continues without repeating a finished tool call; a
// bash command that was running is found again in the shell's output.
//
// Context management follows seed 001 §5: observations are cut to their
// head and tail (the log keeps them whole); when the conversation nears
// the model's window its middle is replaced by a summary the model writes
// (the task and the recent turns stay); the recall tool searches the whole
// log. Budgets cap steps and tokens. Injected messages (people, the
// guardian's nudge) join the conversation before the next model call.
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/tools"
	"github.com/corral-sh/corral/internal/llm"
)

// Models resolves Corral model strings ("anthropic/claude-sonnet-4-5") to
// a provider and the provider's model name; internal/llm/registry does.
type Models interface {
	Resolve(model string) (llm.Provider, string, error)
}

// Config tunes the agent.
type Config struct {
	Models Models
	// MaxSteps is the default step budget (model calls) of a job; 0 means 200.
	MaxSteps int
	// ContextWindow returns a model's window in tokens; nil uses
	// llm.ContextWindow.
	ContextWindow func(model string) int
	// CondenseAt is the share of the window past which the conversation
	// is condensed; 0 means 0.75.
	CondenseAt float64
	// KeepRecent is how many recent messages condensation keeps; 0 means 6.
	KeepRecent int
	// MaxOutputTokens is the completion limit per call; 0 leaves the
	// provider's default.
	MaxOutputTokens int
}

// Agent is the built-in agent. It holds no per-job state; Run may be
// called for many jobs at once.
type Agent struct{ cfg Config }

// New returns the built-in agent.
func New(cfg Config) *Agent {
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = 200
	}
	if cfg.ContextWindow == nil {
		cfg.ContextWindow = llm.ContextWindow
	}
	if cfg.CondenseAt == 0 {
		cfg.CondenseAt = 0.75
	}
	if cfg.KeepRecent == 0 {
		cfg.KeepRecent = 6
	}
	return &Agent{cfg: cfg}
}

// run is one Run's working set.
type run struct {
	a     *Agent
	s     *agent.Session
	st    *state
	prov  llm.Provider
	model string // the provider's name for it
	full  string // Corral's model string
	tools *tools.Set
	bash  *tools.Bash
	env   *tools.Env

	// Screenshots of this run's tool results, by call id, newest last:
	// the log does not keep images, so only a live run shows them, and
	// only the most recent few (they are large).
	images     map[string][]llm.Part
	imageCalls []string

	// issued are the calls this run got from the model: they never ran
	// before. A call of the log that is not here may have run while the
	// control plane was down.
	issued map[string]bool
}

// keptImages is how many tool results keep their images in a request.
const keptImages = 3

// Run implements agent.Agent.
func (a *Agent) Run(ctx context.Context, s *agent.Session) (*agent.Result, error) {
	if a.cfg.Models == nil {
		return nil, agent.Fail(agent.ReasonLLM, "no model provider is configured", nil)
	}
	prov, name, err := a.cfg.Models.Resolve(s.Model)
	if err != nil {
		return nil, agent.Fail(agent.ReasonLLM, err.Error(), err)
	}
	r := &run{a: a, s: s, st: newState(s.Task), prov: prov, model: name, full: prov.Name() + "/" + name}
	r.env = &tools.Env{Sandbox: s.Sandbox, JobID: s.JobID, Workdir: s.Workdir, ShellEnv: s.Env, Recall: r.recall}
	if r.tools, r.bash, err = tools.ForSandbox(ctx, r.env); err != nil {
		return nil, err
	}
	r.images, r.issued = map[string][]llm.Part{}, map[string]bool{}
	for _, ev := range s.History {
		r.st.apply(ev)
	}
	return r.loop(ctx)
}

// record writes events to the log and folds them into the state.
func (r *run) record(ctx context.Context, evs ...agent.Event) error {
	if err := r.s.Emit(ctx, evs...); err != nil {
		return err
	}
	for _, ev := range evs {
		b, err := json.Marshal(ev.Data)
		if err != nil {
			return fmt.Errorf("builtin: encoding a %s event: %w", ev.Type, err)
		}
		r.st.apply(cpapi.Event{JobID: r.s.JobID, Time: time.Now(), Type: ev.Type, Data: b})
	}
	return nil
}

func (r *run) loop(ctx context.Context) (*agent.Result, error) {
	budget := r.s.Budget
	if budget.MaxSteps == 0 {
		budget.MaxSteps = r.a.cfg.MaxSteps
	}
	for {
		if res := r.result(); res != nil {
			return res, nil
		}
		// Calls of the last answer without a result: a run that crashed
		// mid-step (or a fresh answer). Run them in order.
		if len(r.st.open) > 0 {
			if err := r.runCalls(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if r.st.idleTurns >= maxIdleTurns {
			sum := r.st.lastText
			if sum == "" {
				sum = "The agent stopped without a summary."
			}
			if err := r.record(ctx, agent.Event{Type: cpapi.EventMessage, Data: cpapi.MessageData{Role: "agent", Text: sum}}); err != nil {
				return nil, err
			}
			return r.finalResult(sum), nil
		}
		if r.st.step >= budget.MaxSteps {
			return nil, agent.Fail(agent.ReasonBudget, fmt.Sprintf("the step budget (%d model calls) is spent", budget.MaxSteps), nil)
		}
		if budget.MaxTokens > 0 && r.st.usage.Total() >= budget.MaxTokens {
			return nil, agent.Fail(agent.ReasonBudget, fmt.Sprintf("the token budget (%d tokens) is spent", budget.MaxTokens), nil)
		}
		r.drainInbox()
		if err := r.step(ctx); err != nil {
			return nil, err
		}
	}
}

// result is the run's result once finish has been called.
func (r *run) result() *agent.Result {
	if r.st.finished == nil {
		return nil
	}
	return r.finalResult(*r.st.finished)
}

func (r *run) finalResult(summary string) *agent.Result {
	return &agent.Result{Summary: summary, Steps: r.st.step, Tokens: r.st.usage.Total()}
}

// drainInbox takes the messages injected so far without waiting.
func (r *run) drainInbox() {
	for {
		select {
		case m, ok := <-r.s.Inbox:
			if !ok {
				return
			}
			r.st.addInjected(agentMsg{seq: m.Seq, role: m.Role, text: m.Text})
		default:
			return
		}
	}
}

// step makes one model call and records its answer.
func (r *run) step(ctx context.Context) error {
	if err := r.maybeCondense(ctx, false); err != nil {
		return err
	}
	injected := make([]int64, 0, len(r.st.inbox))
	for _, m := range r.st.inbox {
		injected = append(injected, m.seq)
	}
	msgs := r.withImages(r.st.conversation(injected))
	step := r.st.step + 1
	req := llm.Request{Model: r.model, System: systemPrompt(r.s.Workdir), Messages: msgs, Tools: r.tools.Specs(),
		MaxTokens: r.a.cfg.MaxOutputTokens}
	start := time.Now()
	resp, err := r.prov.Complete(ctx, req, nil)
	if errors.Is(err, llm.ErrContextWindow) {
		// The estimate was off: condense harder and ask again.
		if cerr := r.maybeCondense(ctx, true); cerr != nil {
			return cerr
		}
		msgs = r.withImages(r.st.conversation(injected))
		req.Messages = msgs
		start = time.Now()
		resp, err = r.prov.Complete(ctx, req, nil)
	}
	if err != nil {
		return r.llmErr(ctx, err)
	}
	// The request goes into the log with its answer, in one write: a
	// call cut short by a crash left nothing, and is simply made again.
	reqEv := agent.Event{Type: cpapi.EventLLMRequest, Data: cpapi.LLMRequestData{
		Step: step, Model: r.full, Messages: len(msgs), EstTokens: llm.EstimateTokens(msgs), Injected: injected}}
	return r.recordAnswer(ctx, reqEv, step, resp, time.Since(start))
}

// recordAnswer writes the model's answer: the response itself (what a
// replay rebuilds from) and its text for people.
func (r *run) recordAnswer(ctx context.Context, reqEv agent.Event, step int, resp *llm.Response, took time.Duration) error {
	content, err := json.Marshal(resp.Message.Content)
	if err != nil {
		return fmt.Errorf("builtin: encoding an answer: %w", err)
	}
	evs := []agent.Event{reqEv, {Type: cpapi.EventLLMResponse, Data: cpapi.LLMResponseData{
		Step: step, Model: r.full, Content: content, StopReason: resp.StopReason,
		Usage: toAPIUsage(resp.Usage), DurationMS: took.Milliseconds()}}}
	if text := resp.Message.TextOf(); text != "" {
		if len(resp.Message.ToolCalls()) > 0 {
			evs = append(evs, agent.Event{Type: cpapi.EventAgentThought, Data: cpapi.ThoughtData{Text: text}})
		} else {
			evs = append(evs, agent.Event{Type: cpapi.EventMessage, Data: cpapi.MessageData{Role: "agent", Text: text}})
		}
	}
	// The calls go into the log with the answer (one append): a run that
	// resumes finds them started, and bash tells by its start marker
	// whether a command really began.
	for _, c := range resp.Message.ToolCalls() {
		r.issued[c.CallID] = true
		evs = append(evs, agent.Event{Type: cpapi.EventToolCall, Data: cpapi.ToolCallData{CallID: c.CallID, Tool: c.Tool, Input: callInput(c.Input)}})
	}
	return r.record(ctx, evs...)
}

// llmErr maps a failed model call to the job's failure.
func (r *run) llmErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var le *llm.Error
	if errors.As(err, &le) {
		return agent.Fail(agent.ReasonLLM, le.Error(), err)
	}
	return agent.Fail(agent.ReasonLLM, "the model call failed", err)
}

// runCalls runs the open tool calls of the last answer, in order.
func (r *run) runCalls(ctx context.Context) error {
	calls := r.st.lastCalls()
	for _, c := range r.st.open {
		idx := 0
		for i, lc := range calls {
			if lc.CallID == c.CallID {
				idx = i
			}
		}
		key := fmt.Sprintf("s%dc%d", r.st.step, idx)
		if err := r.runCall(ctx, key, c); err != nil {
			return err
		}
		if r.st.finished != nil {
			break
		}
	}
	return nil
}

// runCall runs one tool call: the tool, then tool.result (tool.call is
// written with the model's answer). A call of the log that this run did
// not get from the model may have been running when the control plane
// died: bash looks for its end in the shell's output before running
// anything again.
func (r *run) runCall(ctx context.Context, key string, c llm.Part) error {
	logged := r.called(c.CallID)
	started := logged && !r.issued[c.CallID] // maybe ran before a crash
	if !logged {
		if err := r.record(ctx, agent.Event{Type: cpapi.EventToolCall, Data: cpapi.ToolCallData{
			CallID: c.CallID, Tool: c.Tool, Input: callInput(c.Input)}}); err != nil {
			return err
		}
	}
	var (
		res tools.Result
		err error
	)
	switch {
	case !json.Valid(c.Input) || !isObject(c.Input):
		res = tools.Errorf("the arguments of %s are not a JSON object: %s", c.Tool, clip(string(c.Input), 500))
	case c.Tool == "bash" && started:
		var found bool
		if res, found, err = r.bash.Recover(ctx, key, c.Input); err == nil && !found {
			res, err = r.runBash(ctx, key, c.Input)
		}
	case c.Tool == "bash":
		res, err = r.runBash(ctx, key, c.Input)
	default:
		res, err = r.tools.Run(ctx, c.Tool, c.Input)
	}
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("builtin: %s: %w", c.Tool, err)
	}
	if len(res.Images) > 0 {
		r.images[c.CallID] = res.Images
		r.imageCalls = append(r.imageCalls, c.CallID)
		if len(r.imageCalls) > keptImages {
			delete(r.images, r.imageCalls[0])
			r.imageCalls = r.imageCalls[1:]
		}
	}
	out, cut := tools.Truncate(res.Output, tools.MaxOutput)
	evs := []agent.Event{{Type: cpapi.EventToolResult, Data: cpapi.ToolResultData{
		CallID: c.CallID, Tool: c.Tool, Output: out, ExitCode: res.ExitCode, IsError: res.IsError,
		Truncated: cut || len(res.Output) > observationMax, ImageCount: len(res.Images)}}}
	if res.Finish != nil {
		evs = append(evs, agent.Event{Type: cpapi.EventMessage, Data: cpapi.MessageData{Role: "agent", Text: *res.Finish}})
	}
	return r.record(ctx, evs...)
}

// withImages attaches the kept screenshots to their tool results (on
// copies: the state's messages stay as the log rebuilds them).
func (r *run) withImages(msgs []llm.Message) []llm.Message {
	if len(r.images) == 0 {
		return msgs
	}
	for i, m := range msgs {
		var parts []llm.Part
		for j, p := range m.Content {
			if imgs, ok := r.images[p.CallID]; ok && p.Type == llm.PartToolResult {
				if parts == nil {
					parts = append([]llm.Part{}, m.Content...)
				}
				parts[j].Images = imgs
			}
		}
		if parts != nil {
			msgs[i].Content = parts
		}
	}
	return msgs
}

// runBash validates a bash call's input and runs it under key.
func (r *run) runBash(ctx context.Context, key string, input json.RawMessage) (tools.Result, error) {
	if res, ok := r.tools.Validate("bash", input); !ok {
		return res, nil
	}
	return r.bash.RunCall(ctx, key, input)
}

// called reports whether the log has call id's tool.call.
func (r *run) called(id string) bool {
	for i := len(r.st.log) - 1; i >= 0; i-- {
		ev := r.st.log[i]
		switch ev.Type {
		case cpapi.EventToolCall:
			var d cpapi.ToolCallData
			if json.Unmarshal(ev.Data, &d) == nil && d.CallID == id {
				return true
			}
		case cpapi.EventLLMResponse:
			return false // calls of this answer come after it
		}
	}
	return false
}

// callInput is a call's input for the log: the JSON the model wrote, or
// that text as a JSON string when it is not valid JSON.
func callInput(in json.RawMessage) json.RawMessage {
	if json.Valid(in) {
		return in
	}
	b, _ := json.Marshal(string(in))
	return b
}

func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
