package cliagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/gateway"
	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/runtime"
)

// Tuning of a run.
const (
	outputWindow = 16 << 20  // sandboxd's replay window of the CLI's output
	maxLine      = 8 << 20   // a longer stdout line is cut (and not translated)
	maxRawEvent  = 256 << 10 // a longer line is kept as head and tail in its raw event
	maxPrompt    = 96 << 10  // prompts travel in argv (128 KiB per argument)
	stderrTail   = 2 << 10   // kept for the message of a failed run
)

// defaultPath is PATH for the CLIs unless the job sets one: /usr/local
// first, where the default template installs Node.js and the CLIs.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Run runs the CLI for the session's task until it is done (see the
// package comment).
func (a *cliAgent) Run(ctx context.Context, s *agent.Session) (*agent.Result, error) {
	prov, model, err := a.f.provider(s.Model)
	if err != nil {
		return nil, failf(err, "%s: %v", a.f.name(), err)
	}
	if !a.cfg.Gateway.Has(prov) {
		return nil, agent.Fail(agent.ReasonLLM, fmt.Sprintf("%s needs the %s API, which this control plane has no key for", a.f.name(), prov), nil)
	}
	r := &runner{a: a, s: s, st: replay(a.f, s.Task, s.History), prov: prov, model: model, c: s.Sandbox,
		inbox: s.Inbox, budgetHit: make(chan struct{}, 1)}
	r.home = s.Env["HOME"]
	if r.home == "" {
		r.home = runtime.AgentHome
	}
	// The budget counts the model calls and tokens the gateway sees from
	// now on, on top of what the CLI reported before a restart (its turns
	// standing in for calls).
	r.calls.Store(int64(r.st.prior.steps))
	r.tokens.Store(r.st.prior.tokens)

	dir, err := a.cfg.HostDir(ctx, s)
	if err != nil {
		return nil, agent.Fail(cpapi.ReasonInfra, "the sandbox's socket directory cannot be found", err)
	}
	sock := gateway.SocketName(prov)
	l, err := a.cfg.Gateway.Listen(filepath.Join(dir, sock), prov, gateway.ListenOptions{Label: s.JobID, OnUsage: r.onUsage})
	if err != nil {
		return nil, agent.Fail(cpapi.ReasonInfra, "the model gateway cannot listen in the sandbox", err)
	}
	defer l.Close()
	r.gw = l
	port, err := forwardPort(ctx, s.Sandbox, sock)
	if err != nil {
		return nil, agent.Fail(cpapi.ReasonInfra, "sandboxd cannot forward a port to the model gateway", err)
	}
	r.baseURL = gateway.BaseURLFor(port)
	return r.loop(ctx)
}

// forwardPort returns the port of the sandbox's forward to the socket
// name, made now unless an earlier run made it (the running CLI has its
// port in its environment, so it must stay the same).
func forwardPort(ctx context.Context, c *client.Client, name string) (int, error) {
	list, err := c.ListForwards(ctx)
	if err != nil {
		return 0, err
	}
	for _, f := range list {
		if filepath.Base(f.Socket) == name {
			return f.Port, nil
		}
	}
	f, err := c.CreateForward(ctx, sandboxapi.ForwardRequest{Socket: name})
	if err != nil {
		return 0, err
	}
	return f.Port, nil
}

// runner is one Run: the state, and what the live side adds to it.
type runner struct {
	a     *cliAgent
	s     *agent.Session
	st    *state
	c     *client.Client
	gw    *gateway.Listener
	prov  string
	model string
	home  string

	inbox       <-chan agent.Injected // the session's, nil once closed
	baseURL     string
	stdinClosed bool
	stderr      []byte // the tail of the current run's stderr

	// Budget, counted from the gateway's answers. budget is set once,
	// by the gateway's goroutine that saw it spent; budgetHit then tells
	// the loop, which stops the CLI.
	calls, tokens atomic.Int64
	budget        atomic.Pointer[agent.Error]
	budgetHit     chan struct{}
}

// loop starts runs and follows them until the task is done.
func (r *runner) loop(ctx context.Context) (*agent.Result, error) {
	for {
		r.drainInbox()
		st := r.st
		if st.run == 0 {
			if err := r.start(ctx, r.s.Task, slices.Clone(st.pending)); err != nil {
				return nil, err
			}
		} else if st.exited != nil {
			if err := r.failure(ctx); err != nil {
				return nil, err
			}
			if len(st.pending) == 0 || st.session() == "" {
				return r.result(), nil
			}
			if err := r.start(ctx, "", slices.Clone(st.pending)); err != nil {
				return nil, err
			}
		}
		if err := r.follow(ctx); err != nil {
			return nil, err
		}
	}
}

