// Package store is the control plane's database: tenants, API tokens, jobs,
// each job's event log, and sandboxes. It runs on SQLite (the embedded
// default, one process) or PostgreSQL (several control-plane replicas), with
// the same migrations and the same methods; the few SQL differences live in
// one dialect value (dialect.go).
//
// Every method takes a context first and returns errors of the classes in
// internal/errdefs: ErrNotFound for a missing row or one that belongs to
// another tenant (callers must not be able to tell the two apart), ErrConflict
// for a failed compare-and-set or a duplicate, ErrInvalid for bad input,
// ErrRateLimited for a tenant at its sandbox limit.
// Anything else is a database failure, wrapped with %w.
//
// Times are stored as BIGINT unix nanoseconds in UTC, NULL meaning "not yet";
// they come back as UTC time.Time values, the zero Time for NULL. JSON (job
// specs, results, labels, event data) is stored as TEXT.
//
// # Lifetime
//
// Open connects, applies pending migrations and returns a Store that any
// number of goroutines may use at once; Close releases the connections. The
// Store starts no goroutine of its own: Listen (PostgreSQL only) runs in its
// caller's goroutine until the caller's context ends, and Watch callbacks run
// in the goroutine that committed the write.
//
// # Locking
//
// Every write is one transaction. On SQLite there is exactly one writer
// connection and each write transaction begins IMMEDIATE, so writes are
// serialised, across processes too (busy_timeout); reads go to a separate
// pool of read-only connections and see the last commit (WAL). On PostgreSQL
// (READ COMMITTED) a transaction that reads a row and then changes it locks
// the row first: the job row in TransitionJob (SELECT ... FOR UPDATE) and in
// AppendEvents (UPDATE ... RETURNING of jobs.next_seq, which is what makes
// event sequence numbers gap-free), the candidate job in ClaimJob (FOR UPDATE
// SKIP LOCKED, so two replicas never claim the same job) and then its tenant
// row (FOR NO KEY UPDATE, to count the tenant's active jobs without a race).
// Locks are taken in the order job, then tenant, and ClaimJob never waits for
// a job lock, so these cannot deadlock.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Store is a handle on the control plane's database. It is safe for
// concurrent use.
type Store struct {
	w   *sql.DB // writes; on SQLite a pool of exactly one connection
	r   *sql.DB // reads; on PostgreSQL the same pool as w
	d   *dialect
	dsn string // the PostgreSQL URL, for Listen's dedicated connection
	log *slog.Logger
	now func() time.Time

	// instance tells this Store's own NOTIFY payloads apart from those of
	// other replicas, so Listen does not report local appends twice.
	instance string

	touched sync.Map // token id -> time.Time of this process's last TouchToken write

	mu       sync.Mutex // guards watchers and nextW
	watchers map[int]func(Appended)
	nextW    int
}

// Open connects to the database at url, applies any pending migrations and
// returns the Store. url is "postgres://..." or "postgresql://..." for
// PostgreSQL, and "sqlite:/path/to/corral.db" or a bare file path for SQLite
// (the file is created if missing; in-memory databases are not supported).
// A nil log discards log output.
func Open(ctx context.Context, url string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		log:      log,
		now:      func() time.Time { return time.Now().UTC() },
		instance: newID("i"),
		watchers: map[int]func(Appended){},
	}
	var err error
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		err = s.openPostgres(ctx, url)
	case url == "":
		return nil, errdefs.Invalidf("database URL is empty")
	case strings.Contains(url, "://") && !strings.HasPrefix(url, "sqlite:"):
		return nil, errdefs.Invalidf("database URL scheme not supported (want sqlite: or postgres://): %q", redactURL(url))
	default:
		err = s.openSQLite(ctx, url)
	}
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database's connection pools. Listen holds a connection
// of its own: end its context first.
func (s *Store) Close() error {
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// Backend names the database engine: "sqlite" or "postgres".
func (s *Store) Backend() string { return s.d.name }

// SetClock replaces the Store's clock; tests use it to move leases forward.
// It must be called before the Store is shared.
func (s *Store) SetClock(now func() time.Time) {
	s.now = func() time.Time { return now().UTC() }
}

// tx runs fn in a write transaction and commits it if fn returns nil.
func (s *Store) tx(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: begin: %w", op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: commit: %w", op, err)
	}
	return nil
}

// dbErr wraps an unexpected database error with the operation's name, after
// turning constraint violations into error classes.
func (s *Store) dbErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("store: %s: %w", op, err)
	case s.d.isUnique(err):
		return errdefs.Wrap(errdefs.ErrConflict, err, op+": already exists")
	case s.d.isForeignKey(err):
		return errdefs.Wrap(errdefs.ErrNotFound, err, op+": tenant not found")
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns prefix + "_" + 16 random lowercase letters and digits
// (80 bits).
func newID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + "_" + idEncoding.EncodeToString(b)
}

var validID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// checkID rejects an id the caller chose that could not be one of ours.
func checkID(kind, id string) error {
	if !validID.MatchString(id) {
		return errdefs.Invalidf("%s id %q must be 1-63 lowercase letters, digits, '_' or '-'", kind, id)
	}
	return nil
}

// nanos converts t for a BIGINT column: the zero Time is NULL.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// fromNanos converts a nullable BIGINT column back to a time.
func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// round trims t to what the database keeps, so a value returned by a write
// equals the one a later read returns.
func round(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.Unix(0, t.UnixNano()).UTC()
}

// redactURL hides a password in a database URL for messages.
func redactURL(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	userinfo := u[scheme+3 : at]
	if i := strings.Index(userinfo, ":"); i >= 0 {
		return u[:scheme+3] + userinfo[:i] + ":xxxxx" + u[at:]
	}
	return u
}
