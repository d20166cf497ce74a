package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// JobStatus is a job's place in its life cycle (DESIGN.md §3):
// pending → creating → running → completing → completed; failed from
// creating, running or completing; cancelled from any non-final state.
type JobStatus string

// The job states.
const (
	JobPending    JobStatus = "pending"
	JobCreating   JobStatus = "creating"
	JobRunning    JobStatus = "running"
	JobCompleting JobStatus = "completing"
	JobCompleted  JobStatus = "completed"
	JobFailed     JobStatus = "failed"
	JobCancelled  JobStatus = "cancelled"
)

// Valid reports whether s is one of the job states.
func (s JobStatus) Valid() bool {
	switch s {
	case JobPending, JobCreating, JobRunning, JobCompleting, JobCompleted, JobFailed, JobCancelled:
		return true
	}
	return false
}

// Terminal reports whether s is final: completed, failed or cancelled.
func (s JobStatus) Terminal() bool {
	return s == JobCompleted || s == JobFailed || s == JobCancelled
}

// Active reports whether a job in s holds a slot of its tenant's
// max_concurrent_jobs: creating, running or completing.
func (s JobStatus) Active() bool {
	return s == JobCreating || s == JobRunning || s == JobCompleting
}

// JobResult is what a finished job produced.
type JobResult struct {
	Summary  string `json:"summary,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Branch   string `json:"branch,omitempty"`
	PRURL    string `json:"pr_url,omitempty"`
	Commit   string `json:"commit,omitempty"`
}

// Job mirrors the API's Job object (DESIGN.md §3) plus the scheduler's
// fields. Task, agent, model and the rest of the request are in Spec, which
// the store keeps as the JSON it was given.
type Job struct {
	ID           string
	TenantID     string
	Spec         json.RawMessage // a JSON object: the accepted POST /v1/jobs body
	Status       JobStatus
	StatusReason string // e.g. timeout, sandbox_lost, agent_error
	SandboxID    string
	Runtime      string
	CreatedAt    time.Time
	StartedAt    time.Time // when it entered running; zero before
	FinishedAt   time.Time // when it reached a final state; zero before
	Result       *JobResult
	Labels       map[string]string

	// Scheduler fields.
	Attempts       int       // how many times ClaimJob handed the job out
	ClaimedBy      string    // the worker holding the lease, "" if none
	ClaimExpiresAt time.Time // the lease's end; zero if none
	NextSeq        int64     // the seq the job's next event will get
}

const jobCols = `id, tenant_id, spec, status, status_reason, sandbox_id, runtime, created_at, started_at,
	finished_at, result, labels, attempts, claimed_by, claim_expires_at, next_seq`

func scanJob(r scanner) (*Job, error) {
	var j Job
	var spec, labels string
	var result sql.NullString
	var created int64
	var started, finished, expires sql.NullInt64
	if err := r.Scan(&j.ID, &j.TenantID, &spec, &j.Status, &j.StatusReason, &j.SandboxID, &j.Runtime,
		&created, &started, &finished, &result, &labels, &j.Attempts, &j.ClaimedBy, &expires, &j.NextSeq); err != nil {
		return nil, err
	}
	j.Spec = json.RawMessage(spec)
	j.CreatedAt = time.Unix(0, created).UTC()
	j.StartedAt, j.FinishedAt, j.ClaimExpiresAt = fromNanos(started), fromNanos(finished), fromNanos(expires)
	if result.Valid && result.String != "" {
		j.Result = new(JobResult)
		if err := json.Unmarshal([]byte(result.String), j.Result); err != nil {
			return nil, fmt.Errorf("job %s: result: %w", j.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(labels), &j.Labels); err != nil {
		return nil, fmt.Errorf("job %s: labels: %w", j.ID, err)
	}
	return &j, nil
}

// maxSpec bounds a job's or sandbox's spec.
const maxSpec = 1 << 20

// checkObject validates a JSON object column; empty means {}.
func checkObject(what string, b json.RawMessage) (string, error) {
	if len(b) == 0 {
		return "{}", nil
	}
	if len(b) > maxSpec {
		return "", errdefs.TooLargef("%s is over %d bytes", what, maxSpec)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return "", errdefs.Invalidf("%s must be a JSON object", what)
	}
	return string(b), nil
}

// encodeLabels validates labels and returns them as JSON.
func encodeLabels(labels map[string]string) (string, error) {
	if len(labels) > 64 {
		return "", errdefs.Invalidf("at most 64 labels")
	}
	for k, v := range labels {
		if k == "" || len(k) > 63 || len(v) > 256 {
			return "", errdefs.Invalidf("label %q: keys must be 1-63 bytes, values at most 256", k)
		}
	}
	if labels == nil {
		return "{}", nil
	}
	b, err := json.Marshal(labels)
	return string(b), err
}

func encodeResult(r *JobResult) (any, error) {
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(r)
	return string(b), err
}

// CreateJob stores a new pending job and, in the same transaction, its first
// event (seq 1): job.state {"from":"","to":"pending"}. j needs TenantID;
// Spec must be a JSON object (empty means {}); an empty ID gets a fresh
// "job_..." id. Status and the scheduler fields are ignored. An unknown
// tenant is ErrNotFound.
func (s *Store) CreateJob(ctx context.Context, j Job) (*Job, error) {
	if j.ID == "" {
		j.ID = newID("job")
	} else if err := checkID("job", j.ID); err != nil {
		return nil, err
	}
	if j.TenantID == "" {
		return nil, errdefs.Invalidf("job needs a tenant")
	}
	spec, err := checkObject("job spec", j.Spec)
	if err != nil {
		return nil, err
	}
	labels, err := encodeLabels(j.Labels)
	if err != nil {
		return nil, err
	}
	result, err := encodeResult(j.Result)
	if err != nil {
		return nil, errdefs.Invalidf("job result: %v", err)
	}
	now := round(s.now())
	j.Spec, j.Status, j.CreatedAt = json.RawMessage(spec), JobPending, now
	j.StartedAt, j.FinishedAt, j.Attempts, j.ClaimedBy, j.ClaimExpiresAt = time.Time{}, time.Time{}, 0, "", time.Time{}
	var a Appended
	err = s.tx(ctx, "create job", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (`+jobCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL, $9, $10, 0, '', NULL, 1)`,
			j.ID, j.TenantID, spec, j.Status, j.StatusReason, j.SandboxID, j.Runtime, now.UnixNano(),
			result, labels); err != nil {
			return s.dbErr("create job", err)
		}
		var err error
		a, err = s.appendTx(ctx, tx, "", j.ID, []EventInput{stateEvent("", JobPending, "")}, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	j.NextSeq = a.LastSeq + 1
	s.emit(a)
	return &j, nil
}

// GetJob returns the tenant's job id. Another tenant's job is ErrNotFound.
func (s *Store) GetJob(ctx context.Context, tenantID, id string) (*Job, error) {
	j, err := scanJob(s.r.QueryRowContext(ctx,
		`SELECT `+jobCols+` FROM jobs WHERE id = $1 AND tenant_id = $2`, id, tenantID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errdefs.NotFoundf("job %q not found", id)
	}
	if err != nil {
		return nil, s.dbErr("get job", err)
	}
	return j, nil
}

// LoadJob returns job id whatever its tenant. It is for the scheduler, the
// guardian and the event log, never for an id that came from a request.
func (s *Store) LoadJob(ctx context.Context, id string) (*Job, error) {
	j, err := scanJob(s.r.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errdefs.NotFoundf("job %q not found", id)
	}
	if err != nil {
		return nil, s.dbErr("load job", err)
	}
	return j, nil
}

// JobFilter selects a page of ListJobs.
type JobFilter struct {
	Status []JobStatus // only these states; empty means all
	Cursor string      // "" for the first page, else the next cursor of the previous page
	Limit  int         // page size; 0 means 50, at most 500
}

// ListJobs returns a page of the tenant's jobs, newest first, and the cursor
// of the next page ("" after the last). Paging is by (created_at, id), so a
// job created while a client pages appears on no later page: pages neither
// repeat nor skip jobs. A cursor the store did not make is ErrInvalid.
func (s *Store) ListJobs(ctx context.Context, tenantID string, f JobFilter) ([]*Job, string, error) {
	limit := f.Limit
	switch {
	case limit < 0:
		return nil, "", errdefs.Invalidf("limit must not be negative")
	case limit == 0:
		limit = 50
	case limit > 500:
		limit = 500
	}
	q := strings.Builder{}
	q.WriteString(`SELECT ` + jobCols + ` FROM jobs WHERE tenant_id = $1`)
	args := []any{tenantID}
	if len(f.Status) > 0 {
		q.WriteString(` AND status IN (`)
		for i, st := range f.Status {
			if !st.Valid() {
				return nil, "", errdefs.Invalidf("unknown job status %q", st)
			}
			if i > 0 {
				q.WriteString(", ")
			}
			args = append(args, string(st))
			fmt.Fprintf(&q, "$%d", len(args))
		}
		q.WriteString(`)`)
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		args = append(args, at, id)
		fmt.Fprintf(&q, ` AND (created_at < $%d OR (created_at = $%d AND id < $%d))`, len(args)-1, len(args)-1, len(args))
	}
	args = append(args, limit+1)
	fmt.Fprintf(&q, ` ORDER BY created_at DESC, id DESC LIMIT $%d`, len(args))

	rows, err := s.r.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, "", s.dbErr("list jobs", err)
	}
	defer rows.Close()
	var jobs []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, "", s.dbErr("list jobs", err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.dbErr("list jobs", err)
	}
	next := ""
	if len(jobs) > limit {
		jobs = jobs[:limit]
		last := jobs[limit-1]
		next = encodeCursor(last.CreatedAt.UnixNano(), last.ID)
	}
	return jobs, next, nil
}

// A cursor is the position of the last job of a page: "j1.<created_at>.<id>",
// base64url. It is opaque to clients.
func encodeCursor(at int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("j1." + strconv.FormatInt(at, 10) + "." + id))
}

func decodeCursor(c string) (int64, string, error) {
	bad := errdefs.Invalidf("bad cursor %q", c)
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", bad
	}
	parts := strings.SplitN(string(b), ".", 3)
	if len(parts) != 3 || parts[0] != "j1" || !validID.MatchString(parts[2]) {
		return 0, "", bad
	}
	at, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return 0, "", bad
	}
	return at, parts[2], nil
}

// SetJobSandbox records the runtime and sandbox a job runs in.
func (s *Store) SetJobSandbox(ctx context.Context, id, runtime, sandboxID string) error {
	return s.updateJob(ctx, "set job sandbox", id,
		`UPDATE jobs SET runtime = $2, sandbox_id = $3 WHERE id = $1`, runtime, sandboxID)
}

// SetJobResult records what a job produced; usually it is set by the
// mutate function of the TransitionJob that finishes the job instead.
func (s *Store) SetJobResult(ctx context.Context, id string, r JobResult) error {
	b, err := json.Marshal(r)
	if err != nil {
		return errdefs.Invalidf("job result: %v", err)
	}
	return s.updateJob(ctx, "set job result", id, `UPDATE jobs SET result = $2 WHERE id = $1`, string(b))
}

func (s *Store) updateJob(ctx context.Context, op, id, query string, args ...any) error {
	res, err := s.w.ExecContext(ctx, query, append([]any{id}, args...)...)
	if err != nil {
		return s.dbErr(op, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errdefs.NotFoundf("job %q not found", id)
	}
	return nil
}

// activeJobsSQL counts a tenant's ($1) active jobs.
const activeJobsSQL = `SELECT COUNT(*) FROM jobs WHERE tenant_id = $1 AND status IN ('creating', 'running', 'completing')`

// CountActiveJobs returns how many of the tenant's jobs are creating,
// running or completing.
func (s *Store) CountActiveJobs(ctx context.Context, tenantID string) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, activeJobsSQL, tenantID).Scan(&n); err != nil {
		return 0, s.dbErr("count active jobs", err)
	}
	return n, nil
}
