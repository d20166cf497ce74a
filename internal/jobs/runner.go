package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
)

// finishTimeout bounds what a runner does after its work ended: the last
// flush, packing the artifacts of a failed job, the final transition.
const finishTimeout = 5 * time.Minute

// errClosed: the runner's gate is closed, the job is final (or being
// cancelled) and this runner may write nothing more.
var errClosed = errors.New("jobs: the job is final")

// A stopCause says why a runner's work context was cancelled.
type stopCause struct {
	kind   stopKind
	reason string // for stopFail: the status reason
	msg    string // for stopFail: an error event's text, if any
}

type stopKind int

const (
	stopCancelled stopKind = iota + 1 // Cancel made the job final: clean up
	stopEnded                         // another replica made the job final: clean up
	stopDetach                        // the claim is lost: touch nothing
	stopFail                          // the guardian fails the job: finish it
)

func (c *stopCause) Error() string {
	return fmt.Sprintf("jobs: runner stopped (%d %s)", c.kind, c.reason)
}

// failure is an error that ends a job as failed with a reason; msg, if
// set, goes into the log as an error event.
type failure struct {
	reason string
	msg    string
	err    error
}

func (f *failure) Error() string {
	if f.err != nil {
		return f.reason + ": " + f.msg + ": " + f.err.Error()
	}
	return f.reason + ": " + f.msg
}

func (f *failure) Unwrap() error { return f.err }

// runner runs one job in this replica: from its claim (or its recovery) to
// a final state, or until the Manager stops.
type runner struct {
	m         *Manager
	id        string
	tenant    string
	spec      json.RawMessage
	recovered bool // picked up by Recover or the sweep, not freshly claimed

	base   context.Context // Run's context: ends at shutdown
	ctx    context.Context // the work: ends at shutdown, on Cancel, or by the guardian
	cancel context.CancelCauseFunc
	done   chan struct{}

	out *batcher

	// gate serialises every event and transition this runner makes with
	// Cancel, so that nothing follows the final job.state event. It is held
	// across store calls; nothing else is taken inside it but out.mu and mu.
	gate   sync.Mutex
	closed bool // guarded by gate: the job is final

	extraSecrets []string // tenant secrets resolved for this job, redacted until it ends

	mu        sync.Mutex // guards the fields below (read by the guardian)
	status    store.JobStatus
	sandboxID string
	deadline  time.Time // wall-clock limit, once running
	lastEvent time.Time // for the idle timeout
	nudgedAt  time.Time // zero unless an idle nudge is pending
	misses    int       // heartbeats failed in a row
	gone      int       // of those, the ones that said the sandbox is gone (not merely slow)
	probing   bool      // a heartbeat is in flight
	renewedAt time.Time // last successful lease renewal
}

func newRunner(m *Manager, j *store.Job, recovered bool) *runner {
	r := &runner{m: m, id: j.ID, tenant: j.TenantID, spec: j.Spec, recovered: recovered,
		done: make(chan struct{}), status: j.Status, sandboxID: j.SandboxID, renewedAt: time.Now()}
	r.out = newBatcher(r)
	r.setDeadline(j)
	return r
}

// begin gives r its contexts; the Manager calls it as it launches r.
func (r *runner) begin(base context.Context) {
	r.base = base
	r.ctx, r.cancel = context.WithCancelCause(base)
	r.lastEvent = time.Now()
}

// stop ends the runner's work with cause; only the first cause counts.
func (r *runner) stop(c *stopCause) { r.cancel(c) }

func (r *runner) getStatus() store.JobStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

func (r *runner) sandbox() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sandboxID
}

func (r *runner) setSandbox(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandboxID = id
}

func (r *runner) setDeadline(j *store.Job) {
	if j.StartedAt.IsZero() {
		return
	}
	r.mu.Lock()
	r.deadline = j.StartedAt.Add(r.m.timeoutOf(j))
	r.mu.Unlock()
}

// touch records agent activity, for the idle timeout.
func (r *runner) touch() {
	r.mu.Lock()
	r.lastEvent, r.nudgedAt = time.Now(), time.Time{}
	r.mu.Unlock()
}

// transition moves the job from the state the runner knows to to, through
// the gate.
func (r *runner) transition(ctx context.Context, to store.JobStatus, reason string, mutate func(*store.Job)) (*store.Job, error) {
	r.gate.Lock()
	defer r.gate.Unlock()
	return r.transitionLocked(ctx, to, reason, mutate)
}

func (r *runner) transitionLocked(ctx context.Context, to store.JobStatus, reason string, mutate func(*store.Job)) (*store.Job, error) {
	if r.closed {
		return nil, errClosed
	}
	j, err := r.m.st.TransitionJob(ctx, r.id, r.getStatus(), to, reason, mutate)
	if err != nil {
		return nil, fmt.Errorf("jobs: job %s to %s: %w", r.id, to, err)
	}
	r.mu.Lock()
	r.status = to
	r.mu.Unlock()
	if to == store.JobRunning {
		r.setDeadline(j)
		r.touch() // idleness counts from the start of the run
	}
	if to.Terminal() {
		r.closed = true
	}
	return j, nil
}

