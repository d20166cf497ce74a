package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Event is one entry of a job's log (DESIGN.md §3), in its wire form. Seq
// numbers a job's events 1, 2, 3... without gaps.
type Event struct {
	Seq   int64           `json:"seq"`
	JobID string          `json:"job_id"`
	Time  time.Time       `json:"time"`
	Type  string          `json:"type"`
	Data  json.RawMessage `json:"data"`
}

// EventInput is an event to append; the store assigns Seq and Time.
type EventInput struct {
	Type string          // e.g. "message", "tool.call"; [a-z][a-z0-9._-]*, at most 64 bytes
	Data json.RawMessage // JSON; empty means {}
}

// Appended reports events that were committed for one job. Watch callbacks
// get it with Events set; Listen callbacks, for events committed by another
// Store on the same PostgreSQL database, get it without Events: the events
// are in the store, up to LastSeq.
type Appended struct {
	JobID     string
	TenantID  string
	Events    []Event // in seq order; nil when the append happened elsewhere
	LastSeq   int64
	StateSeqs []int64 // the seqs of job.state events among them

	// Resync, set alone, says Listen (re)connected and may have missed
	// notifications: whoever caches anything should re-read the store.
	Resync bool
}

const (
	maxEventData = 1 << 20 // bytes of one event's data
	insertChunk  = 200     // rows per INSERT statement
	eventsPage   = 100     // EventsAfter's default limit
	maxEventPage = 10000   // and its maximum
)

var validEventType = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,63}$`)

// AppendEvents appends events to job jobID's log in one transaction and
// returns them with their seqs, which are consecutive and follow the job's
// last event whatever other appenders do. The seqs come from jobs.next_seq,
// updated in the same transaction (the UPDATE locks the job row on
// PostgreSQL; SQLite has one writer). An unknown job is ErrNotFound; any bad
// input rejects the whole batch.
func (s *Store) AppendEvents(ctx context.Context, jobID string, in []EventInput) ([]Event, error) {
	return s.AppendTenantEvents(ctx, "", jobID, in)
}

// AppendTenantEvents is AppendEvents for a job that must belong to tenantID
// (another tenant's job is ErrNotFound and nothing is written). An empty
// tenantID means any tenant.
func (s *Store) AppendTenantEvents(ctx context.Context, tenantID, jobID string, in []EventInput) ([]Event, error) {
	if len(in) == 0 {
		return nil, nil
	}
	now := round(s.now())
	var a Appended
	err := s.tx(ctx, "append events", func(tx *sql.Tx) error {
		var err error
		a, err = s.appendTx(ctx, tx, tenantID, jobID, in, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.emit(a)
	return a.Events, nil
}

// appendTx appends in to the job's log inside tx and, on PostgreSQL,
// queues the NOTIFY that tells other replicas once tx commits.
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, tenantID, jobID string, in []EventInput, now time.Time) (Appended, error) {
	data := make([]string, len(in))
	for i, e := range in {
		if !validEventType.MatchString(e.Type) {
			return Appended{}, errdefs.Invalidf("event type %q must match %s", e.Type, validEventType)
		}
		switch {
		case len(e.Data) == 0:
			data[i] = "{}"
		case len(e.Data) > maxEventData:
			return Appended{}, errdefs.TooLargef("event data is over %d bytes", maxEventData)
		case !json.Valid(e.Data):
			return Appended{}, errdefs.Invalidf("event data of a %q event is not valid JSON", e.Type)
		default:
			data[i] = string(e.Data)
		}
	}

	q := `UPDATE jobs SET next_seq = next_seq + $2 WHERE id = $1 RETURNING next_seq, tenant_id`
	args := []any{jobID, int64(len(in))}
	if tenantID != "" {
		q = `UPDATE jobs SET next_seq = next_seq + $2 WHERE id = $1 AND tenant_id = $3 RETURNING next_seq, tenant_id`
		args = append(args, tenantID)
	}
	var next int64
	var tenant string
	err := tx.QueryRowContext(ctx, q, args...).Scan(&next, &tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return Appended{}, errdefs.NotFoundf("job %q not found", jobID)
	}
	if err != nil {
		return Appended{}, s.dbErr("append events", err)
	}
	first := next - int64(len(in))

	a := Appended{JobID: jobID, TenantID: tenant, Events: make([]Event, len(in)), LastSeq: next - 1}
	for i, e := range in {
		a.Events[i] = Event{Seq: first + int64(i), JobID: jobID, Time: now, Type: e.Type, Data: json.RawMessage(data[i])}
		if e.Type == EventJobState {
			a.StateSeqs = append(a.StateSeqs, a.Events[i].Seq)
		}
	}
	for lo := 0; lo < len(in); lo += insertChunk {
		hi := min(lo+insertChunk, len(in))
		var b strings.Builder
		b.WriteString(`INSERT INTO events (job_id, seq, time, type, data) VALUES `)
		vals := make([]any, 0, 4*(hi-lo)+2)
		vals = append(vals, jobID, now.UnixNano())
		for i := lo; i < hi; i++ {
			if i > lo {
				b.WriteString(", ")
			}
			n := len(vals)
			fmt.Fprintf(&b, "($1, $%d, $2, $%d, $%d)", n+1, n+2, n+3)
			vals = append(vals, a.Events[i].Seq, in[i].Type, data[i])
		}
		if _, err := tx.ExecContext(ctx, b.String(), vals...); err != nil {
			return Appended{}, s.dbErr("append events", err)
		}
	}
	if s.d.notify {
		if err := s.notifyTx(ctx, tx, a); err != nil {
			return Appended{}, err
		}
	}
	return a, nil
}

// EventsAfter returns up to limit of job jobID's events with seq > after,
// in order. limit 0 means 100; more than 10,000 is capped. An unknown job
// has no events.
func (s *Store) EventsAfter(ctx context.Context, jobID string, after int64, limit int) ([]Event, error) {
	switch {
	case after < 0:
		return nil, errdefs.Invalidf("after must not be negative")
	case limit < 0:
		return nil, errdefs.Invalidf("limit must not be negative")
	case limit == 0:
		limit = eventsPage
	case limit > maxEventPage:
		limit = maxEventPage
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT seq, time, type, data FROM events WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		jobID, after, limit)
	if err != nil {
		return nil, s.dbErr("events after", err)
	}
	defer rows.Close()
	evs := make([]Event, 0, min(limit, 64))
	for rows.Next() {
		e := Event{JobID: jobID}
		var at int64
		var data string
		if err := rows.Scan(&e.Seq, &at, &e.Type, &data); err != nil {
			return nil, s.dbErr("events after", err)
		}
		e.Time, e.Data = time.Unix(0, at).UTC(), json.RawMessage(data)
		evs = append(evs, e)
	}
	return evs, s.dbErr("events after", rows.Err())
}

// Watch registers fn to be told, in this process, about every append this
// Store commits (AppendEvents, and the job.state events of CreateJob and
// TransitionJob). fn runs in the committing goroutine after the commit and
// before the appending call returns, so it must not block and must not
// change the events it is given. Call the returned function to unregister.
func (s *Store) Watch(fn func(Appended)) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextW
	s.nextW++
	s.watchers[id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.watchers, id)
	}
}

// emit tells the watchers about a committed append.
func (s *Store) emit(a Appended) {
	s.mu.Lock()
	fns := make([]func(Appended), 0, len(s.watchers))
	for _, fn := range s.watchers {
		fns = append(fns, fn)
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(a)
	}
}
