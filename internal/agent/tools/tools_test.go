package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/agent/tools"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
)

// env starts a real sandboxd whose root is the host's / (as in a
// sandbox, where paths the shell sees and paths the files API takes are
// the same) and a workspace in a temp dir.
func env(t *testing.T) (*tools.Env, string) {
	t.Helper()
	d := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{Root: "/", Token: "tok"}})
	cl, err := client.New(d.URL, client.WithToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	id := fmt.Sprintf("job_test%d", os.Getpid())
	return &tools.Env{Sandbox: cl, JobID: id + strings.ReplaceAll(t.Name(), "/", "_"), Workdir: ws,
		ShellEnv: map[string]string{"PATH": os.Getenv("PATH"), "HOME": ws}}, ws
}

func run(t *testing.T, s *tools.Set, name string, input any) tools.Result {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), name, b)
	if err != nil {
		t.Fatalf("%s %s: %v", name, b, err)
	}
	return res
}

func TestBashPersistsStateAndExitCodes(t *testing.T) {
	e, ws := env(t)
	s, b, err := tools.ForSandbox(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if res := run(t, s, "bash", map[string]any{"command": "mkdir sub && cd sub && export FOO=bar && pwd"}); res.IsError || strings.TrimSpace(res.Output) != filepath.Join(ws, "sub") {
		t.Fatalf("first: %+v", res)
	}
	res := run(t, s, "bash", map[string]any{"command": "pwd; echo $FOO"})
	if got := strings.TrimSpace(res.Output); got != filepath.Join(ws, "sub")+"\nbar" {
		t.Fatalf("state did not persist: %q", got)
	}
	res = run(t, s, "bash", map[string]any{"command": "echo out; echo err >&2; exit_code() { return 3; }; exit_code"})
	if !res.IsError || res.ExitCode == nil || *res.ExitCode != 3 || !strings.Contains(res.Output, "out") || !strings.Contains(res.Output, "err") {
		t.Fatalf("exit code: %+v", res)
	}
	// stdin is /dev/null: a reader gets EOF instead of hanging.
	res = run(t, s, "bash", map[string]any{"command": "cat; echo done"})
	if strings.TrimSpace(res.Output) != "done" {
		t.Fatalf("stdin: %q", res.Output)
	}
	// A syntax error is an error result, and the shell carries on.
	res = run(t, s, "bash", map[string]any{"command": "if then fi ((("})
	if !res.IsError || *res.ExitCode != 2 {
		t.Fatalf("syntax error: %+v", res)
	}
	// History expansion is off; long commands (through a file) work too.
	res = run(t, s, "bash", map[string]any{"command": "echo 'it''s'\"!\" \"wow!\""})
	if strings.TrimSpace(res.Output) != "its! wow!" {
		t.Fatalf("quotes and !: %q", res.Output)
	}
	long := "x=0\n" + strings.Repeat("x=$((x+1))\n", 400) + "echo $x"
	res = run(t, s, "bash", map[string]any{"command": long})
	if strings.TrimSpace(res.Output) != "400" {
		t.Fatalf("long command: %q", res.Output)
	}
	// Heredocs, quotes and a marker look-alike in the output.
	res = run(t, s, "bash", map[string]any{"command": "cat <<'EOF'\nline \"1\" $HOME\nEOF\nprintf '\\036CORRAL:fake:9\\036\\n'"})
	if !strings.Contains(res.Output, `line "1" $HOME`) || *res.ExitCode != 0 {
		t.Fatalf("heredoc: %+v", res)
	}
}

func TestBashTimeoutInterruptsAndShellSurvives(t *testing.T) {
	e, _ := env(t)
	s, b, err := tools.ForSandbox(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	run(t, s, "bash", map[string]any{"command": "export KEEP=yes"})
	res := run(t, s, "bash", map[string]any{"command": "echo start; sleep 30; echo never", "timeout": 1})
	if !res.IsError || !strings.Contains(res.Output, "start") || strings.Contains(res.Output, "never") || !strings.Contains(res.Output, "interrupted") {
		t.Fatalf("timeout: %+v", res)
	}
	res = run(t, s, "bash", map[string]any{"command": "echo $KEEP"})
	if strings.TrimSpace(res.Output) != "yes" {
		t.Fatalf("the shell did not survive the interrupt: %q", res.Output)
	}
	// A command that ignores ctrl-C: the shell is replaced.
	res = run(t, s, "bash", map[string]any{"command": "trap '' INT; sleep 30", "timeout": 1})
	if !res.IsError || !strings.Contains(res.Output, "killed") {
		t.Fatalf("ignored INT: %+v", res)
	}
	res = run(t, s, "bash", map[string]any{"command": "echo again"})
	if !strings.Contains(res.Output, "again") {
		t.Fatalf("after replacing the shell: %+v", res)
	}
}

func TestBashExitAndRestart(t *testing.T) {
	e, _ := env(t)
	s, b, err := tools.ForSandbox(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	run(t, s, "bash", map[string]any{"command": "export GONE=1"})
	res := run(t, s, "bash", map[string]any{"command": "exit 4"})
	if res.ExitCode == nil || *res.ExitCode != 4 || !strings.Contains(res.Output, "shell exited") {
		t.Fatalf("exit: %+v", res)
	}
	res = run(t, s, "bash", map[string]any{"command": "echo ${GONE:-unset}"})
	if !strings.Contains(res.Output, "unset") || !strings.Contains(res.Output, "new one") {
		t.Fatalf("restart: %+v", res)
	}
	res = run(t, s, "bash", map[string]any{"command": "export X=1", "restart": true})
	if res.IsError {
		t.Fatalf("restart flag: %+v", res)
	}
}

func TestBashLongOutputKeepsHeadAndTail(t *testing.T) {
	e, _ := env(t)
	s, b, err := tools.ForSandbox(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	res := run(t, s, "bash", map[string]any{"command": "echo FIRST; head -c 3000000 /dev/zero | tr '\\0' 'x'; echo; echo LAST"})
	if res.IsError || !strings.HasPrefix(res.Output, "FIRST") || !strings.Contains(res.Output, "LAST") {
		t.Fatalf("long output: head %q tail %q", res.Output[:min(50, len(res.Output))], res.Output[max(0, len(res.Output)-50):])
	}
	if len(res.Output) > 3*tools.MaxOutput/2+1000 {
		t.Fatalf("output not bounded: %d bytes", len(res.Output))
	}
	cut, ok := tools.Truncate(res.Output, 1000)
	if !ok || len(cut) > 1200 || !strings.HasPrefix(cut, "FIRST") || !strings.HasSuffix(strings.TrimSpace(cut), "LAST") {
		t.Fatalf("truncate: %q", cut)
	}
}

func TestBashRecoverFindsAFinishedCommand(t *testing.T) {
	e, _ := env(t)
	s, b, err := tools.ForSandbox(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"command":"echo recovered-output; exit_with() { return 5; }; exit_with"}`)
	if res, err := b.RunCall(context.Background(), "s3c0", in); err != nil || *res.ExitCode != 5 {
		t.Fatalf("run: %+v %v", res, err)
	}
	run(t, s, "bash", map[string]any{"command": "echo later"})
	// A new control plane: a fresh tool over the same shell.
	_, b2, err := tools.ForSandbox(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close(context.Background())
	res, found, err := b2.Recover(context.Background(), "s3c0", in)
	if err != nil || !found || *res.ExitCode != 5 || strings.TrimSpace(res.Output) != "recovered-output" {
		t.Fatalf("recover: %+v found=%v err=%v", res, found, err)
	}
	if _, found, err := b2.Recover(context.Background(), "s9c9", in); err != nil || found {
		t.Fatalf("a call that never ran was found: %v %v", found, err)
	}
	// The recovered shell keeps working, with its state.
	res2, err := b2.RunCall(context.Background(), "s4c0", json.RawMessage(`{"command":"echo next"}`))
	if err != nil || strings.TrimSpace(res2.Output) != "next" {
		t.Fatalf("after recover: %+v %v", res2, err)
	}
}

func TestEditor(t *testing.T) {
	e, ws := env(t)
	s, b, err := tools.ForSandbox(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	res := run(t, s, "editor", map[string]any{"command": "create", "path": "pkg/a.py", "file_text": "def f():\n    return 1\n\nprint(f())\n"})
	if res.IsError {
		t.Fatalf("create: %+v", res)
	}
	res = run(t, s, "editor", map[string]any{"command": "view", "path": "pkg/a.py"})
	if !strings.Contains(res.Output, "     2\t    return 1") {
		t.Fatalf("view: %q", res.Output)
	}
	res = run(t, s, "editor", map[string]any{"command": "view", "path": "pkg/a.py", "view_range": []int{2, -1}})
	if strings.Contains(res.Output, "def f") || !strings.Contains(res.Output, "print") {
		t.Fatalf("view range: %q", res.Output)
	}
	if res := run(t, s, "editor", map[string]any{"command": "view", "path": "pkg/a.py", "view_range": []int{9, 12}}); !res.IsError {
		t.Fatalf("range outside: %+v", res)
	}
	res = run(t, s, "editor", map[string]any{"command": "str_replace", "path": "pkg/a.py", "old_str": "return 1", "new_str": "return 2"})
	if res.IsError || !strings.Contains(res.Output, "return 2") {
		t.Fatalf("str_replace: %+v", res)
	}
	if res := run(t, s, "editor", map[string]any{"command": "str_replace", "path": "pkg/a.py", "old_str": "nothere", "new_str": "x"}); !res.IsError || !strings.Contains(res.Output, "not found") {
		t.Fatalf("missing old_str: %+v", res)
	}
	run(t, s, "editor", map[string]any{"command": "insert", "path": "pkg/a.py", "insert_line": 0, "new_str": "# header"})
	run(t, s, "editor", map[string]any{"command": "insert", "path": "pkg/a.py", "insert_line": 5, "new_str": "print(2)\nprint(3)"})
	got, _ := os.ReadFile(filepath.Join(ws, "pkg/a.py"))
	if string(got) != "# header\ndef f():\n    return 2\n\nprint(f())\nprint(2)\nprint(3)\n" {
		t.Fatalf("after inserts: %q", got)
	}
	if res := run(t, s, "editor", map[string]any{"command": "str_replace", "path": "pkg/a.py", "old_str": "print", "new_str": "x"}); !res.IsError || !strings.Contains(res.Output, "3 times") {
		t.Fatalf("ambiguous: %+v", res)
	}
	for range 3 {
		if res := run(t, s, "editor", map[string]any{"command": "undo", "path": "pkg/a.py"}); res.IsError {
			t.Fatalf("undo: %+v", res)
		}
	}
	got, _ = os.ReadFile(filepath.Join(ws, "pkg/a.py"))
	if string(got) != "def f():\n    return 1\n\nprint(f())\n" {
		t.Fatalf("after undo x3: %q", got)
	}
	run(t, s, "editor", map[string]any{"command": "undo", "path": "pkg/a.py"}) // the creation
	if _, err := os.Stat(filepath.Join(ws, "pkg/a.py")); !os.IsNotExist(err) {
		t.Fatalf("undoing the creation left the file: %v", err)
	}
	if res := run(t, s, "editor", map[string]any{"command": "undo", "path": "pkg/a.py"}); !res.IsError {
		t.Fatalf("undo with nothing left: %+v", res)
	}
	// Directories list; missing files and binary files are observations.
	res = run(t, s, "editor", map[string]any{"command": "view", "path": "."})
	if !strings.Contains(res.Output, "pkg/") {
		t.Fatalf("dir view: %q", res.Output)
	}
	if res := run(t, s, "editor", map[string]any{"command": "view", "path": "nope.txt"}); !res.IsError || !strings.Contains(res.Output, "no such") {
		t.Fatalf("missing: %+v", res)
	}
	os.WriteFile(filepath.Join(ws, "bin.dat"), []byte{0xff, 0xfe, 0x00}, 0o644)
	if res := run(t, s, "editor", map[string]any{"command": "view", "path": "bin.dat"}); !res.IsError || !strings.Contains(res.Output, "UTF-8") {
		t.Fatalf("binary: %+v", res)
	}
}

func TestSearchAndValidation(t *testing.T) {
	e, ws := env(t)
	s, b, err := tools.ForSandbox(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	os.WriteFile(filepath.Join(ws, "x.go"), []byte("package x\nfunc Needle() {}\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "y.txt"), []byte("Needle\n"), 0o644)
	res := run(t, s, "search", map[string]any{"pattern": "Needle", "glob": "*.go"})
	if !strings.Contains(res.Output, "x.go:2:") || strings.Contains(res.Output, "y.txt") {
		t.Fatalf("search: %q", res.Output)
	}
	if res := run(t, s, "search", map[string]any{"pattern": "("}); !res.IsError {
		t.Fatalf("bad regexp: %+v", res)
	}
	// Malformed calls are observations, not failures.
	for _, c := range []struct {
		tool  string
		input string
		want  string
	}{
		{"nope", `{}`, "unknown tool"},
		{"bash", `{"command":`, "not valid JSON"},
		{"bash", `{}`, "schema"},
		{"bash", `{"command":"ls","extra":1}`, "schema"},
		{"editor", `{"command":"str_replace","path":"a"}`, "schema"},
		{"editor", `{"command":"explode","path":"a"}`, "schema"},
	} {
		res, err := s.Run(context.Background(), c.tool, json.RawMessage(c.input))
		if err != nil || !res.IsError || !strings.Contains(res.Output, c.want) {
			t.Errorf("%s %s: %+v %v", c.tool, c.input, res, err)
		}
	}
	res = run(t, s, "finish", map[string]any{"summary": "done it"})
	if res.Finish == nil || *res.Finish != "done it" {
		t.Fatalf("finish: %+v", res)
	}
}