// emit appends events to the job's log through the gate.
func (r *runner) emit(ctx context.Context, evs ...store.EventInput) error {
	r.gate.Lock()
	defer r.gate.Unlock()
	if r.closed {
		return errClosed
	}
	if _, err := r.m.broker.Append(ctx, r.id, r.tenant, evs); err != nil {
		return err
	}
	return nil
}

// event builds an event from a type and data that marshals.
func event(typ string, data any) store.EventInput {
	b, err := json.Marshal(data)
	if err != nil {
		b = []byte(`{}`)
	}
	return store.EventInput{Type: typ, Data: b}
}

func errorEvent(msg string) store.EventInput {
	return event(cpapi.EventError, map[string]string{"message": msg})
}

// run drives the job and then settles how it ended.
func (r *runner) run() {
	defer close(r.done)
	secrets := r.secrets()
	r.m.broker.Redactor().Add(secrets...)
	defer r.m.broker.Redactor().Remove(secrets...)
	defer func() { r.m.broker.Redactor().Remove(r.takeSecrets()...) }()
	err := r.drive(r.ctx)
	r.conclude(err)
}

// addSecret redacts v from the job's log until the runner ends.
func (r *runner) addSecret(v string) {
	if v == "" {
		return
	}
	r.mu.Lock()
	r.extraSecrets = append(r.extraSecrets, v)
	r.mu.Unlock()
	r.m.broker.Redactor().Add(v)
}

func (r *runner) takeSecrets() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.extraSecrets
	r.extraSecrets = nil
	return s
}

// secrets are the job's env values that look like credentials, so the
// event log never shows them.
func (r *runner) secrets() []string {
	var req cpapi.JobRequest
	if json.Unmarshal(r.spec, &req) != nil {
		return nil
	}
	var out []string
	for k, v := range req.Env {
		u := strings.ToUpper(k)
		for _, hint := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE"} {
			if strings.Contains(u, hint) {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// drive takes the job from whatever state it is in to a final one. It
// returns nil once the job is final, else why it stopped.
func (r *runner) drive(ctx context.Context) error {
	var req cpapi.JobRequest
	if err := json.Unmarshal(r.spec, &req); err != nil {
		return &failure{reason: cpapi.ReasonInfra, msg: "the job's stored request is unreadable", err: err}
	}
	if r.recovered {
		j, err := r.m.st.LoadJob(ctx, r.id)
		if err != nil {
			return err
		}
		if j.Status.Terminal() || j.ClaimedBy != r.m.opts.WorkerID {
			return &stopCause{kind: stopDetach} // handled meanwhile
		}
		r.mu.Lock()
		r.status, r.sandboxID = j.Status, j.SandboxID
		r.mu.Unlock()
		r.setDeadline(j)
	}
	if req.Agent != cpapi.AgentScript {
		ag := r.m.opts.Agents[req.Agent]
		if ag == nil {
			if r.getStatus() == store.JobPending {
				if _, err := r.transition(ctx, store.JobCreating, "", nil); err != nil {
					return err
				}
			}
			return &failure{reason: cpapi.ReasonAgentError, msg: fmt.Sprintf("agent %q is not available in this control plane", req.Agent)}
		}
		return r.runAgent(ctx, &req, ag)
	}
	return r.runScript(ctx, &req)
}

// conclude settles the job after drive returned err: nothing (it is final,
// or the Manager is stopping, or the job is someone else's now), or clean
// up after a cancel, or fail it.
func (r *runner) conclude(err error) {
	if err == nil {
		return
	}
	log := r.m.log.With("job", r.id)
	if r.base.Err() != nil { // shutdown: leave the job for Recover
		if r.getStatus() == store.JobPending {
			r.release()
		}
		return
	}
	var sc *stopCause
	if !errors.As(context.Cause(r.ctx), &sc) {
		errors.As(err, &sc)
	}
	var f *failure
	switch {
	case sc != nil && (sc.kind == stopCancelled || sc.kind == stopEnded):
		r.m.removeSandbox(r.base, r.tenant, r.id, r.sandbox())
	case sc != nil && sc.kind == stopDetach:
		log.Info("jobs: leaving the job to its new owner")
	case sc != nil && sc.kind == stopFail:
		r.fail(sc.reason, sc.msg, sc.reason == cpapi.ReasonTimeout || sc.reason == cpapi.ReasonIdle)
	case errors.Is(err, errClosed): // a cancel got there first
		r.m.removeSandbox(r.base, r.tenant, r.id, r.sandbox())
	case errors.Is(err, errdefs.ErrConflict):
		// The job moved under the runner: fail cleans up if it is final
		// (cancelled on another replica), else fails it.
		log.Warn("jobs: the job changed state under its runner", "err", err)
		r.fail(cpapi.ReasonInfra, "the job changed state unexpectedly", false)
	case errors.As(err, &f):
		log.Warn("jobs: job failed", "reason", f.reason, "err", err)
		r.fail(f.reason, f.msg, false)
	default:
		log.Error("jobs: job failed", "err", err)
		r.fail(cpapi.ReasonInfra, "the job engine failed", false)
	}
}

// release gives up the claim on a job that never left pending.
func (r *runner) release() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.base), 5*time.Second)
	defer cancel()
	if err := r.m.st.ReleaseClaim(ctx, r.id, r.m.opts.WorkerID); err != nil {
		r.m.log.Debug("jobs: releasing a claim failed", "job", r.id, "err", err)
	}
}

