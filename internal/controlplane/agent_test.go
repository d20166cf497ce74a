package controlplane_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
	"github.com/corral-sh/corral/internal/llm/registry"
)

// llmConfig points both providers at a scripted server, with short
// retry backoffs.
func llmConfig(s *llmtest.Server) registry.Config {
	return registry.Config{
		AnthropicBaseURL: s.URL, AnthropicKey: "sk-ant-test-key-never-in-events",
		OpenAIBaseURL: s.URL + "/v1", OpenAIKey: "sk-openai-test-key-never-in-events",
		Retry: llm.RetryPolicy{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
	}
}

// lastResult is the text of the last tool result the model was shown.
func lastResult(r llmtest.Request) llm.Part {
	res := r.ToolResults()
	if len(res) == 0 {
		return llm.Part{}
	}
	return res[len(res)-1]
}

// artifactFile reads one file of a job's artifacts zip.
func artifactFile(t *testing.T, a *api, jobID, name string) (string, bool) {
	t.Helper()
	resp, body := a.do("GET", "/v1/jobs/"+jobID+"/artifacts", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("artifacts: %d %s", resp.StatusCode, body)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == name {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			return string(b), true
		}
	}
	return "", false
}

func eventsOf(evs []cpapi.Event, typ string) []cpapi.Event {
	var out []cpapi.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestBuiltinAgentFixesAFailingTest is the end-to-end scenario in a
// real Docker sandbox: the model (scripted, Anthropic wire format) creates
// a file and a test, runs the failing test, edits the code, reruns it and
// finishes. A malformed tool call on the way becomes an error observation.
func TestBuiltinAgentFixesAFailingTest(t *testing.T) {
	s := llmtest.New(t,
		llmtest.Turn{Text: "I will write the code first.", ToolCalls: []llmtest.ToolCall{
			llmtest.Call("editor", map[string]any{"command": "create", "path": "calc.sh", "file_text": "echo $(( $1 - $2 ))\n"})}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{
			llmtest.Call("editor", map[string]any{"command": "create", "path": "test.sh",
				"file_text": "got=$(sh calc.sh 2 3)\nif [ \"$got\" = 5 ]; then echo PASS; else echo \"FAIL: got $got\"; exit 1; fi\n"})}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_bad", Name: "bash", Input: `{"command": "sh test.sh"`}}},
		llmtest.Turn{
			Match: func(r llmtest.Request) bool {
				p := lastResult(r)
				return p.IsError && strings.Contains(p.Text, "not a JSON object")
			},
			ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "cd /workspace && sh test.sh"})}},
		llmtest.Turn{
			Match: func(r llmtest.Request) bool {
				p := lastResult(r)
				return p.IsError && strings.Contains(p.Text, "FAIL: got -1")
			},
			Text: "The test fails: calc.sh subtracts.", ToolCalls: []llmtest.ToolCall{
				llmtest.Call("editor", map[string]any{"command": "str_replace", "path": "calc.sh", "old_str": "$1 - $2", "new_str": "$1 + $2"})}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "sh test.sh"})}},
		llmtest.Turn{
			Match: func(r llmtest.Request) bool {
				p := lastResult(r)
				return !p.IsError && strings.Contains(p.Text, "PASS")
			},
			ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "Fixed calc.sh: it added nothing, now it adds."})}},
	)
	a := apiFor(t, controlplanetest.Start(t, controlplanetest.Options{Runtime: "docker", LLM: llmConfig(s)}))
	j := a.submit(cpapi.JobRequest{Agent: cpapi.AgentBuiltin, Model: "anthropic/claude-sonnet-4-5", Task: "Write calc.sh that adds two numbers, with a test."})
	done := a.waitJob(j.ID, cpapi.JobCompleted, cpapi.JobFailed)
	evs := a.events(j.ID)
	if done.Status != cpapi.JobCompleted || done.Result == nil || !strings.Contains(done.Result.Summary, "now it adds") {
		t.Fatalf("job = %+v\nunexpected requests: %d\nevents: %s", done, len(s.Unexpected()), dumpEvents(evs))
	}
	if n := s.Remaining(); n != 0 {
		t.Errorf("%d scripted turns left", n)
	}
	if got, want := len(eventsOf(evs, cpapi.EventToolCall)), 7; got != want {
		t.Errorf("tool.call events = %d, want %d", got, want)
	}
	if got, want := len(eventsOf(evs, cpapi.EventToolResult)), 7; got != want {
		t.Errorf("tool.result events = %d, want %d", got, want)
	}
	resps := eventsOf(evs, cpapi.EventLLMResponse)
	if len(resps) != 7 {
		t.Errorf("llm.response events = %d, want 7", len(resps))
	}
	for _, e := range resps {
		var d cpapi.LLMResponseData
		_ = json.Unmarshal(e.Data, &d)
		if d.Usage.InputTokens == 0 || d.Usage.OutputTokens == 0 {
			t.Errorf("step %d has no token usage: %s", d.Step, e.Data)
		}
	}
	if calc, ok := artifactFile(t, a, j.ID, "workspace/calc.sh"); !ok || calc != "echo $(( $1 + $2 ))\n" {
		t.Errorf("calc.sh in the artifacts = %q (%v)", calc, ok)
	}
	// The requests the model saw: system prompt, tools, the task.
	first := s.Completions()[0]
	if first.API != llmtest.APIAnthropic || !strings.Contains(first.System, "/workspace") ||
		!strings.Contains(first.Messages[0].TextOf(), "calc.sh that adds") || !hasTools(first.Tools, "bash", "editor", "search", "finish", "recall") {
		t.Errorf("first request = %+v", first)
	}
	if first.Header.Get("X-Api-Key") != "sk-ant-test-key-never-in-events" {
		t.Errorf("the key did not reach the provider")
	}
	for _, e := range evs {
		if bytes.Contains(e.Data, []byte("never-in-events")) {
			t.Errorf("a key is in event %d: %s", e.Seq, e.Data)
		}
	}
}

