package cliagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/gateway"
	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/bwrap"
	"github.com/corral-sh/corral/internal/runtime/docker"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/template"
	"github.com/corral-sh/corral/internal/testenv"
)

// realKey is the provider key the control plane holds: it must reach the
// scripted server and nothing in the sandbox.
const realKey = "sk-corral-e2e-REAL-7f3a9c1d2b"

// cliCase is how one CLI is driven in the end-to-end test.
type cliCase struct {
	name     string
	model    string
	base     func(url string) string // the upstream base URL for the gateway
	provider string
	tool     string         // the CLI's shell tool
	input    map[string]any // the shell tool's input, with %s for the command
}

var cliCases = []cliCase{
	{"claude-code", "", func(u string) string { return u }, gateway.Anthropic, "Bash", map[string]any{"command": "%s"}},
	{"codex", "openai/gpt-5-codex", func(u string) string { return u + "/v1" }, gateway.OpenAI, "exec_command", map[string]any{"cmd": "%s"}},
	{"opencode", "anthropic/claude-sonnet-4-5", func(u string) string { return u }, gateway.Anthropic, "bash", map[string]any{"command": "%s", "description": "write the file"}},
	{"gemini", "google/gemini-2.5-pro", func(u string) string { return u }, gateway.Google, "run_shell_command", map[string]any{"command": "%s"}},
}

// e2eSandbox is a sandbox of the default template on a real runtime.
type e2eSandbox struct {
	c       *client.Client
	hostDir string
}

