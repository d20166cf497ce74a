package cliagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/gateway"
	"github.com/corral-sh/corral/internal/llm/llmtest"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// jobLog is an in-memory job log: Emit appends, as the store would, with
// gap-free seqs and the data as JSON.
type jobLog struct {
	mu     sync.Mutex
	events []cpapi.Event
}

func (l *jobLog) emit(ctx context.Context, evs ...agent.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range evs {
		b, err := json.Marshal(ev.Data)
		if err != nil {
			return fmt.Errorf("test: event %s does not marshal: %w", ev.Type, err)
		}
		l.events = append(l.events, cpapi.Event{Seq: int64(len(l.events) + 1), JobID: "job_t", Time: time.Now(), Type: ev.Type, Data: b})
	}
	return nil
}

// add appends an event the engine wrote (an injected message).
func (l *jobLog) add(typ string, data any) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, _ := json.Marshal(data)
	seq := int64(len(l.events) + 1)
	l.events = append(l.events, cpapi.Event{Seq: seq, JobID: "job_t", Type: typ, Data: b})
	return seq
}

func (l *jobLog) snapshot() []cpapi.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// raws returns the data of the raw events of one stream.
func (l *jobLog) raws(stream string) []RawData {
	var out []RawData
	for _, ev := range l.snapshot() {
		if ev.Type != cpapi.EventRaw {
			continue
		}
		var d RawData
		_ = json.Unmarshal(ev.Data, &d)
		if d.Stream == stream {
			out = append(out, d)
		}
	}
	return out
}

// of returns the events of a type, as their JSON data.
func (l *jobLog) of(typ string) []string {
	var out []string
	for _, ev := range l.snapshot() {
		if ev.Type == typ {
			out = append(out, string(ev.Data))
		}
	}
	return out
}

// fakeCLI is a real flavor whose process is a shell script instead of
// the CLI: the runner, sandboxd, offsets and resumption are real.
type fakeCLI struct {
	flavor
	script func(in runInput) string
}

func (f fakeCLI) command(in runInput) (command, error) {
	c, err := f.flavor.command(in)
	if err != nil {
		return c, err
	}
	c.env["FAKE_ARGS"] = strings.Join(c.args, "\x1f")
	return command{path: "sh", args: []string{"-c", f.script(in)}, env: c.env, files: c.files}, nil
}