// start records and starts the next run: the task (and any message
// injected before it) for the first, the queued messages (continuing the
// CLI's session) for later ones, whose task is "".
func (r *runner) start(ctx context.Context, task string, msgs []agent.Injected) error {
	st, f := r.st, r.a.f
	n := st.run + 1
	in := runInput{provider: r.prov, model: r.model, baseURL: r.baseURL, home: r.home}
	if n > 1 {
		in.session = st.session()
	}
	if !f.streaming() {
		prompt := task
		if len(msgs) > 0 {
			prompt = strings.TrimSpace(prompt + "\n\n" + injectedText(msgs))
		}
		if len(prompt) > maxPrompt {
			return failf(nil, "the prompt is %d bytes; %s takes at most %d on its command line", len(prompt), f.name(), maxPrompt)
		}
		in.prompt = prompt
	}
	cmd, err := f.command(in)
	if err != nil {
		return failf(err, "%s: %v", f.name(), err)
	}
	for path, content := range cmd.files {
		if _, err := r.c.WriteFile(ctx, path, strings.NewReader(content), 0o600); err != nil {
			return agent.Fail(cpapi.ReasonInfra, "writing the CLI's configuration into the sandbox failed", err)
		}
	}
	tag := runTag(r.s.JobID, n)
	rec := RawData{RawData: cpapi.RawData{Agent: f.name()}, Process: tag, Stream: streamStart}
	rec.Event, _ = json.Marshal(map[string]any{"command": cmd.path, "args": cmd.args})
	if !f.streaming() {
		rec.Injected = seqsOf(msgs)
	}
	if err := r.record(ctx, rec); err != nil {
		return err
	}
	r.stdinClosed, r.stderr = false, nil

	// PWD too: sandboxd's own would be inherited, and some CLIs (OpenCode)
	// take their project directory from it rather than from the cwd.
	env := map[string]string{"PATH": defaultPath, "HOME": r.home, "NO_COLOR": "1", "TERM": "dumb"}
	if r.s.Workdir != "" {
		env["PWD"] = r.s.Workdir
	}
	for k, v := range r.s.Env {
		env[k] = v
	}
	for k, v := range cmd.env {
		env[k] = v
	}
	_, err = r.c.Spawn(ctx, sandboxapi.SpawnRequest{
		Command: cmd.path, Args: cmd.args, Cwd: r.s.Workdir, Env: env, Tag: tag,
		Label: f.name(), Stdin: f.streaming(), BufferBytes: outputWindow,
	})
	switch {
	case errors.Is(err, client.ErrConflict):
		// A crashed control plane started it but did not get to record
		// more: follow it.
	case errors.Is(err, client.ErrUnprocessable):
		return failf(err, "%s cannot start in this sandbox (%v); the default template has it", cmd.path, err)
	case err != nil:
		return agent.Fail(cpapi.ReasonInfra, "starting "+cmd.path+" in the sandbox failed", err)
	}
	if f.streaming() {
		if task != "" {
			if err := r.write(ctx, task, nil); err != nil {
				return err
			}
		}
		if len(msgs) > 0 {
			if err := r.write(ctx, injectedText(msgs), seqsOf(msgs)); err != nil {
				return err
			}
		}
	}
	return nil
}

// write sends one user message to a streaming CLI's stdin, recorded first.
func (r *runner) write(ctx context.Context, text string, seqs []int64) error {
	line := claudeUserMessage(text)
	rec := RawData{RawData: cpapi.RawData{Agent: r.a.f.name(), Event: json.RawMessage(line[:len(line)-1])},
		Process: r.st.tag, Stream: streamStdin, Injected: seqs}
	if err := r.record(ctx, rec); err != nil {
		return err
	}
	if err := r.c.WriteInput(ctx, r.st.tag, line); err != nil {
		return agent.Fail(cpapi.ReasonInfra, "writing to the CLI's stdin failed", err)
	}
	return nil
}

// record applies a record of Corral's own to the state and logs it.
func (r *runner) record(ctx context.Context, rec RawData, extra ...agent.Event) error {
	evs, _ := r.st.apply(rec, nil)
	evs = append([]agent.Event{{Type: cpapi.EventRaw, Data: rec}}, append(evs, extra...)...)
	return r.s.Emit(ctx, evs...)
}