func e2eRuntimes(t *testing.T) map[string]func(t *testing.T) (runtime.Runtime, template.Importer) {
	bin := func(t *testing.T) string { return runtimetest.Binary(t) }
	state := func(t *testing.T) string {
		d, err := os.MkdirTemp("", "corral-cliagent-e2e-")
		if err == nil {
			err = os.Chmod(d, 0o755) // bwrap's uid 1000 must reach it
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return map[string]func(t *testing.T) (runtime.Runtime, template.Importer){
		"docker": func(t *testing.T) (runtime.Runtime, template.Importer) {
			r, err := docker.New(docker.Config{Binary: bin(t), StateDir: state(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() }) // the engine client's connections
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.Available(ctx); err != nil {
				testenv.Unavailable(t, "docker: %v", err)
			}
			return r, r
		},
		"bwrap": func(t *testing.T) (runtime.Runtime, template.Importer) {
			// The shared templates directory: the default template is
			// 2 GiB unpacked, too big to import per test run.
			r, err := bwrap.New(bwrap.Config{Binary: bin(t), StateDir: state(t)})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.Available(ctx); err != nil {
				testenv.Unavailable(t, "bwrap: %v", err)
			}
			return r, r
		},
	}
}

// newE2ESandbox starts a sandbox of the default template (network none)
// and checks that the template has the agent CLIs.
func newE2ESandbox(t *testing.T, rt runtime.Runtime, imp template.Importer) *e2eSandbox {
	t.Helper()
	tpl := runtimetest.NamedTemplate(t, imp, "default")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := rt.Create(ctx, runtime.Spec{Template: tpl, Network: runtime.NetworkNone, Resources: runtime.Resources{MemoryMB: 4096}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Delete(ctx, sb.ID); err != nil {
			t.Errorf("Delete: %v", err)
		}
	})
	c, err := client.New(sb.Endpoint, client.WithToken(sb.Token))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, a := range template.AgentCLIs() {
		cmds = append(cmds, a.Command)
	}
	res, err := c.Exec(ctx, sandboxapi.ExecRequest{Command: "sh", Args: []string{"-c", "PATH=/usr/local/bin:$PATH; for c in " + strings.Join(cmds, " ") + "; do command -v $c || exit 1; done"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == nil || *res.ExitCode != 0 {
		testenv.Unavailable(t, "the %s template here predates the agent CLIs (found only %q); rebuild and import it: corral template build --name default", tpl, res.Stdout)
	}
	return &e2eSandbox{c: c, hostDir: filepath.Dir(strings.TrimPrefix(sb.Endpoint, "unix:"))}
}

// script answers like a model that writes the file with the CLI's shell
// tool and then says it is done; after an injected message mentioning
// banana, it answers that instead.
func script(s *llmtest.Server, tc cliCase, command string) {
	input := map[string]any{}
	for k, v := range tc.input {
		if str, ok := v.(string); ok && strings.Contains(str, "%s") {
			v = fmt.Sprintf(str, command)
		}
		input[k] = v
	}
	s.Handle(func(r llmtest.Request) (llmtest.Turn, bool) {
		if len(r.Tools) == 0 {
			return llmtest.Turn{Text: "A title", Usage: llmtest.Usage{Input: 3, Output: 2}}, true // side requests
		}
		var results int
		var banana bool
		for _, m := range r.Messages {
			for _, p := range m.Content {
				if p.Type == llm.PartToolResult {
					results++
				}
				// Not only user messages: Claude Code sends one injected
				// mid-turn as a message of role "system".
				if m.Role != llm.RoleAssistant && p.Type == llm.PartText && strings.Contains(p.Text, "banana") {
					banana = true
				}
			}
		}
		switch {
		case banana:
			return llmtest.Turn{Text: "Banana noted.", Usage: llmtest.Usage{Input: 40, Output: 4}}, true
		case results == 0:
			return llmtest.Turn{Text: "I will write the file.", ToolCalls: []llmtest.ToolCall{llmtest.Call(tc.tool, input)},
				Usage: llmtest.Usage{Input: 20, Output: 10}}, true
		}
		return llmtest.Turn{Text: "All done: made.txt written.", Usage: llmtest.Usage{Input: 30, Output: 8}}, true
	})
}

// TestRealCLIs runs the real CLIs from the default template in real
// sandboxes without network, pointed through sandboxd's forward and the
// gateway at the scripted server: each makes a tool call that writes a
// file, and Corral records it.
func TestRealCLIs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes and CLIs")
	}
	for rtName, open := range e2eRuntimes(t) {
		t.Run(rtName, func(t *testing.T) {
			rt, imp := open(t)
			sb := newE2ESandbox(t, rt, imp)
			for _, tc := range cliCases {
				t.Run(tc.name, func(t *testing.T) { e2eRun(t, sb, tc, "") })
			}
			for _, tc := range cliCases {
				t.Run(tc.name+"/inject", func(t *testing.T) { e2eRun(t, sb, tc, modeInject) })
			}
			t.Run("claude-code/crash", func(t *testing.T) { e2eRun(t, sb, cliCases[0], modeCrash) })
			// Nothing in the sandbox knows the real key.
			res, err := sb.c.Exec(context.Background(), sandboxapi.ExecRequest{Command: "sh",
				Args: []string{"-c", "grep -rl " + realKey + " /workspace /home /tmp /run/corral 2>/dev/null; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c " + realKey}})
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(res.Stdout) != "0" {
				t.Errorf("the real key is in the sandbox: %q", res.Stdout)
			}
		})
	}
}

// Modes of e2eRun.
const (
	modeInject = "inject" // a message is injected while the tool call runs
	modeCrash  = "crash"  // the Run is abandoned while the tool call runs, and a new one resumes
)

// e2eRun runs one CLI agent for a task in the sandbox.
func e2eRun(t *testing.T, sb *e2eSandbox, tc cliCase, mode string) {
	inject := mode == modeInject
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // bounds the whole run
	defer cancel()
	work := "/workspace/" + tc.name
	if mode != "" {
		work += "-" + mode
	}
	if _, err := sb.c.Mkdir(ctx, work, true); err != nil {
		t.Fatal(err)
	}
	command := "echo hi > made.txt && echo done"
	if mode != "" {
		command = "sleep 3; " + command
	}
	srv := llmtest.New(t)
	script(srv, tc, command)
	newAgent := func() agent.Agent {
		gw, err := gateway.New(gateway.Config{Logger: slog.New(slog.DiscardHandler),
			Upstreams: map[string]gateway.Upstream{tc.provider: {BaseURL: tc.base(srv.URL), Key: realKey}}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(tc.name, Config{Gateway: gw, HostDir: func(context.Context, *agent.Session) (string, error) { return sb.hostDir, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	log := &jobLog{}
	inbox := make(chan agent.Injected, 1)
	jobID := "job_" + strings.ReplaceAll(tc.name, "-", "") + mode
	s := &agent.Session{JobID: jobID, Task: "Write made.txt with hi in it.", Model: tc.model, Sandbox: sb.c, Workdir: work,
		Env: map[string]string{"JOB_VAR": "1"}, Emit: log.emit, Inbox: inbox}
	type ret struct {
		res *agent.Result
		err error
	}
	done := make(chan ret, 1)
	runCtx, crash := context.WithCancel(ctx)
	defer crash()
	go func() {
		res, err := newAgent().Run(runCtx, s)
		done <- ret{res, err}
	}()
	if mode == modeCrash {
		// The control plane dies while the CLI runs its tool; a new one
		// (a new gateway too) resumes from the log.
		waitFor(t, func() bool { return len(log.of(cpapi.EventToolCall)) > 0 })
		crash()
		if r := <-done; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("the abandoned Run returned %v", r.err)
		}
		s.History = log.snapshot()
		go func() {
			res, err := newAgent().Run(ctx, s)
			done <- ret{res, err}
		}()
	}
	if inject {
		waitFor(t, func() bool { return len(log.of(cpapi.EventToolCall)) > 0 })
		seq := log.add(cpapi.EventMessage, cpapi.MessageData{Role: "user", Text: "Also, say banana."})
		inbox <- agent.Injected{Seq: seq, Role: "user", Text: "Also, say banana."}
	}
	r := <-done
	if r.err != nil {
		for _, ev := range log.snapshot() {
			t.Logf("%s %.400s", ev.Type, ev.Data)
		}
		t.Fatalf("Run: %v", r.err)
	}
	want := "All done: made.txt written."
	if inject {
		want = "Banana noted."
	}
	if r.res.Summary != want || r.res.ExitCode == nil || *r.res.ExitCode != 0 || r.res.Tokens == 0 {
		t.Errorf("result %+v (exit %v); want summary %q, exit 0 and tokens", r.res, r.res.ExitCode, want)
	}
	calls, results := log.of(cpapi.EventToolCall), log.of(cpapi.EventToolResult)
	if len(calls) == 0 || !strings.Contains(calls[0], "made.txt") || len(results) == 0 || !strings.Contains(results[0], "done") {
		t.Errorf("tool.call %q, tool.result %q; want the shell call that wrote made.txt", calls, results)
	}
	if len(log.raws(streamStdout)) == 0 || len(log.of(cpapi.EventMessage)) == 0 {
		t.Errorf("no raw or message events")
	}
	b, err := sb.c.ReadFile(ctx, work+"/made.txt")
	if err != nil {
		for _, ev := range log.snapshot() {
			t.Logf("%s %.600s", ev.Type, ev.Data)
		}
		t.Fatalf("made.txt in the sandbox: %v", err)
	}
	b.Close()
	// The real key reached the scripted server on every request; the
	// placeholder never did.
	for i, req := range srv.Requests() {
		var hasKey bool
		for name, vals := range req.Header {
			for _, v := range vals {
				if strings.Contains(v, gateway.Placeholder) {
					t.Errorf("request %d (%s) carried the placeholder in %s", i, req.Path, name)
				}
				hasKey = hasKey || strings.Contains(v, realKey)
			}
		}
		if !hasKey {
			t.Errorf("request %d (%s) lacks the real key", i, req.Path)
		}
	}
	if mode == modeCrash {
		if n := len(log.raws(streamStart)); n != 1 {
			t.Errorf("%d runs; want the resumed Run to follow the same process", n)
		}
		if n := len(log.of(cpapi.EventToolCall)); n != 1 {
			t.Errorf("%d tool.call events; want 1: no line translated twice", n)
		}
	}
	if inject {
		var delivered bool
		for _, d := range append(log.raws(streamStdin), log.raws(streamStart)...) {
			delivered = delivered || len(d.Injected) == 1
		}
		if !delivered {
			t.Errorf("no record delivered the injected message")
		}
		if tc.name == "claude-code" && len(log.raws(streamStart)) != 1 {
			t.Errorf("Claude Code took %d runs; want the message on its stdin within one", len(log.raws(streamStart)))
		}
		if tc.name != "claude-code" && len(log.raws(streamStart)) != 2 {
			t.Errorf("%s took %d runs; want a second one resuming its session with the message", tc.name, len(log.raws(streamStart)))
		}
	}
}
