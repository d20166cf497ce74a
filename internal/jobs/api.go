package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
)

// Submit validates req and queues it as a pending job of the tenant.
// Errors: ErrInvalid for a malformed request, ErrUnprocessable for one that
// cannot run here yet (agents other than script, repositories).
func (m *Manager) Submit(ctx context.Context, tenantID string, req cpapi.JobRequest) (*cpapi.Job, error) {
	req, err := normalize(req, m.opts.DefaultTimeout, m.available)
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("jobs: encoding the request: %w", err)
	}
	j, err := m.st.CreateJob(ctx, store.Job{TenantID: tenantID, Spec: spec, Runtime: req.Runtime, Labels: req.Labels})
	if err != nil {
		return nil, fmt.Errorf("jobs: submit: %w", err)
	}
	m.poke()
	job := ToAPI(j)
	return &job, nil
}

// available reports whether this replica runs agent name.
func (m *Manager) available(name string) bool {
	return name == cpapi.AgentScript || m.opts.Agents[name] != nil
}

// Get returns the tenant's job id.
func (m *Manager) Get(ctx context.Context, tenantID, id string) (*cpapi.Job, error) {
	j, err := m.st.GetJob(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	job := ToAPI(j)
	return &job, nil
}

// List returns a page of the tenant's jobs, newest first. status filters
// ("" for all; several separated by commas); cursor is the previous page's
// Next; limit 0 means 50.
func (m *Manager) List(ctx context.Context, tenantID, status, cursor string, limit int) (*cpapi.JobList, error) {
	f := store.JobFilter{Cursor: cursor, Limit: limit}
	if status != "" {
		for s := range strings.SplitSeq(status, ",") {
			st := store.JobStatus(strings.TrimSpace(s))
			if !st.Valid() {
				return nil, errdefs.Invalidf("unknown job status %q", s)
			}
			f.Status = append(f.Status, st)
		}
	}
	jobs, next, err := m.st.ListJobs(ctx, tenantID, f)
	if err != nil {
		return nil, err
	}
	out := &cpapi.JobList{Jobs: make([]cpapi.Job, 0, len(jobs)), Next: next}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, ToAPI(j))
	}
	return out, nil
}

// Cancel ends the tenant's job id as cancelled, from any non-final state,
// and returns it; its sandbox is deleted right after. The move is durable
// when Cancel returns (the API answers 202). A runner of this replica stops
// at once, and nothing is appended after the cancelled event; one on
// another replica stops at its next lease renewal. A final job is
// ErrConflict.
func (m *Manager) Cancel(ctx context.Context, tenantID, id string) (*cpapi.Job, error) {
	j, err := m.st.GetJob(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if j.Status.Terminal() {
			return nil, errdefs.Conflictf("job %q is already %s", id, j.Status)
		}
		var done *store.Job
		if r := m.local(id); r != nil {
			done, err = r.cancelJob(ctx)
		} else {
			done, err = m.st.TransitionJob(ctx, id, j.Status, store.JobCancelled, cpapi.ReasonCancelled, nil)
			if err == nil {
				m.removeSandbox(ctx, done.TenantID, id, done.SandboxID)
			}
		}
		if err == nil {
			job := ToAPI(done)
			return &job, nil
		}
		if !errors.Is(err, errdefs.ErrConflict) && !errors.Is(err, errClosed) || attempt >= 10 {
			return nil, fmt.Errorf("jobs: cancel %s: %w", id, err)
		}
		if j, err = m.st.GetJob(ctx, tenantID, id); err != nil { // it moved: look again
			return nil, err
		}
	}
}

// cancelJob cancels r's job holding the gate: pending output is stored
// first, then the job moves to cancelled, then the runner stops and
// deletes the sandbox.
func (r *runner) cancelJob(ctx context.Context) (*store.Job, error) {
	r.gate.Lock()
	if r.closed {
		r.gate.Unlock()
		return nil, errClosed
	}
	_ = r.out.flushLocked(ctx, true)
	j, err := r.finishLocked(ctx, store.JobCancelled, cpapi.ReasonCancelled, nil)
	r.gate.Unlock()
	if err != nil {
		return nil, err
	}
	r.stop(&stopCause{kind: stopCancelled})
	return j, nil
}

// SendMessage appends a message from the user to the tenant's running job
// id, for its agent to read before its next step. The script agent takes
// no messages (ErrConflict), nor does a final job.
func (m *Manager) SendMessage(ctx context.Context, tenantID, id, text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return errdefs.Invalidf("text is required")
	case len(text) > maxMessage:
		return errdefs.TooLargef("text is over %d bytes", maxMessage)
	case !utf8.ValidString(text):
		return errdefs.Invalidf("text must be UTF-8")
	}
	j, err := m.st.GetJob(ctx, tenantID, id)
	if err != nil {
		return err
	}
	var req cpapi.JobRequest
	_ = json.Unmarshal(j.Spec, &req)
	switch {
	case j.Status.Terminal():
		return errdefs.Conflictf("job %q is already %s", id, j.Status)
	case req.Agent == cpapi.AgentScript:
		return errdefs.Conflictf("the script agent does not take messages")
	}
	ev := event(cpapi.EventMessage, cpapi.MessageData{Role: "user", Text: text})
	if r := m.local(id); r != nil {
		return r.emit(ctx, ev)
	}
	_, err = m.broker.Append(ctx, id, tenantID, []store.EventInput{ev})
	return err
}

// ToAPI turns a stored job into its API form.
func ToAPI(j *store.Job) cpapi.Job {
	var req cpapi.JobRequest
	_ = json.Unmarshal(j.Spec, &req)
	out := cpapi.Job{
		ID: j.ID, Task: req.Task, Agent: req.Agent, Status: string(j.Status), StatusReason: j.StatusReason,
		SandboxID: j.SandboxID, Runtime: j.Runtime, CreatedAt: j.CreatedAt,
		StartedAt: timePtr(j.StartedAt), FinishedAt: timePtr(j.FinishedAt), Labels: j.Labels,
	}
	if out.Task == "" && req.Agent == cpapi.AgentScript {
		out.Task = req.Command
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if r := j.Result; r != nil {
		out.Result = &cpapi.JobResult{Summary: r.Summary, ExitCode: r.ExitCode, Branch: r.Branch, PRURL: r.PRURL, Commit: r.Commit}
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
