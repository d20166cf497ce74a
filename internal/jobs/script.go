package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/store"
)

// Tuning of sandbox creation and of the script's process.
const (
	createTimeout = 5 * time.Minute  // one sandbox creation attempt
	maxBackoff    = 30 * time.Second // between creation attempts
	outputWindow  = 16 << 20         // sandboxd's replay window for a job's output
)

// processTag is the sandboxd tag of job id's process, by which a recovered
// runner finds it.
func processTag(id string) string { return "job-" + id }

// runScript runs an agent=script job from its current state: sandbox,
// `sh -c command`, output, exit, artifacts, final state.
func (r *runner) runScript(ctx context.Context, req *cpapi.JobRequest) error {
	var from int64 // where the process's output continues
	if r.recovered {
		rs, err := r.m.scanLog(ctx, r.id)
		if err != nil {
			return err
		}
		from = rs.next
		r.out.resume(rs)
	}
	if r.getStatus() == store.JobPending {
		if _, err := r.transition(ctx, store.JobCreating, "", nil); err != nil {
			return err
		}
	}
	if r.getStatus() == store.JobCreating {
		if err := r.provision(ctx, req); err != nil {
			return err
		}
		if err := r.prepareWorkspace(ctx, req); err != nil {
			return err
		}
		sb := r.sandbox()
		if _, err := r.transition(ctx, store.JobRunning, "", func(j *store.Job) { j.SandboxID = sb }); err != nil {
			return err
		}
	}
	cl, err := r.client(ctx)
	if err != nil {
		return err
	}
	exit := &client.Exit{ExitCode: new(int)} // a completing job exited 0
	if r.getStatus() == store.JobRunning {
		if exit, err = r.script(ctx, cl, req, from); err != nil {
			return err
		}
		if code := exitCode(exit); code != 0 {
			return r.failExit(ctx, cl, exit)
		}
		if _, err := r.transition(ctx, store.JobCompleting, "", nil); err != nil {
			return err
		}
	}
	res := r.result(exit)
	if err := r.complete(ctx, req, cl, res); err != nil {
		return err
	}
	if _, err := r.m.pack(ctx, r, cl); err != nil {
		return r.sandboxErr(ctx, err, "packing the artifacts failed")
	}
	// Teardown comes before the final state: a finished job holds nothing.
	r.m.removeSandbox(ctx, r.tenant, r.id, r.sandbox())
	if _, err := r.finish(ctx, store.JobCompleted, "", func(j *store.Job) { j.Result = res }); err != nil {
		return err
	}
	return nil
}

// failExit ends a job whose command exited non-zero: artifacts, then
// failed/exit_code with the code in the result.
func (r *runner) failExit(ctx context.Context, cl *client.Client, exit *client.Exit) error {
	if _, err := r.m.pack(ctx, r, cl); err != nil {
		r.m.log.Warn("jobs: packing a failed job's artifacts", "job", r.id, "err", err)
	}
	res := r.result(exit)
	r.m.removeSandbox(ctx, r.tenant, r.id, r.sandbox())
	if _, err := r.finish(ctx, store.JobFailed, cpapi.ReasonExitCode, func(j *store.Job) { j.Result = res }); err != nil {
		return err
	}
	return nil
}

// result is what the job produced: the exit code and the end of its output.
func (r *runner) result(exit *client.Exit) *store.JobResult {
	code := exitCode(exit)
	res := &store.JobResult{ExitCode: &code, Summary: r.out.summary()}
	if exit != nil && exit.Signal != nil {
		res.Summary = fmt.Sprintf("killed by %s\n%s", *exit.Signal, res.Summary)
	}
	return res
}

// exitCode is a process's exit code, 128+n for one killed by signal n
// (as a shell reports it), or -1 when unknown.
func exitCode(e *client.Exit) int {
	switch {
	case e == nil:
		return -1
	case e.ExitCode != nil:
		return *e.ExitCode
	case e.Signal != nil:
		if n := unix.SignalNum(*e.Signal); n != 0 {
			return 128 + int(n)
		}
	}
	return -1
}