// TestBuiltinAgentCondensesAndRecalls runs a job whose conversation
// outgrows a tiny context window (OpenAI wire format): the middle is
// condensed into a model-written summary, later requests carry the summary
// instead of the dropped turns, the recall tool still finds a dropped
// output, and the job finishes.
func TestBuiltinAgentCondensesAndRecalls(t *testing.T) {
	s := llmtest.New(t)
	s.Handle(func(r llmtest.Request) (llmtest.Turn, bool) {
		if strings.Contains(r.System, "You summarise") {
			return llmtest.Turn{Text: "SUMMARY: we printed the secret word and many lines."}, true
		}
		return llmtest.Turn{}, false
	})
	s.Add(llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "echo the secret word is pelican"})}})
	for i := range 6 {
		s.Add(llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "seq 1 100 | sed 's/^/filler line /'"})}},
			llmtest.Turn{Text: strings.Repeat("thinking ", 50+i)})
	}
	s.Add(
		llmtest.Turn{
			Match: func(r llmtest.Request) bool {
				all := ""
				for _, m := range r.Messages {
					all += m.TextOf()
				}
				return strings.Contains(all, "SUMMARY: we printed") && !strings.Contains(all, "pelican")
			},
			ToolCalls: []llmtest.ToolCall{llmtest.Call("recall", map[string]any{"query": "secret word"})}},
		llmtest.Turn{
			Match:     func(r llmtest.Request) bool { return strings.Contains(lastResult(r).Text, "pelican") },
			ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "done; the word was pelican"})}},
	)
	cfg := llmConfig(s)
	cfg.ContextWindow = 4000
	a := apiFor(t, controlplanetest.Start(t, controlplanetest.Options{LLM: cfg}))
	j := a.submit(cpapi.JobRequest{Agent: cpapi.AgentBuiltin, Model: "openai/gpt-4o", Task: "Print things."})
	done := a.waitJob(j.ID, cpapi.JobCompleted, cpapi.JobFailed)
	evs := a.events(j.ID)
	if done.Status != cpapi.JobCompleted {
		t.Fatalf("job = %+v\nevents: %s", done, dumpEvents(evs))
	}
	cond := eventsOf(evs, cpapi.EventCondensed)
	if len(cond) == 0 {
		t.Fatalf("no context.condensed event:\n%s", dumpEvents(evs))
	}
	var d cpapi.CondensedData
	_ = json.Unmarshal(cond[0].Data, &d)
	if d.Dropped == 0 || d.TokensAfter >= d.TokensBefore || !strings.Contains(d.Summary, "SUMMARY") {
		t.Errorf("condensed = %+v", d)
	}
	if s.Remaining() != 0 {
		t.Errorf("%d turns left", s.Remaining())
	}
}

