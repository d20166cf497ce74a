package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// EventJobState is the type of the event every job transition appends.
// Its data is {"from":..., "to":..., "reason":...}.
const EventJobState = "job.state"

// StateChange is the data of a job.state event.
type StateChange struct {
	From   JobStatus `json:"from"`
	To     JobStatus `json:"to"`
	Reason string    `json:"reason,omitempty"`
}

func stateEvent(from, to JobStatus, reason string) EventInput {
	b, _ := json.Marshal(StateChange{From: from, To: to, Reason: reason})
	return EventInput{Type: EventJobState, Data: b}
}

// transitions lists the legal moves of the job life cycle.
var transitions = map[JobStatus][]JobStatus{
	JobPending:    {JobCreating, JobCancelled},
	JobCreating:   {JobRunning, JobFailed, JobCancelled},
	JobRunning:    {JobCompleting, JobFailed, JobCancelled},
	JobCompleting: {JobCompleted, JobFailed, JobCancelled},
}

// CanTransition reports whether the life cycle allows a job to move from
// one state to another.
func CanTransition(from, to JobStatus) bool {
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

// TransitionJob moves job id from state from to state to, if and only if the
// job is in from when the transaction runs (compare-and-set): otherwise it
// changes nothing and returns ErrConflict. A move the life cycle does not
// allow is ErrInvalid, an unknown job ErrNotFound.
//
// In the same transaction it sets status_reason to reason, stamps StartedAt
// on entering running and FinishedAt on reaching a final state (where it
// also drops the job's claim), calls mutate (if not nil) on the job so the
// caller can set SandboxID, Runtime, Result or Labels, and appends the
// job.state event. So the transition is durable, with its event, before
// TransitionJob returns, and a failed compare-and-set appends nothing.
// mutate runs inside the transaction: it must be quick, must not touch the
// Store, and must not change ID, TenantID, Status or NextSeq.
func (s *Store) TransitionJob(ctx context.Context, id string, from, to JobStatus, reason string, mutate func(*Job)) (*Job, error) {
	if !from.Valid() || !to.Valid() {
		return nil, errdefs.Invalidf("unknown job status %q or %q", from, to)
	}
	if !CanTransition(from, to) {
		return nil, errdefs.Invalidf("a job cannot go from %s to %s", from, to)
	}
	if len(reason) > 1000 {
		return nil, errdefs.Invalidf("status reason is over 1000 bytes")
	}
	now := round(s.now())
	var j *Job
	var a Appended
	err := s.tx(ctx, "transition job", func(tx *sql.Tx) error {
		var err error
		j, err = scanJob(tx.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`+s.d.forUpdate, id))
		if errors.Is(err, sql.ErrNoRows) {
			return errdefs.NotFoundf("job %q not found", id)
		}
		if err != nil {
			return s.dbErr("transition job", err)
		}
		if j.Status != from {
			return errdefs.Conflictf("job %q is %s, not %s", id, j.Status, from)
		}
		orig := *j
		j.Status, j.StatusReason = to, reason
		if to == JobRunning && j.StartedAt.IsZero() {
			j.StartedAt = now
		}
		if to.Terminal() {
			j.FinishedAt, j.ClaimedBy, j.ClaimExpiresAt = now, "", time.Time{}
		}
		if mutate != nil {
			mutate(j)
			if j.ID != orig.ID || j.TenantID != orig.TenantID || j.Status != to || j.NextSeq != orig.NextSeq {
				return errdefs.Invalidf("transition job %q: mutate must not change id, tenant, status or seq", id)
			}
		}
		labels, err := encodeLabels(j.Labels)
		if err != nil {
			return err
		}
		result, err := encodeResult(j.Result)
		if err != nil {
			return errdefs.Invalidf("job result: %v", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = $2, status_reason = $3, sandbox_id = $4,
			runtime = $5, started_at = $6, finished_at = $7, result = $8, labels = $9, claimed_by = $10,
			claim_expires_at = $11 WHERE id = $1`,
			id, j.Status, j.StatusReason, j.SandboxID, j.Runtime, nanos(j.StartedAt), nanos(j.FinishedAt),
			result, labels, j.ClaimedBy, nanos(j.ClaimExpiresAt)); err != nil {
			return s.dbErr("transition job", err)
		}
		a, err = s.appendTx(ctx, tx, "", id, []EventInput{stateEvent(from, to, reason)}, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	j.NextSeq = a.LastSeq + 1
	s.emit(a)
	return j, nil
}
