package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Tenant owns jobs, sandboxes and tokens; a tenant sees only its own.
type Tenant struct {
	ID                string
	Name              string
	CreatedAt         time.Time
	MaxConcurrentJobs int // jobs in creating, running or completing at once; 0: unlimited
	MaxSandboxes      int // 0: unlimited
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

const tenantCols = `id, name, created_at, max_concurrent_jobs, max_sandboxes`

func scanTenant(r scanner) (*Tenant, error) {
	var t Tenant
	var created int64
	if err := r.Scan(&t.ID, &t.Name, &created, &t.MaxConcurrentJobs, &t.MaxSandboxes); err != nil {
		return nil, err
	}
	t.CreatedAt = time.Unix(0, created).UTC()
	return &t, nil
}

// CreateTenant stores t. An empty ID gets a fresh "tn_..." id; CreatedAt is
// set to now. A taken ID is ErrConflict.
func (s *Store) CreateTenant(ctx context.Context, t Tenant) (*Tenant, error) {
	if t.ID == "" {
		t.ID = newID("tn")
	} else if err := checkID("tenant", t.ID); err != nil {
		return nil, err
	}
	switch {
	case t.Name == "" || len(t.Name) > 200:
		return nil, errdefs.Invalidf("tenant name must be 1-200 bytes")
	case t.MaxConcurrentJobs < 0 || t.MaxSandboxes < 0:
		return nil, errdefs.Invalidf("tenant limits must not be negative")
	}
	t.CreatedAt = round(s.now())
	_, err := s.w.ExecContext(ctx, `INSERT INTO tenants (`+tenantCols+`) VALUES ($1, $2, $3, $4, $5)`,
		t.ID, t.Name, t.CreatedAt.UnixNano(), t.MaxConcurrentJobs, t.MaxSandboxes)
	if err != nil {
		return nil, s.dbErr("create tenant", err)
	}
	return &t, nil
}

// GetTenant returns the tenant with id, or ErrNotFound.
func (s *Store) GetTenant(ctx context.Context, id string) (*Tenant, error) {
	t, err := scanTenant(s.r.QueryRowContext(ctx, `SELECT `+tenantCols+` FROM tenants WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errdefs.NotFoundf("tenant %q not found", id)
	}
	if err != nil {
		return nil, s.dbErr("get tenant", err)
	}
	return t, nil
}

// ListTenants returns every tenant, oldest first.
func (s *Store) ListTenants(ctx context.Context) ([]*Tenant, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+tenantCols+` FROM tenants ORDER BY created_at, id`)
	if err != nil {
		return nil, s.dbErr("list tenants", err)
	}
	defer rows.Close()
	var ts []*Tenant
	for rows.Next() {
		t, err := scanTenant(rows)
		if err != nil {
			return nil, s.dbErr("list tenants", err)
		}
		ts = append(ts, t)
	}
	return ts, s.dbErr("list tenants", rows.Err())
}

// SetTenantLimits changes the limits of tenant id that are not nil and
// returns the tenant; they apply to the next claim or sandbox creation.
// ErrNotFound for an unknown tenant, ErrInvalid for a negative limit.
func (s *Store) SetTenantLimits(ctx context.Context, id string, maxJobs, maxSandboxes *int) (*Tenant, error) {
	for _, l := range []*int{maxJobs, maxSandboxes} {
		if l != nil && *l < 0 {
			return nil, errdefs.Invalidf("tenant limits must not be negative")
		}
	}
	res, err := s.w.ExecContext(ctx, `UPDATE tenants SET
		max_concurrent_jobs = COALESCE($2, max_concurrent_jobs),
		max_sandboxes = COALESCE($3, max_sandboxes)
		WHERE id = $1`, id, nullInt(maxJobs), nullInt(maxSandboxes))
	if err != nil {
		return nil, s.dbErr("set tenant limits", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return nil, errdefs.NotFoundf("tenant %q not found", id)
	}
	return s.GetTenant(ctx, id)
}

func nullInt(p *int) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*p), Valid: true}
}
