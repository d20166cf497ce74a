package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
)

// guardTick is how often the guardian looks at deadlines (at most; never
// less often than Heartbeat).
const guardTick = 250 * time.Millisecond

// guard is the guardian: one goroutine that, until ctx ends, enforces
// wall-clock and idle timeouts on this replica's running jobs, probes their
// sandboxes every Heartbeat, renews their leases every Lease/3, sweeps for
// orphaned jobs every Lease and for expired artifacts every
// min(Retention/4, 1h). Probes run in goroutines it waits for before it
// returns; everything else runs inline.
func (m *Manager) guard(ctx context.Context) {
	t := time.NewTicker(min(guardTick, m.opts.Heartbeat))
	defer t.Stop()
	var probes sync.WaitGroup
	defer probes.Wait()

	now := time.Now()
	retentionEvery := min(m.opts.Retention/4, time.Hour)
	nextBeat, nextRenew := now.Add(m.opts.Heartbeat), now.Add(m.opts.Lease/3)
	nextSweep, nextRetention := now.Add(m.opts.Lease), now
	for {
		select {
		case <-ctx.Done():
			return
		case now = <-t.C:
		}
		rs := m.snapshot()
		for _, r := range rs {
			m.watch(ctx, r, now)
		}
		if !now.Before(nextBeat) {
			nextBeat = now.Add(m.opts.Heartbeat)
			for _, r := range rs {
				m.probe(ctx, r, &probes)
			}
		}
		if !now.Before(nextRenew) {
			nextRenew = now.Add(m.opts.Lease / 3)
			m.renew(ctx, rs, now)
		}
		if !now.Before(nextSweep) {
			nextSweep = now.Add(m.opts.Lease)
			if err := m.sweep(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("jobs: orphan sweep", "err", err)
			}
		}
		if !now.Before(nextRetention) {
			nextRetention = now.Add(retentionEvery)
			m.sweepArtifacts(now)
		}
	}
}

// watch applies the wall-clock and idle timeouts to runner r.
func (m *Manager) watch(ctx context.Context, r *runner, now time.Time) {
	r.mu.Lock()
	status, deadline, last, nudged := r.status, r.deadline, r.lastEvent, r.nudgedAt
	r.mu.Unlock()
	if status != store.JobRunning {
		return
	}
	if !deadline.IsZero() && now.After(deadline) {
		r.stop(&stopCause{kind: stopFail, reason: cpapi.ReasonTimeout, msg: "the job ran out of time"})
		return
	}
	idle := m.opts.IdleTimeout
	switch {
	case idle <= 0:
	case nudged.IsZero() && now.Sub(last) >= idle:
		r.mu.Lock()
		r.nudgedAt = now
		r.mu.Unlock()
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := r.emit(nctx, event(cpapi.EventMessage, cpapi.MessageData{Role: "system",
			Text: fmt.Sprintf("No progress for %v. Carry on with the task, or finish; the job fails after %v more without progress.", idle, idle)}))
		cancel()
		if err != nil && !errors.Is(err, errClosed) {
			m.log.Warn("jobs: idle nudge", "job", r.id, "err", err)
		}
	case !nudged.IsZero() && now.Sub(nudged) >= idle:
		r.stop(&stopCause{kind: stopFail, reason: cpapi.ReasonIdle, msg: fmt.Sprintf("no progress for %v after a nudge", idle)})
	}
}

// probe checks, in a goroutine of wg, that r's sandbox answers. After
// HeartbeatMisses failures in a row that say it is gone, or SlowMisses
// failures in a row of any kind, the job fails sandbox_lost: a probe that
// only timed out while the runtime still ran the sandbox is most often a
// loaded machine, not a lost sandbox.
func (m *Manager) probe(ctx context.Context, r *runner, wg *sync.WaitGroup) {
	r.mu.Lock()
	if r.probing || r.sandboxID == "" || (r.status != store.JobRunning && r.status != store.JobCompleting) {
		r.mu.Unlock()
		return
	}
	r.probing = true
	sb := r.sandboxID
	r.mu.Unlock()
	wg.Go(func() {
		pctx, cancel := context.WithTimeout(ctx, m.probeTimeout())
		err := m.sb.Alive(pctx, r.tenant, sb)
		cancel()
		r.mu.Lock()
		r.probing = false
		switch {
		case err == nil:
			r.misses, r.gone = 0, 0
		case ctx.Err() != nil: // shutting down: says nothing of the sandbox
		case errors.Is(err, errdefs.ErrTimeout):
			r.misses++
		default:
			r.misses++
			r.gone++
		}
		misses, gone := r.misses, r.gone
		r.mu.Unlock()
		var msg string
		switch {
		case gone >= m.opts.HeartbeatMisses:
			msg = fmt.Sprintf("the sandbox stopped answering (%d heartbeats missed)", misses)
			m.log.Warn("jobs: sandbox lost", "job", r.id, "sandbox", sb, "err", err)
		case misses >= m.opts.SlowMisses:
			msg = fmt.Sprintf("the sandbox's daemon did not answer %d heartbeats in a row, though its runtime still ran it", misses)
			m.log.Warn("jobs: sandbox hung", "job", r.id, "sandbox", sb, "err", err)
		default:
			if err != nil && ctx.Err() == nil {
				m.log.Debug("jobs: heartbeat missed", "job", r.id, "sandbox", sb, "misses", misses, "err", err)
			}
			return
		}
		r.stop(&stopCause{kind: stopFail, reason: cpapi.ReasonSandboxLost, msg: msg})
	})
}

// renew extends the leases of this replica's jobs. A job made final
// elsewhere (a cancel on another replica) has its runner closed and
// stopped; one whose claim passed to another worker, or that could not be
// renewed for a whole lease, is left to it.
func (m *Manager) renew(ctx context.Context, rs []*runner, now time.Time) {
	for _, r := range rs {
		err := m.st.RenewLease(ctx, r.id, m.opts.WorkerID, m.opts.Lease)
		switch {
		case err == nil:
			r.mu.Lock()
			r.renewedAt = now
			r.mu.Unlock()
		case ctx.Err() != nil:
			return
		case errors.Is(err, errdefs.ErrConflict):
			j, lerr := m.st.LoadJob(ctx, r.id)
			switch {
			case lerr != nil:
				m.log.Warn("jobs: lease renewal", "job", r.id, "err", lerr)
			case j.Status.Terminal():
				r.gate.Lock() // waits for a write in flight; none follows
				r.closed = true
				r.gate.Unlock()
				r.stop(&stopCause{kind: stopEnded})
			default:
				m.log.Warn("jobs: lost the claim on a job", "job", r.id, "now", j.ClaimedBy)
				r.stop(&stopCause{kind: stopDetach})
			}
		default:
			m.log.Warn("jobs: lease renewal", "job", r.id, "err", err)
			r.mu.Lock()
			expired := now.Sub(r.renewedAt) > m.opts.Lease
			r.mu.Unlock()
			if expired {
				r.stop(&stopCause{kind: stopDetach})
			}
		}
	}
}

// probeTimeout bounds one liveness probe: a heartbeat, at least 2 s, so a
// loaded machine is not mistaken for a dead sandbox.
func (m *Manager) probeTimeout() time.Duration { return max(m.opts.Heartbeat, 2*time.Second) }
