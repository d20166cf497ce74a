package builtin_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/builtin"
	"github.com/corral-sh/corral/internal/eventlog"
	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
	"github.com/corral-sh/corral/internal/llm/registry"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
	"github.com/corral-sh/corral/internal/store"
)

// timed wraps a provider and records how long each completion took, so
// the benchmark can take model latency out of a step's time.
type timed struct {
	llm.Provider
	mu     sync.Mutex
	starts []time.Time     // when each call began
	spent  []time.Duration // model time before each call began
	total  time.Duration
}

func (p *timed) Complete(ctx context.Context, req llm.Request, on func(llm.Delta)) (*llm.Response, error) {
	start := time.Now()
	p.mu.Lock()
	p.starts, p.spent = append(p.starts, start), append(p.spent, p.total)
	p.mu.Unlock()
	resp, err := p.Provider.Complete(ctx, req, on)
	p.mu.Lock()
	p.total += time.Since(start)
	p.mu.Unlock()
	return resp, err
}

type timedModels struct {
	reg *registry.Registry
	p   *timed
}

func (m *timedModels) Resolve(model string) (llm.Provider, string, error) {
	p, name, err := m.reg.Resolve(model)
	if err != nil {
		return nil, "", err
	}
	m.p.Provider = p
	return m.p, name, nil
}

// BenchmarkAgentStep measures the built-in agent's own cost per step,
// model latency excluded: building the request, appending the step's
// events to a real SQLite store through the broker (llm.request,
// llm.response, tool.call, tool.result), dispatching a bash call (`true`)
// to a real sandboxd and reading its result. It reports the p50 and p95
// of that overhead, events per step, and the cost of one condensation.
func BenchmarkAgentStep(b *testing.B) {
	ctx := context.Background()
	d := sandboxdtest.Start(b, sandboxdtest.Options{Config: sandboxd.Config{Root: "/", Token: "tok", Logger: quiet}})
	cl, err := client.New(d.URL, client.WithToken("tok"))
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	br, err := eventlog.New(ctx, st, eventlog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	tn, err := st.CreateTenant(ctx, store.Tenant{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}

	steps := b.N
	s := llmtest.New(b)
	n := 0
	s.Handle(func(llmtest.Request) (llmtest.Turn, bool) {
		n++
		if n > steps {
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "done"})}}, true
		}
		return llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "true"})}}, true
	})
	prov := &timed{}
	models := &timedModels{reg: registry.New(registry.Config{AnthropicBaseURL: s.URL, AnthropicKey: "k"}), p: prov}
	ag := builtin.New(builtin.Config{Models: models})
	j, err := st.CreateJob(ctx, store.Job{TenantID: tn.ID, Spec: json.RawMessage(`{}`)})
	if err != nil {
		b.Fatal(err)
	}
	var (
		events     int
		appendTime time.Duration
		appends    int
		toolTime   time.Duration
		callAt     time.Time
	)
	emit := func(ctx context.Context, evs ...agent.Event) error {
		in := make([]store.EventInput, 0, len(evs))
		for _, ev := range evs {
			data, _ := json.Marshal(ev.Data)
			in = append(in, store.EventInput{Type: ev.Type, Data: data})
			if ev.Type == cpapi.EventToolResult {
				toolTime += time.Since(callAt)
			}
		}
		events += len(evs)
		t0 := time.Now()
		_, err := br.Append(ctx, j.ID, tn.ID, in)
		appendTime += time.Since(t0)
		appends++
		if evs[len(evs)-1].Type == cpapi.EventToolCall {
			callAt = time.Now() // the tool runs from here to its result
		}
		return err
	}
	sess := &agent.Session{JobID: j.ID, Task: "bench", Model: "anthropic/claude-sonnet-4-5", Sandbox: cl, Workdir: b.TempDir(),
		Emit: emit, Budget: agent.Budget{MaxSteps: steps + 10}}
	b.ResetTimer()
	if _, err := ag.Run(ctx, sess); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	// A step runs from one model call's start to the next's; its
	// overhead is that minus the model's time.
	var over []float64
	for i := 1; i < len(prov.starts); i++ {
		wall := prov.starts[i].Sub(prov.starts[i-1])
		model := prov.spent[i] - prov.spent[i-1]
		over = append(over, float64(wall-model)/float64(time.Millisecond))
	}
	calls := float64(len(prov.starts))
	if len(over) > 0 {
		slices.Sort(over)
		b.ReportMetric(over[len(over)/2], "overhead-ms/step-p50")
		b.ReportMetric(over[len(over)*95/100], "overhead-ms/step-p95")
	}
	b.ReportMetric(float64(events)/calls, "events/step")
	b.ReportMetric(float64(appendTime)/float64(time.Millisecond)/calls, "append-ms/step")
	b.ReportMetric(float64(toolTime)/float64(time.Millisecond)/calls, "bash-true-ms/step")
}

