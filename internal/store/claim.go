package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Claims. A worker (a scheduler loop in some control-plane replica) takes a
// pending job with ClaimJob, which leaves the job pending but records the
// worker and a lease; the worker then moves it on with TransitionJob, keeps
// the lease alive with RenewLease while it works, and gives it up with
// ReleaseClaim (or by reaching a final state, which drops the claim). A
// pending job whose lease ran out, because its worker died before starting
// it, can be claimed again; Attempts counts the claims.
//
// A tenant's max_concurrent_jobs counts its creating, running and completing
// jobs and, in ClaimJob, also its pending jobs under a live claim: a claim
// reserves a slot, so the window between claiming and the pending → creating
// transition cannot overshoot the limit.

// claimableSQL finds the oldest pending job with a free lease ($1 = now)
// whose tenant has a free slot. The dialect appends FOR UPDATE SKIP LOCKED.
const claimableSQL = `SELECT j.id, j.tenant_id, t.max_concurrent_jobs
	FROM jobs j JOIN tenants t ON t.id = j.tenant_id
	WHERE j.status = 'pending' AND (j.claim_expires_at IS NULL OR j.claim_expires_at <= $1)
	AND (t.max_concurrent_jobs <= 0 OR (` + reservedSQL + `) < t.max_concurrent_jobs)`

// reservedSQL counts the slots the tenant of j holds at time $1.
const reservedSQL = `SELECT COUNT(*) FROM jobs a WHERE a.tenant_id = j.tenant_id
	AND (a.status IN ('creating', 'running', 'completing') OR (a.status = 'pending' AND a.claim_expires_at > $1))`

