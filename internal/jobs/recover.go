package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
)

// resumeState is what a job's log says about its output so far.
type resumeState struct {
	next int64  // offset after the last stored output byte
	tail []byte // the end of the output, for the summary
}

// scanLog reads job id's log for where its output stopped.
func (m *Manager) scanLog(ctx context.Context, id string) (resumeState, error) {
	var rs resumeState
	after := int64(0)
	for {
		evs, err := m.st.EventsAfter(ctx, id, after, 1000)
		if err != nil {
			return rs, fmt.Errorf("jobs: reading the log of %s: %w", id, err)
		}
		for _, e := range evs {
			if e.Type != cpapi.EventProcessOutput {
				continue
			}
			var d outputData
			if json.Unmarshal(e.Data, &d) != nil {
				continue
			}
			if end := d.Offset + d.Bytes; end > rs.next {
				rs.next = end
			}
			rs.tail = append(rs.tail, decodeOutput(d)...)
			if len(rs.tail) > 2*tailBytes {
				rs.tail = append([]byte(nil), rs.tail[len(rs.tail)-tailBytes:]...)
			}
		}
		if len(evs) < 1000 {
			return rs, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// Recover looks, once, at every job left creating, running or completing
// (see the package documentation): this worker's own are re-attached when
// Run starts, orphans whose sandbox is gone or whose time is up are failed.
// Call it before Run.
func (m *Manager) Recover(ctx context.Context) error {
	m.mu.Lock()
	ran := m.ran
	m.mu.Unlock()
	if ran {
		return errors.New("jobs: Recover must be called before Run")
	}
	return m.sweep(ctx)
}

// sweep reconciles every active job this replica does not run.
func (m *Manager) sweep(ctx context.Context) error {
	jobs, err := m.activeJobs(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, j := range jobs {
		if err := m.reconcile(ctx, j); err != nil {
			errs = append(errs, fmt.Errorf("jobs: recovering %s: %w", j.ID, err))
		}
	}
	return errors.Join(errs...)
}

// activeJobs lists every tenant's creating, running and completing jobs.
func (m *Manager) activeJobs(ctx context.Context) ([]*store.Job, error) {
	tenants, err := m.st.ListTenants(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobs: listing tenants: %w", err)
	}
	var all []*store.Job
	for _, t := range tenants {
		f := store.JobFilter{Status: []store.JobStatus{store.JobCreating, store.JobRunning, store.JobCompleting}, Limit: 500}
		for {
			page, next, err := m.st.ListJobs(ctx, t.ID, f)
			if err != nil {
				return nil, fmt.Errorf("jobs: listing active jobs: %w", err)
			}
			all = append(all, page...)
			if next == "" {
				break
			}
			f.Cursor = next
		}
	}
	return all, nil
}

// reconcile re-attaches a job this worker claimed in an earlier life,
// adopts or settles an orphan, and leaves alone one that another live
// worker runs.
func (m *Manager) reconcile(ctx context.Context, j *store.Job) error {
	if m.queuedOrLocal(j.ID) {
		return nil
	}
	switch {
	case j.ClaimedBy == m.opts.WorkerID:
		if err := m.st.RenewLease(ctx, j.ID, m.opts.WorkerID, m.opts.Lease); err != nil {
			if errors.Is(err, errdefs.ErrConflict) {
				return nil // it moved on meanwhile
			}
			return err
		}
		m.log.Info("jobs: re-attaching a job", "job", j.ID, "status", j.Status)
		m.start(newRunner(m, j, true))
		return nil
	case j.ClaimedBy != "" && j.ClaimExpiresAt.After(time.Now()):
		return nil // its worker is alive
	}
	aj, err := m.st.AdoptJob(ctx, j.ID, m.opts.WorkerID, m.opts.Lease)
	switch {
	case err == nil:
		// The runner re-attaches, or fails the job sandbox_lost when its
		// sandbox is gone, exactly as for this worker's own jobs.
		m.log.Info("jobs: adopting an orphaned job", "job", j.ID, "from", j.ClaimedBy)
		m.start(newRunner(m, aj, true))
		return nil
	case errors.Is(err, errdefs.ErrConflict):
		return nil // another replica adopted it, or it moved on
	default:
		return err
	}
}

// timeoutOf is job j's wall-clock limit.
func (m *Manager) timeoutOf(j *store.Job) time.Duration {
	var req cpapi.JobRequest
	if json.Unmarshal(j.Spec, &req) == nil && req.TimeoutS > 0 {
		return time.Duration(req.TimeoutS) * time.Second
	}
	return m.opts.DefaultTimeout
}
