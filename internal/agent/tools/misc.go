package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/llm"
)

// Search finds a regular expression in the sandbox's files (sandboxd's
// /v1/fs/search).
type Search struct{ env *Env }

// NewSearch returns the search tool of env.
func NewSearch(env *Env) *Search { return &Search{env: env} }

// Spec implements Tool.
func (s *Search) Spec() llm.Tool {
	return llm.Tool{Name: "search", Description: "Search file contents for a regular expression (RE2 syntax) under a directory " +
		"(default the workspace), optionally only files whose name matches glob (e.g. *.go). Returns path:line:column: text.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"pattern":{"type":"string","minLength":1},
"path":{"type":"string"},
"glob":{"type":"string"},
"max_results":{"type":"integer","minimum":1,"maximum":1000}},
"required":["pattern"],"additionalProperties":false}`)}
}

// Run implements Tool.
func (s *Search) Run(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		MaxResults int    `json:"max_results"`
	}
	if err := decode(input, &in); err != nil {
		return Result{}, err
	}
	p := abs(s.env.Workdir, in.Path)
	if in.MaxResults == 0 {
		in.MaxResults = 100
	}
	res, err := s.env.Sandbox.Search(ctx, sandboxapi.SearchRequest{Path: p, Pattern: in.Pattern, Glob: in.Glob, MaxResults: in.MaxResults})
	if err != nil {
		return fileError(Result{}, err, p)
	}
	if len(res.Matches) == 0 {
		return Result{Output: "no matches"}, nil
	}
	var b strings.Builder
	for _, m := range res.Matches {
		text := m.Text
		if len(text) > 300 {
			text = strings.ToValidUTF8(text[:300], "") + "…"
		}
		fmt.Fprintf(&b, "%s:%d:%d: %s\n", m.Path, m.Line, m.Column, text)
	}
	if res.Truncated {
		fmt.Fprintf(&b, "[more matches not shown: narrow the pattern, path or glob]\n")
	}
	return Result{Output: b.String()}, nil
}

// Finish ends the run with a summary of what was done.
type Finish struct{}

// Spec implements Tool.
func (Finish) Spec() llm.Tool {
	return llm.Tool{Name: "finish", Description: "Call when the task is complete (or cannot be completed): summary says what " +
		"you did, what changed and anything left open. Nothing runs after it.",
		Schema: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string","minLength":1}},
"required":["summary"],"additionalProperties":false}`)}
}

// Run implements Tool.
func (Finish) Run(_ context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Summary string `json:"summary"`
	}
	if err := decode(input, &in); err != nil {
		return Result{}, err
	}
	return Result{Output: "finished", Finish: &in.Summary}, nil
}

// Recall searches the job's whole log: what was condensed away or cut
// from long outputs is still there.
type Recall struct{ env *Env }

// NewRecall returns the recall tool of env.
func NewRecall(env *Env) *Recall { return &Recall{env: env} }

// Spec implements Tool.
func (r *Recall) Spec() llm.Tool {
	return llm.Tool{Name: "recall", Description: "Search the full history of this job (every command output, file view, " +
		"message and earlier summary, including what was cut or summarised away) for text. query is a case-insensitive " +
		"substring or, if it parses, a regular expression. Returns matching excerpts, newest first.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"query":{"type":"string","minLength":1},
"limit":{"type":"integer","minimum":1,"maximum":50}},
"required":["query"],"additionalProperties":false}`)}
}

// Run implements Tool.
func (r *Recall) Run(_ context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := decode(input, &in); err != nil {
		return Result{}, err
	}
	if in.Limit == 0 {
		in.Limit = 10
	}
	if r.env.Recall == nil {
		return Errorf("recall is not available in this run"), nil
	}
	return Result{Output: r.env.Recall(in.Query, in.Limit)}, nil
}
