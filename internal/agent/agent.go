// Package agent defines what the job engine (internal/jobs) gives an agent
// run and what it gets back, for every agent that is not a plain script:
// Corral's own LLM tool loop (internal/agent/builtin) and the external CLI
// agents run inside the sandbox (internal/agent/cliagent).
//
// An agent reads its job's log (Session.History) to resume after a crash,
// writes every step to the log through Session.Emit (durably, in order),
// takes injected messages from Session.Inbox, and returns a Result when
// the task is done or an error when it is not.
package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
)

// Event is one entry an agent adds to its job's log: a DESIGN.md §3 type
// (cpapi.Event*) and data that marshals to that type's JSON.
type Event struct {
	Type string
	Data any
}

// Injected is a message a person (or the guardian) sent to the running
// agent. It is already in the log, as the message event Seq.
type Injected struct {
	Seq  int64
	Role string // cpapi role: user or system
	Text string
}

// Session is one run of an agent for one job.
type Session struct {
	JobID string
	// Tenant and SandboxID name the job's owner and its sandbox (the
	// control plane finds the sandbox's host directory by them).
	Tenant    string
	SandboxID string
	Task      string
	// Model is Corral's "provider/name" ("anthropic/claude-sonnet-4-5"),
	// or "" for the agent's default.
	Model string
	// Env is the job's own environment (already validated), for the
	// processes the agent starts in the sandbox.
	Env map[string]string
	// Sandbox is a client for the job's sandboxd.
	Sandbox *client.Client
	// Workdir is the agent's working directory in the sandbox.
	Workdir string
	// History is the job's log before this run began: empty on a fresh
	// start; after a crash, everything the previous run wrote, in order.
	History []cpapi.Event
	// Emit appends events to the job's log, durably and in order. An
	// error means the run must stop (the job was cancelled or is final).
	Emit func(ctx context.Context, evs ...Event) error
	// Inbox delivers injected messages, in log order, while the run lasts.
	Inbox <-chan Injected
	// Budget limits the run; zero fields are unlimited.
	Budget Budget
}

// Budget limits one job's agent.
type Budget struct {
	MaxSteps  int   // LLM calls
	MaxTokens int64 // input + output tokens over the whole job
}

// Result is what a finished agent reports.
type Result struct {
	Summary  string
	ExitCode *int  // for CLI agents: the CLI's exit code
	Steps    int   // LLM calls (builtin) or turns (CLI), if known
	Tokens   int64 // tokens used, if known
}

// Agent runs a task to its end.
type Agent interface {
	Run(ctx context.Context, s *Session) (*Result, error)
}

// Error is an agent failure with the job's status_reason (cpapi.Reason*
// or one of the reasons below) and a message safe for the job's log.
type Error struct {
	Reason string
	Msg    string
	Err    error
}

// Reasons an agent run fails with, beyond cpapi's.
const (
	ReasonBudget = "budget_exceeded" // step or token budget spent
	ReasonLLM    = "llm_error"       // the model API failed after retries
)

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("agent: %s: %s: %v", e.Reason, e.Msg, e.Err)
	}
	return fmt.Sprintf("agent: %s: %s", e.Reason, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Fail returns an *Error.
func Fail(reason, msg string, err error) error { return &Error{Reason: reason, Msg: msg, Err: err} }

// AsError finds an *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