// BenchmarkCondense measures one condensation of a long conversation
// against the scripted model (its latency included: it is one model
// call), and how much it shrinks.
func BenchmarkCondense(b *testing.B) {
	ctx := context.Background()
	d := sandboxdtest.Start(b, sandboxdtest.Options{Config: sandboxd.Config{Root: "/", Token: "tok", Logger: quiet}})
	cl, err := client.New(d.URL, client.WithToken("tok"))
	if err != nil {
		b.Fatal(err)
	}
	s := llmtest.New(b)
	s.Handle(func(r llmtest.Request) (llmtest.Turn, bool) {
		return llmtest.Turn{Text: "SUMMARY of the work so far."}, true
	})
	reg := registry.New(registry.Config{AnthropicBaseURL: s.URL, AnthropicKey: "k", ContextWindow: 100_000})
	ag := builtin.New(builtin.Config{Models: reg, ContextWindow: reg.ContextWindow})
	// A history of 40 steps with 8 KiB outputs (~80k tokens: past 75%).
	var hist []cpapi.Event
	seq := int64(0)
	add := func(typ string, data any) {
		seq++
		raw, _ := json.Marshal(data)
		hist = append(hist, cpapi.Event{Seq: seq, Type: typ, Data: raw})
	}
	out := make([]byte, 8<<10)
	for i := range out {
		out[i] = 'a' + byte(i%26)
	}
	for i := 1; i <= 40; i++ {
		id := "call_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		content, _ := json.Marshal([]llm.Part{{Type: llm.PartToolCall, CallID: id, Tool: "bash", Input: json.RawMessage(`{"command":"cat big"}`)}})
		add(cpapi.EventLLMRequest, cpapi.LLMRequestData{Step: i})
		add(cpapi.EventLLMResponse, cpapi.LLMResponseData{Step: i, Content: content, Usage: cpapi.Usage{InputTokens: int64(2100 * i), OutputTokens: 20}})
		add(cpapi.EventToolCall, cpapi.ToolCallData{CallID: id, Tool: "bash", Input: json.RawMessage(`{"command":"cat big"}`)})
		add(cpapi.EventToolResult, cpapi.ToolResultData{CallID: id, Tool: "bash", Output: string(out)})
	}
	b.ResetTimer()
	for range b.N {
		var condensed cpapi.CondensedData
		emit := func(_ context.Context, evs ...agent.Event) error {
			for _, ev := range evs {
				if ev.Type == cpapi.EventCondensed {
					condensed = ev.Data.(cpapi.CondensedData)
				}
				if ev.Type == cpapi.EventLLMRequest && ev.Data.(cpapi.LLMRequestData).Purpose == "" {
					return errStop // stop right after the condensation
				}
			}
			return nil
		}
		sess := &agent.Session{JobID: "job_bench", Task: "bench", Model: "anthropic/claude-sonnet-4-5", Sandbox: cl,
			Workdir: "/tmp", History: hist, Emit: emit}
		if _, err := ag.Run(ctx, sess); err != errStop {
			b.Fatalf("run: %v", err)
		}
		if condensed.Dropped == 0 {
			b.Fatal("no condensation")
		}
		b.ReportMetric(float64(condensed.TokensBefore)/float64(condensed.TokensAfter), "shrink-x")
	}
}

var errStop = stopErr{}

type stopErr struct{}

func (stopErr) Error() string { return "stop" }