// TestBuiltinAgentTakesInjectedMessages sends a message while the agent
// runs a command; the next model call carries it and the agent acts on it.
func TestBuiltinAgentTakesInjectedMessages(t *testing.T) {
	started := make(chan struct{})
	s := llmtest.New(t,
		llmtest.Turn{Respond: func(llmtest.Request) llmtest.Turn {
			close(started)
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "sleep 2; echo slept"})}}
		}},
		llmtest.Turn{
			Match: func(r llmtest.Request) bool {
				return strings.Contains(r.Last().TextOf(), "please also create injected.txt") && strings.Contains(lastResult(r).Text, "slept")
			},
			ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "echo yes > injected.txt"})}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "did as asked"})}},
	)
	a := apiFor(t, controlplanetest.Start(t, controlplanetest.Options{LLM: llmConfig(s)}))
	j := a.submit(cpapi.JobRequest{Agent: cpapi.AgentBuiltin, Model: "anthropic/claude-sonnet-4-5", Task: "Wait a bit."})
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the agent never called the model")
	}
	time.Sleep(300 * time.Millisecond) // the sleep is running now
	if resp, body := a.do("POST", "/v1/jobs/"+j.ID+"/messages", cpapi.MessageRequest{Text: "please also create injected.txt"}); resp.StatusCode != 202 && resp.StatusCode != 200 {
		t.Fatalf("message: %d %s", resp.StatusCode, body)
	}
	done := a.waitJob(j.ID, cpapi.JobCompleted, cpapi.JobFailed)
	if done.Status != cpapi.JobCompleted {
		t.Fatalf("job = %+v\n%s", done, dumpEvents(a.events(j.ID)))
	}
	if got, ok := artifactFile(t, a, j.ID, "workspace/injected.txt"); !ok || got != "yes\n" {
		t.Errorf("injected.txt = %q %v", got, ok)
	}
	// The message is in the log, before the request that carried it.
	var msgSeq, reqSeq int64
	for _, e := range a.events(j.ID) {
		if e.Type == cpapi.EventMessage && strings.Contains(string(e.Data), "injected.txt") && msgSeq == 0 {
			msgSeq = e.Seq
		}
		if e.Type == cpapi.EventLLMRequest && strings.Contains(string(e.Data), `"injected"`) {
			reqSeq = e.Seq
		}
	}
	if msgSeq == 0 || reqSeq <= msgSeq {
		t.Errorf("message seq %d, request carrying it %d", msgSeq, reqSeq)
	}
}

// TestBuiltinAgentRefusedWithoutProvider: no provider, no builtin agent.
func TestBuiltinAgentRefusedWithoutProvider(t *testing.T) {
	a := newAPI(t)
	resp, body := a.do("POST", "/v1/jobs", cpapi.JobRequest{Agent: cpapi.AgentBuiltin, Task: "x", Template: a.srv.Template})
	if resp.StatusCode != 422 || !strings.Contains(string(body), "not available") {
		t.Fatalf("builtin without a provider: %d %s", resp.StatusCode, body)
	}
}

