package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The migrations, one file each, named NNNN_what.sql and numbered from 1
// without gaps. They are portable SQL run unchanged by both backends; a
// released file is never edited, a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int64
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations in order.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	var ms []migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("store: migration %q: name must be NNNN_what.sql", base)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("store: migration %q: %w", base, err)
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != int64(i+1) {
			return nil, fmt.Errorf("store: migration %q: want version %d (numbered from 1 without gaps)", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies the migrations the database has not seen, all in one
// transaction, and records each in schema_migrations. Running it again is a
// no-op. A database migrated by a newer binary is refused rather than used
// with a schema this code does not know.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return s.tx(ctx, "migrate", func(tx *sql.Tx) error {
		if s.d.lockMigrations != "" {
			if _, err := tx.ExecContext(ctx, s.d.lockMigrations); err != nil {
				return s.dbErr("migrate: lock", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    BIGINT PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at BIGINT NOT NULL
		)`); err != nil {
			return s.dbErr("migrate: schema_migrations", err)
		}
		applied := map[int64]bool{}
		rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return s.dbErr("migrate: read versions", err)
		}
		for rows.Next() {
			var v int64
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return s.dbErr("migrate: read versions", err)
			}
			applied[v] = true
		}
		if err := rows.Close(); err != nil {
			return s.dbErr("migrate: read versions", err)
		}
		for v := range applied {
			if v > int64(len(ms)) {
				return fmt.Errorf("store: database schema version %d is newer than this binary knows (%d)", v, len(ms))
			}
		}
		for _, m := range ms {
			if applied[m.version] {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return s.dbErr("migrate: apply "+m.name, err)
			}
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, s.now().UnixNano()); err != nil {
				return s.dbErr("migrate: record "+m.name, err)
			}
			s.log.Info("store: applied migration", "backend", s.d.name, "migration", m.name)
		}
		return nil
	})
}