// item is what the stream reader hands the loop.
type item struct {
	ev  client.Event
	err error
}

// follow reads the current run's output from where the log stops until
// the process exits, translating it and delivering injected messages.
func (r *runner) follow(ctx context.Context) error {
	st := r.st
	stream, err := r.c.Connect(ctx, st.tag, client.ConnectOptions{Offset: st.next, Reconnect: true})
	if errors.Is(err, client.ErrNotFound) {
		return failf(err, "the %s process of this job is gone from the sandbox", r.a.f.name())
	}
	if err != nil {
		return agent.Fail(cpapi.ReasonSandboxLost, "the sandbox does not answer", err)
	}
	items := make(chan item)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			ev, err := stream.Next(ctx)
			select {
			case items <- item{ev, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		close(done)
		stream.Close()
		wg.Wait()
	}()

	lr := &lineReader{next: st.next}
	if err := r.maybeCloseStdin(ctx); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.budgetHit:
			_ = r.c.Signal(ctx, st.tag, "SIGTERM")
		case m, ok := <-r.inbox:
			if !ok {
				r.inbox = nil
				continue
			}
			if err := r.injected(ctx, m); err != nil {
				return err
			}
		case it := <-items:
			if it.err != nil {
				return agent.Fail(cpapi.ReasonSandboxLost, "the CLI's output stream broke", it.err)
			}
			ev := it.ev
			switch {
			case ev.Truncated != nil:
				lr.reset(ev.Truncated.From)
				if err := r.s.Emit(ctx, errorEvent(r.a.f.name(), fmt.Sprintf("output before offset %d was lost (the reader fell behind)", ev.Truncated.From), false)); err != nil {
					return err
				}
			case ev.Exit != nil:
				return r.exited(ctx, lr, ev.Exit)
			case ev.Stream == sandboxapi.StreamStderr:
				r.stderr = append(r.stderr, ev.Data...)
				if len(r.stderr) > stderrTail {
					r.stderr = r.stderr[len(r.stderr)-stderrTail:]
				}
			default:
				if err := r.lines(ctx, lr.feed(ev.Data, ev.Offset)); err != nil {
					return err
				}
				if err := r.maybeCloseStdin(ctx); err != nil {
					return err
				}
			}
		}
	}
}

// lines logs complete stdout lines: each one's raw event, then its
// translation, in one batch.
func (r *runner) lines(ctx context.Context, lines []line) error {
	if len(lines) == 0 {
		return nil
	}
	var evs []agent.Event
	for _, ln := range lines {
		rec := RawData{RawData: cpapi.RawData{Agent: r.a.f.name(), Offset: ln.end}, Process: r.st.tag}
		full := ln.data
		switch {
		case ln.cut || !json.Valid(ln.data):
			rec.Text, _ = clip(string(ln.data), maxRawEvent)
			rec.Truncated = ln.cut || len(ln.data) > maxRawEvent
			full = nil
		case len(ln.data) > maxRawEvent:
			rec.Text, _ = clip(string(ln.data), maxRawEvent)
			rec.Truncated = true
		default:
			rec.Event = json.RawMessage(ln.data)
		}
		if full == nil {
			full = []byte{} // nothing to translate
		}
		tr, _ := r.st.apply(rec, full)
		evs = append(evs, agent.Event{Type: cpapi.EventRaw, Data: rec})
		evs = append(evs, tr...)
	}
	return r.s.Emit(ctx, evs...)
}

// injected handles a message from the inbox: straight to a streaming
// CLI's open stdin, else queued for the next run.
func (r *runner) injected(ctx context.Context, m agent.Injected) error {
	if !r.st.inject(m) {
		return nil // delivered or queued already
	}
	if !r.a.f.streaming() || r.stdinClosed {
		return nil
	}
	msgs := slices.Clone(r.st.pending)
	return r.write(ctx, injectedText(msgs), seqsOf(msgs))
}

// drainInbox queues the messages that arrived, without waiting.
func (r *runner) drainInbox() {
	for {
		select {
		case m, ok := <-r.inbox:
			if !ok {
				r.inbox = nil
				return
			}
			r.st.inject(m)
		default:
			return
		}
	}
}

