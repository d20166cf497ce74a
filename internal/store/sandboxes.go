package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Sandbox is the control plane's record of a sandbox; the runtime holds the
// sandbox itself. ListAllSandboxes and the runtime's List are what
// reconciliation compares after a restart.
type Sandbox struct {
	ID           string // the runtime's id, e.g. "sb_..."
	TenantID     string
	Runtime      string
	Template     string
	Status       string          // the runtime's state, e.g. "creating", "running"
	Spec         json.RawMessage // a JSON object: the accepted POST /v1/sandboxes body
	Labels       map[string]string
	CreatedAt    time.Time
	ExpiresAt    time.Time // hard deadline (timeout_s); zero for none
	LastActiveAt time.Time // last request or connection, for the idle timeout
}

// touchSandboxEvery is how stale last_active_at may get; idle timeouts are
// minutes, so TouchSandbox writes at most once a second per sandbox.
const touchSandboxEvery = time.Second

const sandboxCols = `id, tenant_id, runtime, template, status, spec, labels, created_at, expires_at, last_active_at`

func scanSandbox(r scanner) (*Sandbox, error) {
	var sb Sandbox
	var spec, labels string
	var created, active int64
	var expires sql.NullInt64
	if err := r.Scan(&sb.ID, &sb.TenantID, &sb.Runtime, &sb.Template, &sb.Status, &spec, &labels,
		&created, &expires, &active); err != nil {
		return nil, err
	}
	sb.Spec = json.RawMessage(spec)
	sb.CreatedAt, sb.ExpiresAt = time.Unix(0, created).UTC(), fromNanos(expires)
	sb.LastActiveAt = time.Unix(0, active).UTC()
	if err := json.Unmarshal([]byte(labels), &sb.Labels); err != nil {
		return nil, err
	}
	return &sb, nil
}

// CreateSandbox records a sandbox. sb needs ID (the runtime's, or empty for
// a fresh "sb_..."), TenantID, Runtime and Status; CreatedAt and
// LastActiveAt are set to now. If the tenant has max_sandboxes and holds
// that many already, it fails with ErrRateLimited (the tenant row is locked
// while counting, so concurrent creates cannot overshoot). A taken ID is
// ErrConflict, an unknown tenant ErrNotFound.
func (s *Store) CreateSandbox(ctx context.Context, sb Sandbox) (*Sandbox, error) {
	if sb.ID == "" {
		sb.ID = newID("sb")
	} else if err := checkID("sandbox", sb.ID); err != nil {
		return nil, err
	}
	switch {
	case sb.TenantID == "":
		return nil, errdefs.Invalidf("sandbox needs a tenant")
	case sb.Runtime == "" || len(sb.Runtime) > 64 || len(sb.Template) > 256:
		return nil, errdefs.Invalidf("sandbox runtime must be 1-64 bytes, template at most 256")
	case sb.Status == "" || len(sb.Status) > 32:
		return nil, errdefs.Invalidf("sandbox status must be 1-32 bytes")
	}
	spec, err := checkObject("sandbox spec", sb.Spec)
	if err != nil {
		return nil, err
	}
	labels, err := encodeLabels(sb.Labels)
	if err != nil {
		return nil, err
	}
	now := round(s.now())
	sb.Spec, sb.CreatedAt, sb.LastActiveAt, sb.ExpiresAt = json.RawMessage(spec), now, now, round(sb.ExpiresAt)
	err = s.tx(ctx, "create sandbox", func(tx *sql.Tx) error {
		var limit int
		err := tx.QueryRowContext(ctx, `SELECT max_sandboxes FROM tenants WHERE id = $1`+s.d.lockTenant, sb.TenantID).Scan(&limit)
		if errors.Is(err, sql.ErrNoRows) {
			return errdefs.NotFoundf("tenant %q not found", sb.TenantID)
		}
		if err != nil {
			return s.dbErr("create sandbox", err)
		}
		if limit > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sandboxes WHERE tenant_id = $1`, sb.TenantID).Scan(&n); err != nil {
				return s.dbErr("create sandbox", err)
			}
			if n >= limit {
				return errdefs.Wrap(errdefs.ErrRateLimited, nil, "tenant has reached its limit of sandboxes")
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO sandboxes (`+sandboxCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			sb.ID, sb.TenantID, sb.Runtime, sb.Template, sb.Status, spec, labels, now.UnixNano(), nanos(sb.ExpiresAt), now.UnixNano())
		return s.dbErr("create sandbox", err)
	})
	if err != nil {
		return nil, err
	}
	return &sb, nil
}

