package cliagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent"
)

// describe renders events compactly for comparison.
func describe(evs []agent.Event) []string {
	var out []string
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case cpapi.MessageData:
			out = append(out, "message: "+d.Text)
		case cpapi.ThoughtData:
			out = append(out, "thought: "+d.Text)
		case cpapi.ToolCallData:
			out = append(out, fmt.Sprintf("call %s %s", d.Tool, d.Input))
		case cpapi.ToolResultData:
			exit := "-"
			if d.ExitCode != nil {
				exit = fmt.Sprint(*d.ExitCode)
			}
			out = append(out, fmt.Sprintf("result %s exit=%s error=%v: %s", d.Tool, exit, d.IsError, strings.TrimSpace(d.Output)))
		case ErrorData:
			out = append(out, "error: "+d.Message)
		default:
			out = append(out, fmt.Sprintf("%s %v", ev.Type, ev.Data))
		}
	}
	return out
}

// translateFixture feeds a recorded stdout (testdata/<name>.jsonl, from
// the real CLI against llmtest) to a fresh translator of f.
func translateFixture(t *testing.T, f flavor, name string) ([]agent.Event, outcome, int, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr := f.newTranslator(1)
	var evs []agent.Event
	var took, done int
	var calls []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		got, sig := tr.translate(sc.Bytes())
		evs = append(evs, got...)
		took += sig.took
		if sig.turnDone {
			done++
		}
	}
	evs = append(evs, tr.finish()...)
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case cpapi.ToolCallData:
			calls = append(calls, "call:"+d.CallID)
		case cpapi.ToolResultData:
			calls = append(calls, "result:"+d.CallID)
		}
	}
	return evs, tr.outcome(), took*100 + done, calls
}