// ClaimJob gives worker workerID the oldest pending job whose lease is free
// and whose tenant is under its concurrency limit, leased for lease. It
// returns ErrNotFound when there is no such job. Two ClaimJob calls, in one
// process or in replicas sharing PostgreSQL, never get the same job while
// its lease lasts.
//
// On PostgreSQL the candidate is locked FOR UPDATE SKIP LOCKED (concurrent
// claimers pass over it) and, if its tenant has a limit, the tenant row is
// locked and the tenant's jobs recounted, since the candidate query's count
// may predate a concurrent claim. On SQLite the transaction is exclusive.
func (s *Store) ClaimJob(ctx context.Context, workerID string, lease time.Duration) (*Job, error) {
	if workerID == "" || len(workerID) > 200 {
		return nil, errdefs.Invalidf("worker id must be 1-200 bytes")
	}
	if lease <= 0 {
		return nil, errdefs.Invalidf("lease must be positive, got %v", lease)
	}
	now := s.now()
	var claimed *Job
	err := s.tx(ctx, "claim job", func(tx *sql.Tx) error {
		var full []any // tenants found at their limit after locking
		for {
			q := strings.Builder{}
			q.WriteString(claimableSQL)
			args := []any{now.UnixNano()}
			for _, t := range full {
				args = append(args, t)
				fmt.Fprintf(&q, " AND j.tenant_id <> $%d", len(args))
			}
			q.WriteString(" ORDER BY j.created_at, j.id LIMIT 1" + s.d.skipLocked)
			var id, tenant string
			var limit int
			err := tx.QueryRowContext(ctx, q.String(), args...).Scan(&id, &tenant, &limit)
			if errors.Is(err, sql.ErrNoRows) {
				return errdefs.NotFoundf("no job to claim")
			}
			if err != nil {
				return s.dbErr("claim job", err)
			}
			if limit > 0 && s.d.lockTenant != "" {
				if _, err := tx.ExecContext(ctx, `SELECT id FROM tenants WHERE id = $1`+s.d.lockTenant, tenant); err != nil {
					return s.dbErr("claim job: lock tenant", err)
				}
				var n int
				err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs a WHERE a.tenant_id = $2
					AND (a.status IN ('creating', 'running', 'completing') OR (a.status = 'pending' AND a.claim_expires_at > $1))`,
					now.UnixNano(), tenant).Scan(&n)
				if err != nil {
					return s.dbErr("claim job: count", err)
				}
				if n >= limit {
					full = append(full, tenant)
					continue
				}
			}
			claimed, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET claimed_by = $2, claim_expires_at = $3,
				attempts = attempts + 1 WHERE id = $1 RETURNING `+jobCols, id, workerID, now.Add(lease).UnixNano()))
			if err != nil {
				return s.dbErr("claim job", err)
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// RenewLease extends worker workerID's claim on job id to lease from now.
// It fails with ErrConflict if the job is claimed by another worker, by no
// worker, or is final; a lease that ran out is renewed if nobody claimed the
// job meanwhile.
func (s *Store) RenewLease(ctx context.Context, id, workerID string, lease time.Duration) error {
	if lease <= 0 {
		return errdefs.Invalidf("lease must be positive, got %v", lease)
	}
	return s.claimUpdate(ctx, "renew lease", id, workerID,
		`UPDATE jobs SET claim_expires_at = $3 WHERE id = $1 AND claimed_by = $2
		AND status NOT IN ('completed', 'failed', 'cancelled')`, s.now().Add(lease).UnixNano())
}

// ReleaseClaim drops worker workerID's claim on job id, so that another
// worker may claim it at once if it is still pending. A claim held by
// another worker (or none) is ErrConflict.
func (s *Store) ReleaseClaim(ctx context.Context, id, workerID string) error {
	return s.claimUpdate(ctx, "release claim", id, workerID,
		`UPDATE jobs SET claimed_by = '', claim_expires_at = NULL WHERE id = $1 AND claimed_by = $2`)
}

func (s *Store) claimUpdate(ctx context.Context, op, id, workerID, query string, args ...any) error {
	if workerID == "" {
		return errdefs.Invalidf("worker id must not be empty")
	}
	res, err := s.w.ExecContext(ctx, query, append([]any{id, workerID}, args...)...)
	if err != nil {
		return s.dbErr(op, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var by string
	var st JobStatus
	err = s.r.QueryRowContext(ctx, `SELECT claimed_by, status FROM jobs WHERE id = $1`, id).Scan(&by, &st)
	if errors.Is(err, sql.ErrNoRows) {
		return errdefs.NotFoundf("job %q not found", id)
	}
	if err != nil {
		return s.dbErr(op, err)
	}
	return errdefs.Conflictf("job %q (%s) is not claimed by %q", id, st, workerID)
}

// AdoptJob gives worker workerID the claim on job id when the job is in a
// working state (creating, running or completing) and its lease is free or
// already workerID's: how a replica takes over the jobs of a worker that
// died for good. It is one compare-and-set, so two replicas can never both
// adopt a job; a job held under a live lease, or final, is ErrConflict.
func (s *Store) AdoptJob(ctx context.Context, id, workerID string, lease time.Duration) (*Job, error) {
	if workerID == "" {
		return nil, errdefs.Invalidf("worker id must not be empty")
	}
	if lease <= 0 {
		return nil, errdefs.Invalidf("lease must be positive, got %v", lease)
	}
	now := s.now()
	row := s.w.QueryRowContext(ctx, `UPDATE jobs SET claimed_by = $2, claim_expires_at = $3
		WHERE id = $1 AND status IN ('creating', 'running', 'completing')
		AND (claimed_by = $2 OR claimed_by = '' OR claim_expires_at IS NULL OR claim_expires_at <= $4)
		RETURNING `+jobCols, id, workerID, now.Add(lease).UnixNano(), now.UnixNano())
	j, err := scanJob(row)
	if errors.Is(err, sql.ErrNoRows) {
		if _, gerr := s.LoadJob(ctx, id); gerr != nil {
			return nil, gerr
		}
		return nil, errdefs.Conflictf("job %q is final or held under a live lease", id)
	}
	if err != nil {
		return nil, s.dbErr("adopt job", err)
	}
	return j, nil
}
