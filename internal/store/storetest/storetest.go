// Package storetest gives tests a fresh, empty database on every backend of
// internal/store, so one test body runs against SQLite and PostgreSQL.
//
// SQLite databases are files in t.TempDir. PostgreSQL databases are created
// as corral_test_<random> on the server named by CORRAL_TEST_POSTGRES
// (default: the one scripts/postgres.sh starts) and dropped when the test
// ends; if that server cannot be reached, tests that ask for it are skipped
// with the reason. CORRAL_TEST_POSTGRES=none skips PostgreSQL on purpose.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/testenv"

	"github.com/jackc/pgx/v5"

	"github.com/corral-sh/corral/internal/store"
)

// DefaultPostgres is the server scripts/postgres.sh sets up.
const DefaultPostgres = "postgres://corral:corral@127.0.0.1:5432/corral?sslmode=disable"

// Backend makes fresh databases of one kind.
type Backend struct {
	Name string // "sqlite" or "postgres"
	// NewURL returns the URL of a new empty database that is removed when
	// the test ends (stores opened on it must be closed by then: register
	// their Close after calling NewURL, as Open does). It skips the test if
	// the backend is unavailable.
	NewURL func(t testing.TB) string
}

// Backends returns every backend, SQLite first.
func Backends() []Backend {
	return []Backend{
		{Name: "sqlite", NewURL: sqliteURL},
		{Name: "postgres", NewURL: postgresURL},
	}
}

// Open opens url and closes the store when the test ends.
func Open(t testing.TB, url string) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, url, nil)
	if err != nil {
		t.Fatalf("store.Open(%q) = %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sqliteURL(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "corral.db")
}

// PostgresDSN is the server the tests use: $CORRAL_TEST_POSTGRES or
// DefaultPostgres. "" means PostgreSQL tests are turned off.
func PostgresDSN() string {
	switch v := os.Getenv("CORRAL_TEST_POSTGRES"); v {
	case "":
		return DefaultPostgres
	case "none", "off":
		return ""
	default:
		return v
	}
}

var (
	pgOnce sync.Once
	pgErr  error // why PostgreSQL is unavailable
)

func postgresURL(t testing.TB) string {
	t.Helper()
	dsn := PostgresDSN()
	if dsn == "" {
		t.Skip("postgres: CORRAL_TEST_POSTGRES=none")
	}
	pgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			pgErr = err
			return
		}
		c.Close(ctx)
	})
	if pgErr != nil {
		testenv.Unavailable(t, "postgres unreachable at CORRAL_TEST_POSTGRES (%v); start one with scripts/postgres.sh", pgErr)
	}

	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "corral_test_" + hex.EncodeToString(b)
	admin := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, sql)
		return err
	}
	if err := admin("CREATE DATABASE " + name); err != nil {
		t.Fatalf("postgres: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("postgres: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("postgres: bad CORRAL_TEST_POSTGRES: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// Fresh returns a fresh database of backend b, opened.
func Fresh(t testing.TB, b Backend) (*store.Store, string) {
	t.Helper()
	u := b.NewURL(t)
	return Open(t, u), u
}

// Tenant creates a tenant with the given job limit (0: unlimited).
func Tenant(t testing.TB, s *store.Store, name string, maxJobs int) *store.Tenant {
	t.Helper()
	tn, err := s.CreateTenant(context.Background(), store.Tenant{Name: name, MaxConcurrentJobs: maxJobs})
	if err != nil {
		t.Fatalf("CreateTenant(%q) = %v", name, err)
	}
	return tn
}

// Job creates a pending job for tenant with a small spec.
func Job(t testing.TB, s *store.Store, tenantID string) *store.Job {
	t.Helper()
	j, err := s.CreateJob(context.Background(), store.Job{TenantID: tenantID,
		Spec: []byte(fmt.Sprintf(`{"task":"test","agent":"script","command":"true","n":%q}`, tenantID))})
	if err != nil {
		t.Fatalf("CreateJob = %v", err)
	}
	return j
}