func TestTranslateRecorded(t *testing.T) {
	write := `{"command":"echo hi > made.txt && echo done"}`
	fail := `{"command":"echo oops >&2; exit 3"}`
	tests := []struct {
		fixture string
		f       flavor
		want    []string
		out     outcome // session is checked for being set, not its value
		signals int     // took*100 + turns done
	}{
		{"claude-code", claudeCode{}, []string{
			"thought: I will write the file.",
			"call Bash " + write,
			"result Bash exit=0 error=false: done",
			"call Bash " + fail,
			"result Bash exit=3 error=true: Exit code 3\noops",
			"message: All done: made.txt written.",
		}, outcome{summary: "All done: made.txt written.", tokens: 99, steps: 3}, 101},
		{"claude-code-apierror", claudeCode{}, []string{
			"error: API Error: 400 scripted failure: the model refused",
		}, outcome{summary: "API Error: 400 scripted failure: the model refused", failed: "API Error: 400 scripted failure: the model refused", steps: 1}, 101},
		{"codex", codex{}, []string{
			"error: Model metadata for `gpt-5-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.",
			"thought: I will write the file.",
			`call shell {"command":"/bin/bash -lc 'echo hi > made.txt && echo done'"}`,
			"result shell exit=0 error=false: done",
			`call shell {"command":"/bin/bash -lc 'echo oops >&2; exit 3'"}`,
			"result shell exit=3 error=true: oops",
			"message: All done: made.txt written.",
		}, outcome{summary: "All done: made.txt written.", tokens: 99, steps: 1}, 0},
		{"codex-apierror", codex{}, []string{
			"error: Model metadata for `gpt-5-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.",
			`error: {"error":{"code":null,"message":"scripted failure: the model refused","param":null,"type":"invalid_request_error"}}`,
			`error: {"error":{"code":null,"message":"scripted failure: the model refused","param":null,"type":"invalid_request_error"}}`,
		}, outcome{failed: `{"error":{"code":null,"message":"scripted failure: the model refused","param":null,"type":"invalid_request_error"}}`}, 0},
		{"opencode", openCode{}, []string{
			"thought: I will write the file.",
			"call bash " + write,
			"result bash exit=0 error=false: done",
			"call bash " + fail,
			"result bash exit=3 error=true: oops",
			"message: All done: made.txt written.",
		}, outcome{summary: "All done: made.txt written.", tokens: 99, steps: 3}, 0},
		{"opencode-apierror", openCode{}, []string{
			"error: scripted failure: the model refused",
		}, outcome{failed: "scripted failure: the model refused"}, 0},
		{"gemini", gemini{}, []string{
			"thought: I will write the file.",
			"call run_shell_command " + write,
			"result run_shell_command exit=- error=false: done",
			"call run_shell_command " + fail,
			"result run_shell_command exit=- error=false: oops",
			"message: All done: made.txt written.",
		}, outcome{summary: "All done: made.txt written.", tokens: 99, steps: 1}, 0},
		{"gemini-apierror", gemini{}, []string{
			`error: [API Error: {"error":{"code":400,"message":"scripted failure: the model refused","status":"INVALID_ARGUMENT"}}]`,
		}, outcome{failed: `[API Error: {"error":{"code":400,"message":"scripted failure: the model refused","status":"INVALID_ARGUMENT"}}]`, steps: 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			evs, out, signals, calls := translateFixture(t, tt.f, tt.fixture)
			if got := describe(evs); !slices.Equal(got, tt.want) {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if out.session == "" {
				t.Error("no session id found")
			}
			out.session = ""
			if out != tt.out {
				t.Errorf("outcome = %+v; want %+v", out, tt.out)
			}
			if signals != tt.signals {
				t.Errorf("signals = %d; want %d", signals, tt.signals)
			}
			// Every tool.result answers the tool.call just before it.
			for i := 1; i < len(calls); i += 2 {
				if strings.TrimPrefix(calls[i], "result:") != strings.TrimPrefix(calls[i-1], "call:") {
					t.Errorf("calls and results do not pair: %q", calls)
				}
			}
			// Every event's data marshals (it goes to the log as JSON).
			for _, ev := range evs {
				if _, err := json.Marshal(ev.Data); err != nil {
					t.Errorf("%s: %v", ev.Type, err)
				}
			}
		})
	}
}

// TestTranslateGarbage: lines that are not the CLI's JSON translate to
// nothing, without panicking.
func TestTranslateGarbage(t *testing.T) {
	lines := []string{``, `{`, `null`, `[]`, `"text"`, `{"type":1}`, `{"type":"assistant","message":{"content":"x"}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":{"weird":true}}]}}`,
		`{"type":"item.completed","item":null}`, `{"type":"tool_use","part":{"state":{"metadata":{"exit":"x"}}}}`,
		`{"type":"result","stats":"x"}`, strings.Repeat(`{"a":`, 10000)}
	for _, f := range flavors {
		tr := f.newTranslator(1)
		for _, l := range lines {
			evs, _ := tr.translate([]byte(l))
			for _, ev := range evs {
				if _, err := json.Marshal(ev.Data); err != nil {
					t.Errorf("%s: %q: %v", f.name(), l, err)
				}
			}
		}
		tr.finish()
	}
}

func TestClip(t *testing.T) {
	s := strings.Repeat("é", 100) // 200 bytes
	got, cut := clip(s, 50)
	if !cut || !strings.Contains(got, "bytes cut by corral") || !json.Valid(mustJSON(t, got)) {
		t.Fatalf("clip = %q, %v", got, cut)
	}
	if got, cut := clip("short", 50); got != "short" || cut {
		t.Fatalf("clip(short) = %q, %v", got, cut)
	}
	big := `{"x":"` + strings.Repeat("a", maxInput) + `"}`
	if in := inputJSON(json.RawMessage(big)); in[0] != '"' || len(in) > maxInput+200 {
		t.Fatalf("inputJSON of a huge object: %d bytes starting %q", len(in), in[:10])
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