func hasTools(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func dumpEvents(evs []cpapi.Event) string {
	var b strings.Builder
	for _, e := range evs {
		d := string(e.Data)
		if len(d) > 300 {
			d = d[:300] + "…"
		}
		b.WriteString(e.Type + " " + d + "\n")
	}
	return b.String()
}

// TestBuiltinAgentResumesAfterKill9 kills `corral up` with SIGKILL while
// the agent's bash command runs in the sandbox, restarts it, and checks
// the agent picks up where it was: the command is not run again (its
// side effect happens once), its output reaches the model, no model call
// is repeated, and the job finishes.
func TestBuiltinAgentResumesAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	running := make(chan struct{})
	s := llmtest.New(t,
		llmtest.Turn{Respond: func(llmtest.Request) llmtest.Turn {
			close(running)
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{
				"command": "echo begin >> /workspace/progress.txt; sleep 4; echo end >> /workspace/progress.txt; echo slow-command-output"})}}
		}},
		llmtest.Turn{
			Match:     func(r llmtest.Request) bool { return strings.Contains(lastResult(r).Text, "slow-command-output") },
			ToolCalls: []llmtest.ToolCall{llmtest.Call("bash", map[string]any{"command": "cat /workspace/progress.txt"})}},
		llmtest.Turn{
			Match:     func(r llmtest.Request) bool { return lastResult(r).Text == "begin\nend\n" },
			ToolCalls: []llmtest.ToolCall{llmtest.Call("finish", map[string]any{"summary": "resumed"})}},
	)
	dataDir := t.TempDir()
	stateRoot := controlplanetest.StateRoot(t)
	tpl := controlplanetest.Prepare(t, "bwrap", stateRoot)
	const token = "crl_test_admin_token_kill9_agent"
	up := startUp(t, dataDir, stateRoot, freeAddr(t), token,
		"ANTHROPIC_BASE_URL="+s.URL, "ANTHROPIC_API_KEY=sk-ant-test", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	defer up.stop()
	var job cpapi.Job
	if code := call(t, up, token, "POST", "/v1/jobs", cpapi.JobRequest{Agent: cpapi.AgentBuiltin, Template: tpl,
		Model: "anthropic/claude-sonnet-4-5", Task: "Do the slow thing."}, &job); code != 201 {
		t.Fatalf("submit: %d", code)
	}
	<-running
	// Wait for the tool.call event: the command is running in the sandbox.
	for deadline := time.Now().Add(time.Minute); ; {
		var page cpapi.EventPage
		call(t, up, token, "GET", "/v1/jobs/"+job.ID+"/events", nil, &page)
		if len(eventsOf(page.Events, cpapi.EventToolCall)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no tool.call before the kill")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	up.kill9()
	up.start()
	var got cpapi.Job
	for deadline := time.Now().Add(2 * time.Minute); ; {
		call(t, up, token, "GET", "/v1/jobs/"+job.ID, nil, &got)
		if got.Status == cpapi.JobCompleted || got.Status == cpapi.JobFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job did not finish after the restart: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var page cpapi.EventPage
	call(t, up, token, "GET", "/v1/jobs/"+job.ID+"/events?limit=1000", nil, &page)
	if got.Status != cpapi.JobCompleted || got.Result == nil || got.Result.Summary != "resumed" {
		t.Fatalf("job = %+v\n%s", got, dumpEvents(page.Events))
	}
	if n := len(s.Completions()); n != 3 {
		t.Errorf("%d model calls; want 3 (none repeated)", n)
	}
	if n := len(eventsOf(page.Events, cpapi.EventToolCall)); n != 3 {
		t.Errorf("%d tool.call events; want 3\n%s", n, dumpEvents(page.Events))
	}
}

// TestCLIAgentJobs runs Claude Code and Codex jobs through the API: the
// real CLIs from the default template, in network-none sandboxes, reach
// the scripted model through the control plane's gateway (the key stays
// in the control plane), make a shell tool call, and the jobs complete
// with their native events kept as raw and translated into tool calls.
func TestCLIAgentJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLIs in real sandboxes")
	}
	s := llmtest.New(t)
	s.Handle(func(r llmtest.Request) (llmtest.Turn, bool) {
		if len(r.Tools) == 0 {
			return llmtest.Turn{Text: "A title"}, true // the CLIs' side requests
		}
		if len(r.ToolResults()) == 0 {
			for _, name := range []string{"Bash", "exec_command"} {
				if slices.Contains(r.Tools, name) {
					arg := "command"
					if name == "exec_command" {
						arg = "cmd"
					}
					return llmtest.Turn{Text: "Writing it.", ToolCalls: []llmtest.ToolCall{
						llmtest.Call(name, map[string]any{arg: "echo from-" + name + " > made.txt"})}}, true
				}
			}
		}
		return llmtest.Turn{Text: "All done: made.txt written."}, true
	})
	cfg := llmConfig(s)
	srv := controlplanetest.Start(t, controlplanetest.Options{LLM: cfg, Template: "default"})
	a := apiFor(t, srv)
	for _, c := range []struct{ agent, model, tool string }{
		{cpapi.AgentClaudeCode, "", "Bash"},
		{cpapi.AgentCodex, "openai/gpt-5-codex", "exec_command"},
	} {
		t.Run(c.agent, func(t *testing.T) {
			j := a.submit(cpapi.JobRequest{Agent: c.agent, Model: c.model, Task: "Write made.txt.",
				Resources: &cpapi.Resources{MemoryMB: 4096}})
			done := a.waitJob(j.ID, cpapi.JobCompleted, cpapi.JobFailed)
			evs := a.events(j.ID)
			if done.Status != cpapi.JobCompleted || done.Result == nil || !strings.Contains(done.Result.Summary, "All done") {
				t.Fatalf("job = %+v %+v\n%s", done, done.Result, dumpEvents(evs))
			}
			if len(eventsOf(evs, cpapi.EventRaw)) == 0 || len(eventsOf(evs, cpapi.EventToolCall)) == 0 || len(eventsOf(evs, cpapi.EventToolResult)) == 0 {
				t.Errorf("events lack raw/tool.call/tool.result:\n%s", dumpEvents(evs))
			}
			if got, ok := artifactFile(t, a, j.ID, "workspace/made.txt"); !ok || got != "from-"+c.tool+"\n" {
				t.Errorf("made.txt = %q %v", got, ok)
			}
			for _, e := range evs {
				if bytes.Contains(e.Data, []byte("never-in-events")) {
					t.Errorf("a key is in event %d", e.Seq)
				}
			}
		})
	}
}