// fail ends the job as failed with reason: it flushes the output, logs
// msg, packs the artifacts if asked and the sandbox still answers, moves
// the job to failed and deletes the sandbox.
func (r *runner) fail(reason, msg string, pack bool) {
	ctx, cancel := context.WithTimeout(r.base, finishTimeout)
	defer cancel()
	sb := r.sandbox()
	if j, err := r.m.st.LoadJob(ctx, r.id); err == nil && j.Status.Terminal() {
		// Made final elsewhere (a cancel on another replica): add nothing.
		r.gate.Lock()
		r.closed = true
		r.gate.Unlock()
		r.m.removeSandbox(ctx, r.tenant, r.id, sb)
		return
	}
	_ = r.out.flush(ctx, true)
	if msg != "" {
		_ = r.emit(ctx, errorEvent(msg))
	}
	if r.getStatus() == store.JobPending { // failed is not reachable from pending
		if _, err := r.transition(ctx, store.JobCreating, "", nil); err != nil {
			r.m.log.Warn("jobs: failing a job", "job", r.id, "err", err)
			return
		}
	}
	if pack && sb != "" && r.getStatus() == store.JobRunning {
		if cl, err := r.m.sb.Client(ctx, r.tenant, sb); err == nil {
			_ = cl.DeleteProcess(ctx, processTag(r.id)) // stop the command first
			_, _ = r.m.pack(ctx, r, cl)
		}
	}
	var res *store.JobResult
	if sum := r.out.summary(); sum != "" {
		res = &store.JobResult{Summary: sum}
	}
	r.m.removeSandbox(ctx, r.tenant, r.id, sb) // before the final state, as on success
	if _, err := r.finish(ctx, store.JobFailed, reason, func(j *store.Job) { j.Result = res }); err != nil && !errors.Is(err, errClosed) {
		r.m.log.Warn("jobs: failing a job", "job", r.id, "reason", reason, "err", err)
	}
}

// finish makes the job final, retrying once if its state moved under the
// runner (as it does when recovery raced a transition).
func (r *runner) finish(ctx context.Context, to store.JobStatus, reason string, mutate func(*store.Job)) (*store.Job, error) {
	r.gate.Lock()
	defer r.gate.Unlock()
	return r.finishLocked(ctx, to, reason, mutate)
}

// finishLocked is finish with the gate held.
func (r *runner) finishLocked(ctx context.Context, to store.JobStatus, reason string, mutate func(*store.Job)) (*store.Job, error) {
	j, err := r.transitionLocked(ctx, to, reason, mutate)
	if errors.Is(err, errdefs.ErrConflict) {
		cur, lerr := r.m.st.LoadJob(ctx, r.id)
		if lerr != nil || cur.Status.Terminal() {
			r.closed = true
			return nil, errClosed
		}
		r.mu.Lock()
		r.status = cur.Status
		r.mu.Unlock()
		return r.transitionLocked(ctx, to, reason, mutate)
	}
	return j, err
}

// client returns a client for the job's sandbox; a sandbox that is gone
// is a sandbox_lost failure.
func (r *runner) client(ctx context.Context) (*client.Client, error) {
	cl, err := r.m.sb.Client(ctx, r.tenant, r.sandbox())
	if err != nil {
		return nil, r.sandboxErr(ctx, err, "reaching the sandbox failed")
	}
	return cl, nil
}

// sandboxErr classifies err, met while talking to the sandbox: the work's
// end if ctx ended, sandbox_lost if the sandbox no longer answers, else an
// infrastructure failure.
func (r *runner) sandboxErr(ctx context.Context, err error, what string) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, r.m.probeTimeout())
	defer cancel()
	if aerr := r.m.sb.Alive(actx, r.tenant, r.sandbox()); aerr != nil {
		return &failure{reason: cpapi.ReasonSandboxLost, msg: "the sandbox is gone", err: err}
	}
	return &failure{reason: cpapi.ReasonInfra, msg: safeMessage(err, what), err: err}
}
