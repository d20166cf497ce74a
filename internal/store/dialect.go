package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver (pure Go)

	"github.com/corral-sh/corral/internal/errdefs"
)

// dialect holds the only places where the SQL differs between SQLite and
// PostgreSQL. Everything else, migrations included, is the same text.
type dialect struct {
	name string

	// forUpdate ends a SELECT whose row the transaction then changes. SQLite
	// needs nothing: its write transactions are exclusive.
	forUpdate string
	// skipLocked ends ClaimJob's candidate query (alias j) so that concurrent
	// claimers pass over each other's candidates instead of waiting.
	skipLocked string
	// lockTenant ends the SELECT that serialises claimers of one tenant
	// before they count its active jobs. NO KEY UPDATE does not block
	// inserting jobs, whose foreign key takes a KEY SHARE lock.
	lockTenant string
	// notify makes write transactions that append events also NOTIFY other
	// replicas (PostgreSQL LISTEN/NOTIFY; delivered only on commit).
	notify bool
	// lockMigrations is run first in the migration transaction so that
	// replicas starting together apply migrations once.
	lockMigrations string

	isUnique     func(error) bool
	isForeignKey func(error) bool
}

var sqliteDialect = &dialect{
	name:         "sqlite",
	isUnique:     func(err error) bool { return sqliteCode(err) == 2067 || sqliteCode(err) == 1555 }, // SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY
	isForeignKey: func(err error) bool { return sqliteCode(err) == 787 },                             // SQLITE_CONSTRAINT_FOREIGNKEY
}

var postgresDialect = &dialect{
	name:           "postgres",
	forUpdate:      " FOR UPDATE",
	skipLocked:     " FOR UPDATE OF j SKIP LOCKED",
	lockTenant:     " FOR NO KEY UPDATE",
	notify:         true,
	lockMigrations: "SELECT pg_advisory_xact_lock(7305975348521)", // any constant, the same for every replica
	isUnique:       func(err error) bool { return pgCode(err) == "23505" },
	isForeignKey:   func(err error) bool { return pgCode(err) == "23503" },
}

func sqliteCode(err error) int {
	var e interface{ Code() int }
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

func pgCode(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// openSQLite opens url ("sqlite:/path", "sqlite:///path" or a bare path):
// one writer connection whose transactions begin IMMEDIATE, and a small pool
// of query-only readers. WAL lets the readers run while the writer commits;
// synchronous=FULL makes every commit durable before it is acknowledged.
func (s *Store) openSQLite(ctx context.Context, url string) error {
	path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
	switch {
	case path == "", path == ":memory:", strings.HasPrefix(path, "file:"), strings.HasPrefix(path, "mode=memory"):
		return errdefs.Invalidf("sqlite database must be a file path, got %q", url)
	case strings.ContainsAny(path, "?#"):
		return errdefs.Invalidf("sqlite database path %q must not contain '?' or '#'", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("store: sqlite path %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return fmt.Errorf("store: sqlite directory: %w", err)
	}
	const common = "_busy_timeout=10000&_foreign_keys=1"
	w, err := sql.Open("sqlite", abs+"?_txlock=immediate&_journal_mode=WAL&_synchronous=FULL&"+common)
	if err != nil {
		return fmt.Errorf("store: open sqlite %q: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil { // creates the file and switches it to WAL
		w.Close()
		return errdefs.Wrap(errdefs.ErrUnavailable, fmt.Errorf("open sqlite %q: %w", abs, err), "database unavailable")
	}
	r, err := sql.Open("sqlite", abs+"?_query_only=1&"+common)
	if err != nil {
		w.Close()
		return fmt.Errorf("store: open sqlite %q: %w", abs, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	s.w, s.r, s.d = w, r, sqliteDialect
	return nil
}

// openPostgres opens a database/sql pool on pgx. Reads and writes share it.
func (s *Store) openPostgres(ctx context.Context, url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return errdefs.Wrap(errdefs.ErrInvalid, err, fmt.Sprintf("bad postgres URL %q", redactURL(url)))
	}
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return errdefs.Wrap(errdefs.ErrUnavailable, fmt.Errorf("connect %s: %w", redactURL(url), err), "database unavailable")
	}
	s.w, s.r, s.d, s.dsn = db, db, postgresDialect, url
	return nil
}