// GetSandbox returns the tenant's sandbox id; another tenant's is
// ErrNotFound.
func (s *Store) GetSandbox(ctx context.Context, tenantID, id string) (*Sandbox, error) {
	sb, err := scanSandbox(s.r.QueryRowContext(ctx,
		`SELECT `+sandboxCols+` FROM sandboxes WHERE id = $1 AND tenant_id = $2`, id, tenantID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errdefs.NotFoundf("sandbox %q not found", id)
	}
	if err != nil {
		return nil, s.dbErr("get sandbox", err)
	}
	return sb, nil
}

// ListSandboxes returns the tenant's sandboxes, oldest first.
func (s *Store) ListSandboxes(ctx context.Context, tenantID string) ([]*Sandbox, error) {
	return s.listSandboxes(ctx, `SELECT `+sandboxCols+` FROM sandboxes WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID)
}

// ListAllSandboxes returns every tenant's sandboxes, oldest first, for
// reconciliation with the runtimes.
func (s *Store) ListAllSandboxes(ctx context.Context) ([]*Sandbox, error) {
	return s.listSandboxes(ctx, `SELECT `+sandboxCols+` FROM sandboxes ORDER BY created_at, id`)
}

func (s *Store) listSandboxes(ctx context.Context, q string, args ...any) ([]*Sandbox, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.dbErr("list sandboxes", err)
	}
	defer rows.Close()
	var sbs []*Sandbox
	for rows.Next() {
		sb, err := scanSandbox(rows)
		if err != nil {
			return nil, s.dbErr("list sandboxes", err)
		}
		sbs = append(sbs, sb)
	}
	return sbs, s.dbErr("list sandboxes", rows.Err())
}

// UpdateSandboxStatus sets the status of the tenant's sandbox id.
func (s *Store) UpdateSandboxStatus(ctx context.Context, tenantID, id, status string) error {
	if status == "" || len(status) > 32 {
		return errdefs.Invalidf("sandbox status must be 1-32 bytes")
	}
	return s.updateSandbox(ctx, "update sandbox status", tenantID, id,
		`UPDATE sandboxes SET status = $3 WHERE id = $1 AND tenant_id = $2`, status)
}

// SetSandboxExpiry sets the hard deadline of the tenant's sandbox id (zero:
// none), e.g. to extend it.
func (s *Store) SetSandboxExpiry(ctx context.Context, tenantID, id string, at time.Time) error {
	return s.updateSandbox(ctx, "set sandbox expiry", tenantID, id,
		`UPDATE sandboxes SET expires_at = $3 WHERE id = $1 AND tenant_id = $2`, nanos(at))
}

// TouchSandbox records activity on the tenant's sandbox id. It writes only
// when the recorded time is over a second old, so the proxy may call it on
// every request.
func (s *Store) TouchSandbox(ctx context.Context, tenantID, id string) error {
	now := s.now()
	res, err := s.w.ExecContext(ctx, `UPDATE sandboxes SET last_active_at = $3
		WHERE id = $1 AND tenant_id = $2 AND last_active_at < $4`,
		id, tenantID, now.UnixNano(), now.Add(-touchSandboxEvery).UnixNano())
	if err != nil {
		return s.dbErr("touch sandbox", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		_, err := s.GetSandbox(ctx, tenantID, id)
		return err
	}
	return nil
}

// DeleteSandbox forgets the tenant's sandbox id; ErrNotFound if there is
// none. Jobs keep its id in their history.
func (s *Store) DeleteSandbox(ctx context.Context, tenantID, id string) error {
	return s.updateSandbox(ctx, "delete sandbox", tenantID, id, `DELETE FROM sandboxes WHERE id = $1 AND tenant_id = $2`)
}

func (s *Store) updateSandbox(ctx context.Context, op, tenantID, id, query string, args ...any) error {
	res, err := s.w.ExecContext(ctx, query, append([]any{id, tenantID}, args...)...)
	if err != nil {
		return s.dbErr(op, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errdefs.NotFoundf("sandbox %q not found", id)
	}
	return nil
}
