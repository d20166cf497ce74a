package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// notifyChannel is the PostgreSQL channel on which every event append is
// announced to the other replicas.
const notifyChannel = "corral_events"

// notifyPayload is what an append announces: who appended (to ignore our
// own echo), which job, up to which seq, and which seqs were state changes.
// Subscribers read the events themselves from the store. It stays far below
// NOTIFY's 8000-byte limit.
type notifyPayload struct {
	Instance  string  `json:"i"`
	JobID     string  `json:"j"`
	TenantID  string  `json:"t"`
	LastSeq   int64   `json:"s"`
	StateSeqs []int64 `json:"st,omitempty"`
}

// notifyTx queues the NOTIFY for a; PostgreSQL delivers it when (and only
// if) tx commits.
func (s *Store) notifyTx(ctx context.Context, tx *sql.Tx, a Appended) error {
	b, err := json.Marshal(notifyPayload{Instance: s.instance, JobID: a.JobID, TenantID: a.TenantID,
		LastSeq: a.LastSeq, StateSeqs: a.StateSeqs})
	if err != nil {
		return fmt.Errorf("store: notify: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, string(b)); err != nil {
		return s.dbErr("notify", err)
	}
	return nil
}

// Listen reports events that other Stores (other control-plane replicas)
// commit to the same PostgreSQL database, until ctx ends; then it returns
// nil. It holds one dedicated connection, reconnecting with backoff when it
// drops; after every (re)connection, the first included, it calls fn with
// Appended{Resync: true}, since notifications sent while it was away are
// lost. fn runs in Listen's goroutine, one call at a time, and should not
// block for long. Appends by this Store are not reported (Watch has them).
//
// On SQLite, which has one process, there is nothing to listen to: Listen
// returns nil at once.
func (s *Store) Listen(ctx context.Context, fn func(Appended)) error {
	if !s.d.notify {
		return nil
	}
	backoff := 100 * time.Millisecond
	for {
		connected, err := s.listenOnce(ctx, fn)
		if ctx.Err() != nil {
			return nil
		}
		if connected {
			backoff = 100 * time.Millisecond
		}
		s.log.Warn("store: listen connection lost; reconnecting", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listenOnce runs one LISTEN connection until it fails or ctx ends.
func (s *Store) listenOnce(ctx context.Context, fn func(Appended)) (connected bool, err error) {
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return false, fmt.Errorf("store: listen: connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return false, fmt.Errorf("store: listen: %w", err)
	}
	fn(Appended{Resync: true})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, fmt.Errorf("store: listen: %w", err)
		}
		var p notifyPayload
		if err := json.Unmarshal([]byte(n.Payload), &p); err != nil {
			s.log.Warn("store: listen: bad payload", "payload", n.Payload, "err", err)
			continue
		}
		if p.Instance == s.instance {
			continue
		}
		fn(Appended{JobID: p.JobID, TenantID: p.TenantID, LastSeq: p.LastSeq, StateSeqs: p.StateSeqs})
	}
}
