// Package cliagent runs the external agent CLIs — Claude Code, Codex,
// OpenCode and Gemini CLI — inside a job's sandbox (DESIGN.md §5), as
// agent.Agent values the job engine drives like any other agent.
//
// # A run
//
// The CLIs come installed in the default template (internal/template,
// agentclis.go). Run:
//
//  1. listens on the provider's socket in the sandbox's host-side socket
//     directory (gateway.Listen: /run/corral/llm-anthropic.sock inside),
//     which reverse-proxies to the real API with the real key;
//  2. asks sandboxd for a forward from a 127.0.0.1 port inside the
//     sandbox to that socket (POST /v1/forwards), reusing the one a
//     previous run of the job made;
//  3. starts the CLI through sandboxd (pipes, tag "agent-<job>-<n>", cwd
//     Session.Workdir, env Session.Env plus the forward as the API's base
//     URL, a placeholder key and HOME), in its non-interactive JSON mode
//     with tool permissions granted (the sandbox is the boundary);
//  4. reads its stdout through the SDK's reconnecting stream and, for
//     each line, writes a raw event (RawData: the native event, the
//     process and the offset the line ended at) followed by its
//     translation (message, agent.thought, tool.call, tool.result, error);
//  5. maps the end: the final message is the summary, the exit code the
//     result's, tokens and turns as the CLI reported them; a non-zero exit
//     or a failure the CLI reported is an *agent.Error (agent_error).
//
// The real API key never enters the sandbox: not the CLI's environment,
// not its files, not the answers (see package gateway).
//
// # Injected messages
//
// Claude Code reads stream-json from stdin: the task and each injected
// message are user messages written to it, taken into the running turn
// (or starting a new one), and stdin is closed when a result arrives with
// every message taken. The other CLIs have no streaming input in their
// headless modes, so a message injected while one runs is queued, and
// when the run ends the CLI's session is continued in a new run (codex
// exec resume THREAD, opencode run --session ID, gemini --resume ID) with
// the queued messages as its prompt. Each delivery is recorded (RawData
// Injected) so a resumed run neither loses nor repeats one.
//
// # Resuming after a crash
//
// The CLI belongs to sandboxd, not to the control plane, so it keeps
// running when the control plane dies. A new Run with a non-empty
// Session.History rebuilds its state by feeding the raw events of the log
// to fresh translators (same state, output discarded), finds the current
// process by its tag, and continues its output from the offset after the
// last line it translated: no line is translated twice, none is skipped
// while it is in sandboxd's replay window.
package cliagent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/gateway"
	"github.com/corral-sh/corral/internal/llm"
)

// Config is what every CLI agent needs from the control plane.
type Config struct {
	// Gateway serves the model APIs to sandboxes.
	Gateway *gateway.Gateway
	// HostDir returns the host directory mounted at /run/corral in the
	// session's sandbox (sandboxes.Service.HostDir).
	HostDir func(ctx context.Context, s *agent.Session) (string, error)
	// Logger receives what the agent did besides its events;
	// slog.Default() when nil.
	Logger *slog.Logger
}

// flavor is one CLI: how to start it and how to read it.
type flavor interface {
	// name is the agent's name in a job request: "claude-code".
	name() string
	// provider picks the gateway provider for a Corral model
	// ("provider/name", or "" for the CLI's default) and the model name
	// to give the CLI ("" for its default).
	provider(model string) (prov, name string, err error)
	// streaming reports whether injected messages go to stdin while the
	// CLI runs (else they wait for the next run).
	streaming() bool
	// command is the process of one run.
	command(in runInput) (command, error)
	// newTranslator reads run number run (from 1).
	newTranslator(run int) translator
}

// runInput is what a flavor needs to build one run's command.
type runInput struct {
	provider string
	model    string
	baseURL  string // the forward: http://127.0.0.1:port
	prompt   string // the task, or the queued messages (not for streaming CLIs)
	session  string // the CLI session to continue, "" for a new one
	home     string
}

// command is a CLI process to start.
type command struct {
	path  string
	args  []string
	env   map[string]string
	files map[string]string // written in the sandbox before the start: path → content
}

var flavors = []flavor{claudeCode{}, codex{}, openCode{}, gemini{}}

// Names lists the CLI agents, as job requests name them.
func Names() []string {
	var out []string
	for _, f := range flavors {
		out = append(out, f.name())
	}
	return out
}

// New returns the agent named name (one of Names).
func New(name string, cfg Config) (agent.Agent, error) {
	i := slices.IndexFunc(flavors, func(f flavor) bool { return f.name() == name })
	if i < 0 {
		return nil, fmt.Errorf("cliagent: unknown agent %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	if cfg.Gateway == nil || cfg.HostDir == nil {
		return nil, fmt.Errorf("cliagent: %s needs a Gateway and HostDir", name)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &cliAgent{f: flavors[i], cfg: cfg}, nil
}

type cliAgent struct {
	f   flavor
	cfg Config
}

var _ agent.Agent = (*cliAgent)(nil)

// oneProvider accepts models of provider prov (or of one of its aliases).
func oneProvider(model, prov string, aliases ...string) (string, string, error) {
	if model == "" {
		return prov, "", nil
	}
	p, name, err := llm.SplitModel(model)
	if err != nil {
		return "", "", err
	}
	if p != prov && !slices.Contains(aliases, p) {
		return "", "", fmt.Errorf("model %q: this agent only speaks to %s models (%s/<name>)", model, prov, prov)
	}
	return prov, name, nil
}

// eitherProvider accepts models of any of provs; the first is the default.
func eitherProvider(model string, provs ...string) (string, string, error) {
	if model == "" {
		return provs[0], "", nil
	}
	p, name, err := llm.SplitModel(model)
	if err != nil {
		return "", "", err
	}
	if !slices.Contains(provs, p) {
		return "", "", fmt.Errorf("model %q: this agent speaks to %s models", model, strings.Join(provs, " or "))
	}
	return p, name, nil
}

// failf is an agent_error with a message for the job's log.
func failf(err error, format string, args ...any) error {
	return agent.Fail(cpapi.ReasonAgentError, fmt.Sprintf(format, args...), err)
}
