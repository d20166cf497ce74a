// Package tools holds the built-in agent's tools: bash (a persistent shell
// in the sandbox), editor, search, finish and recall. Each tool is a JSON
// schema the model sees and a Run that executes a call through the
// sandbox's daemon. A tool's failure the model can act on (a bad path, a
// command that exits non-zero, input that does not match the schema) is an
// observation with IsError set, never a Go error; a Go error means the
// sandbox cannot be reached and the run must stop.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/llm"
)

// Env is what the tools of one run share.
type Env struct {
	Sandbox *client.Client
	JobID   string
	// Workdir is where relative paths and the shell start.
	Workdir string
	// ShellEnv is the environment of the shell the bash tool starts.
	ShellEnv map[string]string
	// Recall searches the job's whole log (the recall tool).
	Recall func(query string, limit int) string
}

// Result is one tool call's observation.
type Result struct {
	Output   string
	ExitCode *int
	IsError  bool
	Images   []llm.Part
	// Finish is set by the finish tool: the run's summary.
	Finish *string
}

// Errorf is an error observation.
func Errorf(format string, args ...any) Result {
	return Result{Output: fmt.Sprintf(format, args...), IsError: true}
}

// Tool is one tool.
type Tool interface {
	Spec() llm.Tool
	// Run executes a call whose input matched the schema. A returned
	// error means the sandbox failed, not the call.
	Run(ctx context.Context, input json.RawMessage) (Result, error)
}

// Set is the tools of one run, by name, with their compiled schemas.
type Set struct {
	tools   map[string]Tool
	schemas map[string]*jsonschema.Schema
	specs   []llm.Tool
}

// NewSet compiles the tools' schemas. It fails only on a programming
// error (a bad schema or a duplicate name).
func NewSet(ts ...Tool) (*Set, error) {
	s := &Set{tools: map[string]Tool{}, schemas: map[string]*jsonschema.Schema{}}
	c := jsonschema.NewCompiler()
	for _, t := range ts {
		spec := t.Spec()
		if _, dup := s.tools[spec.Name]; dup {
			return nil, fmt.Errorf("tools: %q twice", spec.Name)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(spec.Schema)))
		if err != nil {
			return nil, fmt.Errorf("tools: schema of %q: %w", spec.Name, err)
		}
		url := "mem://tools/" + spec.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("tools: schema of %q: %w", spec.Name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("tools: schema of %q: %w", spec.Name, err)
		}
		s.tools[spec.Name], s.schemas[spec.Name] = t, sch
		s.specs = append(s.specs, spec)
	}
	sort.Slice(s.specs, func(i, j int) bool { return s.specs[i].Name < s.specs[j].Name })
	return s, nil
}

// Specs are the tools as the model sees them.
func (s *Set) Specs() []llm.Tool { return s.specs }

// Get returns the tool called name.
func (s *Set) Get(name string) (Tool, bool) {
	t, ok := s.tools[name]
	return t, ok
}

// Run validates input against the tool's schema and runs it. An unknown
// tool or an input that is not valid JSON or does not match the schema is
// an error observation telling the model what was wrong.
func (s *Set) Run(ctx context.Context, name string, input json.RawMessage) (Result, error) {
	if res, ok := s.Validate(name, input); !ok {
		return res, nil
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	return s.tools[name].Run(ctx, input)
}

// Validate checks a call: ok, or the error observation saying what is
// wrong with it.
func (s *Set) Validate(name string, input json.RawMessage) (Result, bool) {
	if _, ok := s.tools[name]; !ok {
		names := make([]string, 0, len(s.specs))
		for _, sp := range s.specs {
			names = append(names, sp.Name)
		}
		return Errorf("unknown tool %q; the tools are: %s", name, strings.Join(names, ", ")), false
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(input)))
	if err != nil {
		return Errorf("the input of %s is not valid JSON (%v); send a JSON object matching its schema", name, err), false
	}
	if err := s.schemas[name].Validate(v); err != nil {
		return Errorf("the input of %s does not match its schema: %s", name, schemaError(err)), false
	}
	return Result{}, true
}

// schemaError flattens a validation error to a few lines.
func schemaError(err error) string {
	msg := err.Error()
	if len(msg) > 1000 {
		msg = msg[:1000] + "…"
	}
	return msg
}

// decode unmarshals a validated input into v.
func decode(input json.RawMessage, v any) error {
	if err := json.Unmarshal(input, v); err != nil {
		return fmt.Errorf("tools: decoding a validated input: %w", err)
	}
	return nil
}

// abs makes p absolute against dir.
func abs(dir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(dir, p)
}

// Truncate shortens s to at most max bytes by keeping its head and tail
// and saying how much was left out; it reports whether it cut. The cut
// falls on line boundaries where it can, never inside a UTF-8 sequence.
func Truncate(s string, max int) (string, bool) {
	if len(s) <= max || max <= 0 {
		return s, false
	}
	half := max / 2
	head, tail := s[:half], s[len(s)-half:]
	if i := strings.LastIndexByte(head, '\n'); i > half/2 {
		head = head[:i+1]
	}
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < half/2 {
		tail = tail[i+1:]
	}
	head, tail = strings.ToValidUTF8(head, ""), strings.ToValidUTF8(tail, "")
	// Drop a rune cut in half at either edge.
	head = strings.TrimRight(head, "\uFFFD")
	tail = strings.TrimLeft(tail, "\uFFFD")
	cut := len(s) - len(head) - len(tail)
	return fmt.Sprintf("%s\n[… %d bytes of output omitted; the whole output is in the job's log: use recall to search it …]\n%s", head, cut, tail), true
}

// ForSandbox builds the built-in agent's tools for env: bash, editor,
// search, finish, recall and lsp (a missing language server is an
// observation), plus computer where the sandbox has a desktop and browser
// where it has a browser.
func ForSandbox(ctx context.Context, env *Env) (*Set, *Bash, error) {
	b := NewBash(env)
	ts := []Tool{b, NewEditor(env), NewSearch(env), Finish{}, NewRecall(env), NewLSP(env)}
	if c := NewComputer(env); c.Available(ctx) {
		ts = append(ts, c)
	}
	if br := NewBrowser(env); br.Available(ctx) {
		ts = append(ts, br)
	}
	s, err := NewSet(ts...)
	if err != nil {
		return nil, nil, err
	}
	return s, b, nil
}
