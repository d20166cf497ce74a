package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/store"
)

// historyPage is how many events one read of a job's log takes.
const historyPage = 1000

// runAgent runs a job of an LLM agent (built-in or CLI) from its current
// state: sandbox, the agent's run (resumed from the log after a crash),
// artifacts, final state. The agent's failures end the job with the
// agent's reason; the agent's summary is the job's.
func (r *runner) runAgent(ctx context.Context, req *cpapi.JobRequest, ag agent.Agent) error {
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
	res := &store.JobResult{}
	if r.getStatus() == store.JobRunning {
		out, err := r.agentRun(ctx, req, ag)
		if err != nil {
			return err
		}
		res.Summary, res.ExitCode = out.Summary, out.ExitCode
		if _, err := r.transition(ctx, store.JobCompleting, "", func(j *store.Job) { j.Result = res }); err != nil {
			return err
		}
	} else if j, err := r.m.st.LoadJob(ctx, r.id); err == nil && j.Result != nil {
		res = j.Result // completing when the last run stopped
	}
	if err := r.complete(ctx, req, cl, res); err != nil {
		return err
	}
	if _, err := r.m.pack(ctx, r, cl); err != nil {
		return r.sandboxErr(ctx, err, "packing the artifacts failed")
	}
	r.m.removeSandbox(ctx, r.tenant, r.id, r.sandbox())
	_, err = r.finish(ctx, store.JobCompleted, "", func(j *store.Job) { j.Result = res })
	return err
}

// agentRun gives the agent its session and maps how it ended.
func (r *runner) agentRun(ctx context.Context, req *cpapi.JobRequest, ag agent.Agent) (*agent.Result, error) {
	cl, err := r.client(ctx)
	if err != nil {
		return nil, err
	}
	history, err := r.history(ctx)
	if err != nil {
		return nil, err
	}
	var last int64
	if len(history) > 0 {
		last = history[len(history)-1].Seq
	}
	inbox, stopInbox, err := r.inbox(ctx, last)
	if err != nil {
		return nil, err
	}
	defer stopInbox()
	env, err := r.agentEnv(ctx, req)
	if err != nil {
		return nil, err
	}
	s := &agent.Session{
		JobID: r.id, Tenant: r.tenant, SandboxID: r.sandbox(), Task: req.Task, Model: req.Model, Env: env, Sandbox: cl, Workdir: runtime.WorkspaceDir,
		History: history, Inbox: inbox, Emit: r.emitAgent, Budget: r.m.opts.AgentBudget,
	}
	out, err := ag.Run(ctx, s)
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if errors.Is(err, errClosed) {
		return nil, err
	}
	if ae, ok := agent.AsError(err); ok {
		return nil, &failure{reason: ae.Reason, msg: ae.Msg, err: err}
	}
	return nil, r.sandboxErr(ctx, err, "the agent failed")
}

// emitAgent appends an agent's events; each counts as activity for the
// idle timeout.
func (r *runner) emitAgent(ctx context.Context, evs ...agent.Event) error {
	in := make([]store.EventInput, 0, len(evs))
	for _, ev := range evs {
		b, err := json.Marshal(ev.Data)
		if err != nil {
			return fmt.Errorf("jobs: encoding a %s event: %w", ev.Type, err)
		}
		in = append(in, store.EventInput{Type: ev.Type, Data: b})
	}
	if err := r.emit(ctx, in...); err != nil {
		return err
	}
	r.touch()
	return nil
}

// history reads the job's whole log.
func (r *runner) history(ctx context.Context) ([]cpapi.Event, error) {
	var out []cpapi.Event
	var after int64
	for {
		evs, err := r.m.st.EventsAfter(ctx, r.id, after, historyPage)
		if err != nil {
			return nil, fmt.Errorf("jobs: reading the log of %s: %w", r.id, err)
		}
		for _, e := range evs {
			out = append(out, apiEvent(e))
		}
		if len(evs) < historyPage {
			return out, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// inbox follows the job's log after seq and passes on the messages people
// and the guardian inject (message events of role user or system), on any
// replica.
func (r *runner) inbox(ctx context.Context, after int64) (<-chan agent.Injected, func(), error) {
	sctx, cancel := context.WithCancel(ctx)
	sub, err := r.m.broker.Subscribe(sctx, r.id, after)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("jobs: following the log of %s: %w", r.id, err)
	}
	ch := make(chan agent.Injected, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer sub.Close()
		for {
			ev, err := sub.Next(sctx)
			if err != nil {
				return
			}
			if ev.Type != cpapi.EventMessage {
				continue
			}
			var d cpapi.MessageData
			if json.Unmarshal(ev.Data, &d) != nil || (d.Role != "user" && d.Role != "system") {
				continue
			}
			select {
			case ch <- agent.Injected{Seq: ev.Seq, Role: d.Role, Text: d.Text}:
			case <-sctx.Done():
				return
			}
		}
	}()
	return ch, func() { cancel(); <-done }, nil
}