// maybeCloseStdin ends a streaming CLI's input once its last turn is over
// and it took in every message written: it then exits. Messages that
// arrived meanwhile are written instead.
func (r *runner) maybeCloseStdin(ctx context.Context) error {
	st := r.st
	if !r.a.f.streaming() || r.stdinClosed || !st.idle || st.took < st.written || st.exited != nil {
		return nil
	}
	r.drainInbox()
	if len(st.pending) > 0 {
		msgs := slices.Clone(st.pending)
		return r.write(ctx, injectedText(msgs), seqsOf(msgs))
	}
	r.stdinClosed = true
	if err := r.c.CloseStdin(ctx, st.tag); err != nil && !errors.Is(err, client.ErrConflict) {
		return agent.Fail(cpapi.ReasonInfra, "closing the CLI's stdin failed", err)
	}
	return nil
}

// exited logs the end of the current run: a last line without newline,
// the exit record and what the translator held back.
func (r *runner) exited(ctx context.Context, lr *lineReader, x *client.Exit) error {
	if err := r.lines(ctx, lr.flush()); err != nil {
		return err
	}
	rec := RawData{RawData: cpapi.RawData{Agent: r.a.f.name()}, Process: r.st.tag, Stream: streamExit}
	rec.Event, _ = json.Marshal(exitRecord{ExitCode: x.ExitCode, Signal: x.Signal})
	var extra []agent.Event
	if r.st.tr != nil {
		extra = r.st.tr.finish()
	}
	return r.record(ctx, rec, extra...)
}

// failure is the error the finished current run ended the job with, if
// any.
func (r *runner) failure(ctx context.Context) error {
	st, name := r.st, r.a.f.name()
	if e := r.budget.Load(); e != nil {
		return e
	}
	var o outcome
	if st.tr != nil {
		o = st.tr.outcome()
	}
	x := st.exited
	var msg string
	switch {
	case x.Signal != nil:
		msg = fmt.Sprintf("%s was killed by %s", name, *x.Signal)
	case x.ExitCode != nil && *x.ExitCode != 0:
		msg = fmt.Sprintf("%s exited with code %d", name, *x.ExitCode)
		if o.failed != "" {
			msg += ": " + o.failed
		}
	case o.failed != "":
		msg = name + ": " + o.failed
	default:
		return nil
	}
	detail := msg
	if tail := strings.TrimSpace(string(r.stderr)); tail != "" {
		detail += "\nstderr: " + tail
	}
	if err := r.s.Emit(ctx, errorEvent(name, detail, true)); err != nil {
		return err
	}
	res := r.result()
	return &agent.Error{Reason: cpapi.ReasonAgentError, Msg: msg, Err: &runError{res}}
}

// runError carries the failed run's result (summary, exit code, usage)
// along with an *agent.Error, for callers that want them.
type runError struct{ res *agent.Result }

func (e *runError) Error() string { return "the CLI run failed" }

// ResultOf returns the result a failed CLI run reached, if err carries
// one.
func ResultOf(err error) (*agent.Result, bool) {
	var re *runError
	if errors.As(err, &re) {
		return re.res, true
	}
	return nil, false
}

// result is the job's result after the current run.
func (r *runner) result() *agent.Result {
	st := r.st
	o := st.prior
	if st.tr != nil {
		cur := st.tr.outcome()
		o.tokens += cur.tokens
		o.steps += cur.steps
		if cur.summary != "" {
			o.summary = cur.summary
		}
	}
	res := &agent.Result{Summary: o.summary, Steps: o.steps, Tokens: o.tokens}
	if st.exited != nil {
		res.ExitCode = st.exited.ExitCode
	}
	if res.Tokens == 0 && r.gw != nil {
		u, _ := r.gw.Usage()
		res.Tokens = u.Total()
	}
	return res
}

// onUsage counts each model answer the gateway passed, against the
// session's budget. It runs on the gateway's goroutines.
func (r *runner) onUsage(u llm.Usage) {
	calls, tokens := r.calls.Add(1), r.tokens.Add(u.Total())
	b := r.s.Budget
	var msg string
	switch {
	case b.MaxSteps > 0 && calls > int64(b.MaxSteps):
		msg = fmt.Sprintf("the step budget (%d model calls) is spent", b.MaxSteps)
	case b.MaxTokens > 0 && tokens > b.MaxTokens:
		msg = fmt.Sprintf("the token budget (%d) is spent", b.MaxTokens)
	default:
		return
	}
	if r.budget.CompareAndSwap(nil, &agent.Error{Reason: agent.ReasonBudget, Msg: msg}) {
		r.budgetHit <- struct{}{} // buffered, sent once
	}
}