// harness is a real sandboxd on the host whose forward directory is the
// socket directory the gateway listens in.
type harness struct {
	t    *testing.T
	d    *sandboxdtest.Daemon
	c    *client.Client
	dir  string // socket dir
	work string
	gw   *gateway.Gateway
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "cli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{ForwardDir: dir, Logger: slog.New(slog.DiscardHandler)}})
	c, err := client.New(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Upstreams: map[string]gateway.Upstream{
		gateway.Anthropic: {BaseURL: "http://127.0.0.1:1"}, gateway.OpenAI: {BaseURL: "http://127.0.0.1:1/v1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, d: d, c: c, dir: dir, work: t.TempDir(), gw: gw}
}

func (h *harness) agent(f flavor) *cliAgent {
	return &cliAgent{f: f, cfg: Config{Gateway: h.gw, HostDir: func(context.Context, *agent.Session) (string, error) { return h.dir, nil }}}
}

func (h *harness) session(log *jobLog, inbox chan agent.Injected) *agent.Session {
	return &agent.Session{JobID: "job_t", Task: "write made.txt", Sandbox: h.c, Workdir: h.work,
		History: log.snapshot(), Emit: log.emit, Inbox: inbox}
}

// catFixture is a script printing a recorded stdout.
func catFixture(name string) string {
	p, _ := filepath.Abs(filepath.Join("testdata", name+".jsonl"))
	return "cat " + p
}

func run(t *testing.T, a *cliAgent, s *agent.Session) (*agent.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	return a.Run(ctx, s)
}

func TestRunRecordsRawAndTranslation(t *testing.T) {
	h := newHarness(t)
	log := &jobLog{}
	a := h.agent(fakeCLI{codex{}, func(runInput) string { return catFixture("codex") }})
	res, err := run(t, a, h.session(log, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary != "All done: made.txt written." || res.ExitCode == nil || *res.ExitCode != 0 || res.Tokens != 99 || res.Steps != 1 {
		t.Errorf("result = %+v (exit %v)", res, res.ExitCode)
	}
	fixture, _ := os.ReadFile(filepath.Join("testdata", "codex.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(fixture)), "\n")
	raws := log.raws(streamStdout)
	if len(raws) != len(lines) {
		t.Fatalf("%d stdout raw events; want one per line (%d)", len(raws), len(lines))
	}
	var end int64
	for i, d := range raws {
		end += int64(len(lines[i])) + 1
		if d.Agent != "codex" || d.Process != "agent-job_t-1" || d.Offset != end || !sameJSON(d.Event, lines[i]) {
			t.Errorf("raw %d = %+v; want line %d ending at %d", i, d, i, end)
		}
	}
	if got := len(log.of(cpapi.EventToolCall)); got != 2 {
		t.Errorf("%d tool.call events; want 2", got)
	}
	if got := log.of(cpapi.EventMessage); len(got) != 1 || !strings.Contains(got[0], "All done") {
		t.Errorf("messages %q", got)
	}
	// Each line's translation follows its raw event, before the next one.
	tr := codex{}.newTranslator(1)
	evs := log.snapshot()
	for i := 0; i < len(evs); i++ {
		var d RawData
		if evs[i].Type != cpapi.EventRaw || json.Unmarshal(evs[i].Data, &d) != nil || d.Stream != streamStdout {
			continue
		}
		want, _ := tr.translate(d.Event)
		for k, w := range want {
			if i+1+k >= len(evs) || evs[i+1+k].Type != w.Type {
				t.Fatalf("line at offset %d: event %d after its raw is not its translation's %s", d.Offset, k, w.Type)
			}
		}
	}
	start := log.raws(streamStart)
	if len(start) != 1 || !strings.Contains(string(start[0].Event), `"command":"sh"`) {
		t.Errorf("start records %+v", start)
	}
	if exits := log.raws(streamExit); len(exits) != 1 || string(exits[0].Event) != `{"exit_code":0,"signal":null}` {
		t.Errorf("exit records %+v", exits)
	}
	// The forward to the gateway socket exists, and the CLI was pointed at it.
	fwds, err := h.c.ListForwards(context.Background())
	if err != nil || len(fwds) != 1 || fwds[0].Socket != filepath.Join(h.dir, "llm-openai.sock") {
		t.Fatalf("forwards %+v, %v", fwds, err)
	}
	p, err := h.c.GetProcess(context.Background(), "agent-job_t-1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Env["FAKE_ARGS"], fmt.Sprintf(`base_url="http://127.0.0.1:%d"`, fwds[0].Port)) || p.Env[codexKeyEnv] != gateway.Placeholder {
		t.Errorf("the CLI's args and env do not point at the forward: %q, key %q", p.Env["FAKE_ARGS"], p.Env[codexKeyEnv])
	}
}

func TestRunFailures(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"exit code", catFixture("codex") + "; echo 'boom on stderr' >&2; exit 7", "codex exited with code 7"},
		{"reported failure", catFixture("codex-apierror"), "codex: "},
		{"killed", "kill -9 $$", "codex was killed by SIGKILL"},
		{"not json", "echo 'this is not json'; echo '{\"half\":'", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			log := &jobLog{}
			a := h.agent(fakeCLI{codex{}, func(runInput) string { return tt.script }})
			res, err := run(t, a, h.session(log, nil))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				raws := log.raws(streamStdout)
				if len(raws) != 2 || raws[0].Text != "this is not json" || string(raws[0].Event) != "null" || raws[1].Text != `{"half":` {
					t.Fatalf("raw events of non-JSON lines: %+v", raws)
				}
				if res.Summary != "" {
					t.Errorf("summary %q from no message", res.Summary)
				}
				return
			}
			ae, ok := agent.AsError(err)
			if !ok || ae.Reason != cpapi.ReasonAgentError || !strings.Contains(ae.Msg, tt.want) {
				t.Fatalf("Run error = %v; want an agent_error saying %q", err, tt.want)
			}
			errs := log.of(cpapi.EventError)
			if len(errs) == 0 || !strings.Contains(errs[len(errs)-1], `"fatal":true`) {
				t.Fatalf("error events %q; want a fatal one last", errs)
			}
			if tt.name == "exit code" && !strings.Contains(errs[len(errs)-1], "boom on stderr") {
				t.Errorf("the stderr tail is not in the error event: %s", errs[len(errs)-1])
			}
			if r, ok := ResultOf(err); !ok || (tt.name == "exit code" && (r.Summary == "" || *r.ExitCode != 7)) {
				t.Errorf("ResultOf = %+v, %v", r, ok)
			}
		})
	}
}

// waitScript prints the first n lines of a fixture, waits for the file
// go, then prints the rest.
func waitScript(fixture string, n int, gofile string) string {
	p, _ := filepath.Abs(filepath.Join("testdata", fixture+".jsonl"))
	return fmt.Sprintf(`head -n %d %s; while [ ! -e %s ]; do sleep 0.02; done; tail -n +%d %s`, n, p, gofile, n+1, p)
}

// TestResumeAfterCrash: the control plane dies while the CLI runs; a new
// Run with the log continues the same process from where the log stops,
// translating every line exactly once.
func TestResumeAfterCrash(t *testing.T) {
	h := newHarness(t)
	gofile := filepath.Join(h.work, "go")
	f := fakeCLI{claudeCode{}, func(runInput) string {
		// Claude Code's stream: read the task, print half, wait, print the rest; then wait for stdin's end.
		return "read line; " + waitScript("claude-code", 5, gofile) + "; cat >/dev/null"
	}}
	log := &jobLog{}
	ctx, crash := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.agent(f).Run(ctx, h.session(log, nil))
		done <- err
	}()
	waitFor(t, func() bool { return len(log.raws(streamStdout)) >= 3 })
	crash()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after the crash: %v", err)
	}
	before := log.snapshot()
	// The CLI goes on while no control plane watches.
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := run(t, h.agent(f), h.session(log, nil))
	if err != nil {
		t.Fatalf("resumed Run: %v", err)
	}
	if res.Summary != "All done: made.txt written." || res.Tokens != 99 {
		t.Errorf("result %+v", res)
	}
	fixture, _ := os.ReadFile(filepath.Join("testdata", "claude-code.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(fixture)), "\n")
	raws := log.raws(streamStdout)
	if len(raws) != len(lines) {
		t.Fatalf("%d stdout raw events over two runs; want %d, one per line", len(raws), len(lines))
	}
	for i, d := range raws {
		if !sameJSON(d.Event, lines[i]) {
			t.Errorf("raw %d is %.60s; want line %d", i, d.Event, i)
		}
	}
	if n := len(log.of(cpapi.EventToolCall)); n != 2 {
		t.Errorf("%d tool.call events; want 2 (no line translated twice)", n)
	}
	if n := len(log.raws(streamStart)); n != 1 {
		t.Errorf("%d runs started; want 1: the resumed Run follows the same process", n)
	}
	if len(before) >= len(log.snapshot()) {
		t.Error("the resumed Run wrote nothing")
	}
}

// TestInjectionQueuedForNextRun: a CLI without streaming input gets a
// message injected mid-run in a second run that continues its session.
func TestInjectionQueuedForNextRun(t *testing.T) {
	h := newHarness(t)
	gofile := filepath.Join(h.work, "go")
	var mu sync.Mutex
	var inputs []runInput
	f := fakeCLI{codex{}, func(in runInput) string {
		mu.Lock()
		inputs = append(inputs, in)
		mu.Unlock()
		if in.session == "" {
			return waitScript("codex", 4, gofile)
		}
		return catFixture("codex")
	}}
	log := &jobLog{}
	inbox := make(chan agent.Injected, 1)
	s := h.session(log, inbox)
	done := make(chan error, 1)
	var res *agent.Result
	go func() {
		var err error
		res, err = run(t, h.agent(f), s)
		done <- err
	}()
	waitFor(t, func() bool { return len(log.raws(streamStdout)) >= 4 })
	seq := log.add(cpapi.EventMessage, cpapi.MessageData{Role: "user", Text: "also add a README"})
	inbox <- agent.Injected{Seq: seq, Role: "user", Text: "also add a README"}
	waitFor(t, func() bool { return len(inbox) == 0 })
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	starts := log.raws(streamStart)
	if len(starts) != 2 || starts[1].Process != "agent-job_t-2" || !slices.Equal(starts[1].Injected, []int64{seq}) {
		t.Fatalf("start records %+v; want a second run delivering message %d", starts, seq)
	}
	mu.Lock()
	second := inputs[len(inputs)-1]
	mu.Unlock()
	if second.session != "01a1fe6d-5ea3-7fa0-9fd8-cb19d50c1076" || second.prompt != "also add a README" {
		t.Errorf("second run input %+v; want the thread resumed with the message", second)
	}
	p, err := h.c.GetProcess(context.Background(), "agent-job_t-2")
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Split(p.Env["FAKE_ARGS"], "\x1f"); len(args) < 2 || args[0] != "exec" || args[1] != "resume" ||
		!slices.Contains(args, second.session) || args[len(args)-1] != "also add a README" {
		t.Errorf("second run's codex command %q does not resume the thread with the message", args)
	}
	if res.Steps != 2 || res.Tokens != 198 {
		t.Errorf("result %+v; want both runs' steps and tokens", res)
	}
	// Resuming now (as after a crash at the very end) delivers nothing twice.
	st := replay(codex{}, "write made.txt", log.snapshot())
	if len(st.pending) != 0 || st.run != 2 || st.exited == nil {
		t.Errorf("replayed state: run %d pending %v exited %v", st.run, st.pending, st.exited)
	}
}

// fakeClaude answers stream-json input as Claude Code does: each user
// line is replayed, and a turn ends with a result when no more input is
// waiting. The first turn waits for the file go before its result.
func fakeClaude(gofile string) string {
	return `n=0
while IFS= read -r line; do
  n=$((n+1))
  echo '{"type":"user","isReplay":true,"session_id":"s-1","message":{"role":"user","content":[{"type":"text","text":"x"}]}}'
  if [ $n = 1 ]; then
    echo '{"type":"system","subtype":"init","session_id":"s-1"}'
    while [ ! -e ` + gofile + ` ]; do sleep 0.02; done
  fi
  echo '{"type":"assistant","session_id":"s-1","message":{"id":"m'$n'","content":[{"type":"text","text":"turn '$n'"}]}}'
  echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"turn '$n'","session_id":"s-1","usage":{"input_tokens":10,"output_tokens":5}}'
done
echo '{"type":"system","subtype":"stdin_closed"}'`
}

// TestStreamingInjection: Claude Code takes an injected message on its
// open stdin; stdin closes only when every message was taken and a turn
// ended after it.
func TestStreamingInjection(t *testing.T) {
	h := newHarness(t)
	gofile := filepath.Join(h.work, "go")
	f := fakeCLI{claudeCode{}, func(runInput) string { return fakeClaude(gofile) }}
	log := &jobLog{}
	inbox := make(chan agent.Injected, 1)
	done := make(chan error, 1)
	var res *agent.Result
	go func() {
		var err error
		res, err = run(t, h.agent(f), h.session(log, inbox))
		done <- err
	}()
	waitFor(t, func() bool { return len(log.raws(streamStdout)) >= 2 }) // replay + init: the first turn runs
	seq := log.add(cpapi.EventMessage, cpapi.MessageData{Role: "user", Text: "and a test please"})
	inbox <- agent.Injected{Seq: seq, Role: "user", Text: "and a test please"}
	waitFor(t, func() bool { return len(log.raws(streamStdin)) == 2 })
	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ins := log.raws(streamStdin)
	if len(ins) != 2 || !slices.Equal(ins[1].Injected, []int64{seq}) || !strings.Contains(string(ins[1].Event), "and a test please") ||
		!strings.Contains(string(ins[0].Event), `"write made.txt"`) {
		t.Fatalf("stdin records %+v; want the task, then message %d", ins, seq)
	}
	if res.Summary != "turn 2" || res.Steps != 2 || res.Tokens != 30 {
		t.Errorf("result %+v; want the second turn's answer, 2 turns, 30 tokens", res)
	}
	outs := log.raws(streamStdout)
	if last := string(outs[len(outs)-1].Event); !strings.Contains(last, "stdin_closed") {
		t.Errorf("the CLI did not see its stdin end: last line %s", last)
	}
	if n := len(log.raws(streamStart)); n != 1 {
		t.Errorf("%d runs; want the message delivered within the one run", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a hang guard: CLIs start slowly on a loaded machine (OpenCode took 33 s in CI)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// TestBudgetStopsTheCLI: the gateway counts the model calls the CLI makes
// through the real forward; past the step budget the CLI is stopped and
// the run fails with budget_exceeded.
func TestBudgetStopsTheCLI(t *testing.T) {
	h := newHarness(t)
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) (llmtest.Turn, bool) {
		return llmtest.Turn{Text: "ok", Usage: llmtest.Usage{Input: 10, Output: 5}}, true
	})
	gw, err := gateway.New(gateway.Config{Logger: slog.New(slog.DiscardHandler),
		Upstreams: map[string]gateway.Upstream{gateway.Anthropic: {BaseURL: srv.URL, Key: "sk-real-budget-key"}}})
	if err != nil {
		t.Fatal(err)
	}
	h.gw = gw
	// A CLI that calls the model until it is stopped.
	f := fakeCLI{claudeCode{}, func(runInput) string {
		return `while :; do
  curl -sf -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' \
    -d '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' "$ANTHROPIC_BASE_URL/v1/messages" >/dev/null || exit 9
  echo '{"type":"system","subtype":"tick"}'
done`
	}}
	log := &jobLog{}
	s := h.session(log, nil)
	s.Budget = agent.Budget{MaxSteps: 3}
	_, err = run(t, h.agent(f), s)
	if ae, ok := agent.AsError(err); !ok || ae.Reason != agent.ReasonBudget {
		t.Fatalf("Run = %v; want a budget_exceeded error", err)
	}
	if exits := log.raws(streamExit); len(exits) != 1 || !strings.Contains(string(exits[0].Event), "SIGTERM") {
		t.Errorf("exit records %+v; want the CLI stopped by SIGTERM", exits)
	}
	reqs := srv.Requests()
	if len(reqs) < 4 {
		t.Errorf("%d model calls; want the budget (3) passed before the stop", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("X-Api-Key") != "sk-real-budget-key" {
			t.Errorf("upstream key %q; want the real one", r.Header.Get("X-Api-Key"))
		}
	}
}

func TestRunRefusals(t *testing.T) {
	h := newHarness(t)
	gwOnlyOpenAI, err := gateway.New(gateway.Config{Upstreams: map[string]gateway.Upstream{gateway.OpenAI: {BaseURL: "http://127.0.0.1:1/v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	hostDir := func(context.Context, *agent.Session) (string, error) { return h.dir, nil }
	tests := []struct {
		name, agent, model string
		gw                 *gateway.Gateway
		reason             string
	}{
		{"claude with an OpenAI model", "claude-code", "openai/gpt-5", h.gw, cpapi.ReasonAgentError},
		{"codex with an Anthropic model", "codex", "anthropic/claude-sonnet-4-5", h.gw, cpapi.ReasonAgentError},
		{"malformed model", "opencode", "gpt-5", h.gw, cpapi.ReasonAgentError},
		{"gemini without a Google key", "gemini", "", h.gw, agent.ReasonLLM},
		{"claude without an Anthropic key", "claude-code", "", gwOnlyOpenAI, agent.ReasonLLM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.agent, Config{Gateway: tt.gw, HostDir: hostDir})
			if err != nil {
				t.Fatal(err)
			}
			log := &jobLog{}
			s := h.session(log, nil)
			s.Model = tt.model
			_, err = run(t, a.(*cliAgent), s)
			if ae, ok := agent.AsError(err); !ok || ae.Reason != tt.reason {
				t.Fatalf("Run = %v; want reason %s", err, tt.reason)
			}
			if n := len(log.snapshot()); n != 0 {
				t.Errorf("%d events logged before the refusal", n)
			}
		})
	}
	if _, err := New("aider", Config{Gateway: h.gw, HostDir: hostDir}); err == nil {
		t.Error("New(aider) succeeded")
	}
	if _, err := New("codex", Config{}); err == nil {
		t.Error("New without a gateway succeeded")
	}
	if got := Names(); !slices.Equal(got, []string{"claude-code", "codex", "opencode", "gemini"}) {
		t.Errorf("Names() = %q", got)
	}
}

// TestMissingCLI: a template without the CLI is an agent error that says
// so, not an infrastructure failure.
func TestMissingCLI(t *testing.T) {
	h := newHarness(t)
	log := &jobLog{}
	f := fakeCLI{codex{}, func(runInput) string { return "" }}
	a := h.agent(missingCLI{f})
	_, err := run(t, a, h.session(log, nil))
	ae, ok := agent.AsError(err)
	if !ok || ae.Reason != cpapi.ReasonAgentError || !strings.Contains(ae.Msg, "cannot start") {
		t.Fatalf("Run = %v; want an agent_error about the missing CLI", err)
	}
}

type missingCLI struct{ fakeCLI }

func (m missingCLI) command(in runInput) (command, error) {
	c, err := m.fakeCLI.command(in)
	c.path = "no-such-agent-cli"
	return c, err
}