// provision gives the job a sandbox: the recorded one if it still answers
// (a job recovered while creating), else a new one, retrying
// infrastructure failures with backoff.
func (r *runner) provision(ctx context.Context, req *cpapi.JobRequest) error {
	if id := r.sandbox(); id != "" {
		actx, cancel := context.WithTimeout(ctx, r.m.probeTimeout())
		err := r.m.sb.Alive(actx, r.tenant, id)
		cancel()
		if err == nil {
			return nil
		}
		r.m.removeSandbox(ctx, r.tenant, r.id, id)
		r.setSandbox("")
	}
	sreq := cpapi.SandboxRequest{Template: req.Template, Runtime: req.Runtime, Resources: req.Resources,
		Network: req.Network, Env: req.Env}
	backoff := r.m.opts.RetryBackoff
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, createTimeout)
		id, rt, err := r.m.sb.Create(cctx, r.tenant, sreq, r.id)
		cancel()
		if err == nil {
			r.setSandbox(id) // before anything can fail, so it is cleaned up
			if err := r.m.st.SetJobSandbox(ctx, r.id, rt, id); err != nil {
				return err
			}
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		r.m.log.Warn("jobs: creating a sandbox failed", "job", r.id, "attempt", attempt, "err", err)
		if permanent(err) {
			return &failure{reason: cpapi.ReasonInfra, msg: safeMessage(err, "the sandbox cannot be created"), err: err}
		}
		if attempt >= r.m.opts.MaxAttempts {
			return &failure{reason: cpapi.ReasonInfra,
				msg: fmt.Sprintf("creating the sandbox failed %d times", attempt), err: err}
		}
		_ = r.emit(ctx, errorEvent(fmt.Sprintf("%s (attempt %d of %d); retrying in %v",
			safeMessage(err, "creating the sandbox failed"), attempt, r.m.opts.MaxAttempts, backoff)))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// script runs (or, recovered, re-attaches to) the job's process and copies
// its output into the log from offset from until it exits.
func (r *runner) script(ctx context.Context, cl *client.Client, req *cpapi.JobRequest, from int64) (*client.Exit, error) {
	p, err := r.process(ctx, cl, req, from)
	if err != nil {
		return nil, err
	}
	st, err := cl.Connect(ctx, p.ID, client.ConnectOptions{Offset: from, Reconnect: true})
	if err != nil {
		return nil, r.sandboxErr(ctx, err, "connecting to the job's process failed")
	}
	defer st.Close()
	r.out.start(from)
	return r.pump(ctx, st)
}

// process finds the job's process by its tag or, if it was never started,
// starts it.
func (r *runner) process(ctx context.Context, cl *client.Client, req *cpapi.JobRequest, from int64) (*sandboxapi.Process, error) {
	tag := processTag(r.id)
	for attempt := 1; ; attempt++ {
		p, err := cl.GetProcess(ctx, tag)
		if err == nil {
			return p, nil
		}
		if errors.Is(err, client.ErrNotFound) {
			if from > 0 { // it ran, and sandboxd forgot it: not the sandbox we knew
				return nil, &failure{reason: cpapi.ReasonSandboxLost, msg: "the job's process is gone from its sandbox", err: err}
			}
			env, err := r.agentEnv(ctx, req)
			if err != nil {
				return nil, err
			}
			p, err = cl.Spawn(ctx, sandboxapi.SpawnRequest{Command: "/bin/sh", Args: []string{"-c", req.Command},
				Cwd: runtime.WorkspaceDir, Env: env, Tag: tag, Label: "job " + r.id, BufferBytes: outputWindow})
			if err == nil {
				return p, nil
			}
			if errors.Is(err, client.ErrConflict) {
				continue // started meanwhile: attach to it
			}
			if errors.Is(err, client.ErrUnprocessable) || errors.Is(err, client.ErrInvalid) {
				return nil, &failure{reason: cpapi.ReasonInfra, msg: "the sandbox cannot run the command: " + apiDetail(err), err: err}
			}
		}
		if attempt >= r.m.opts.MaxAttempts {
			return nil, r.sandboxErr(ctx, err, "starting the job's process failed")
		}
		t := time.NewTimer(r.m.opts.RetryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// apiDetail is the daemon's own explanation of an error it answered.
func apiDetail(err error) string {
	var ae *client.APIError
	if errors.As(err, &ae) && ae.Detail != "" {
		return ae.Detail
	}
	return "refused"
}

// pump copies the stream's output into the batcher until the process
// exits. The batcher's flush timer runs alongside for as long as pump.
func (r *runner) pump(ctx context.Context, st *client.Stream) (*client.Exit, error) {
	fctx, stopFlush := context.WithCancel(ctx)
	flushDone := make(chan struct{})
	go func() {
		defer close(flushDone)
		r.out.flushLoop(fctx)
	}()
	defer func() { stopFlush(); <-flushDone }()

	for {
		ev, err := st.Next(ctx)
		if err != nil {
			return nil, r.sandboxErr(ctx, err, "the job's output stream broke")
		}
		switch {
		case ev.Exit != nil:
			if err := r.out.flushRetry(ctx, true); err != nil {
				return nil, err
			}
			return ev.Exit, nil
		case ev.Truncated != nil:
			if err := r.out.flushRetry(ctx, true); err != nil {
				return nil, err
			}
			lost := r.out.skipTo(ev.Truncated.From)
			_ = r.emit(ctx, event(cpapi.EventError, map[string]any{
				"message": fmt.Sprintf("%d bytes of output were lost: they left sandboxd's window before they were stored", lost),
				"from":    ev.Truncated.From - lost, "to": ev.Truncated.From}))
		case len(ev.Data) > 0:
			if r.out.add(ev.Stream, ev.Offset, ev.Data) {
				if err := r.out.flushRetry(ctx, false); err != nil {
					return nil, err
				}
			}
		}
	}
}
