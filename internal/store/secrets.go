package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Secret is a tenant's named secret as stored: its value sealed by
// internal/secrets. This package never sees a plaintext value; it keeps the
// ciphertext as base64 text so that one column type serves both backends.
type Secret struct {
	TenantID   string
	Name       string
	Ciphertext []byte // nil in ListSecrets' answers
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Limits the store checks; internal/secrets applies the real rules (names
// shaped like environment variables, values of at most 64 KiB).
const (
	maxSecretName       = 128
	maxSecretCiphertext = 256 << 10
)

func checkSecretKey(tenantID, name string) error {
	switch {
	case tenantID == "":
		return errdefs.Invalidf("secret needs a tenant")
	case name == "" || len(name) > maxSecretName:
		return errdefs.Invalidf("secret name must be 1-%d bytes", maxSecretName)
	}
	return nil
}

// PutSecret stores sec, which needs TenantID, Name and Ciphertext: a new
// row (created reports true, CreatedAt = UpdatedAt = now) or a replacement
// of the tenant's secret of that name (created false; CreatedAt kept,
// UpdatedAt = now). An unknown tenant is ErrNotFound.
func (s *Store) PutSecret(ctx context.Context, sec Secret) (_ *Secret, created bool, _ error) {
	if err := checkSecretKey(sec.TenantID, sec.Name); err != nil {
		return nil, false, err
	}
	if len(sec.Ciphertext) == 0 || len(sec.Ciphertext) > maxSecretCiphertext {
		return nil, false, errdefs.Invalidf("secret ciphertext must be 1-%d bytes", maxSecretCiphertext)
	}
	enc := base64.StdEncoding.EncodeToString(sec.Ciphertext)
	// Insert, else update. The row can vanish between the two (a
	// concurrent DeleteSecret on PostgreSQL); the next attempt inserts it.
	for range 3 {
		now := round(s.now())
		var gone bool
		err := s.tx(ctx, "put secret", func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `INSERT INTO secrets (tenant_id, name, ciphertext, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, name) DO NOTHING`,
				sec.TenantID, sec.Name, enc, now.UnixNano(), now.UnixNano())
			if err != nil {
				return s.dbErr("put secret", err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return s.dbErr("put secret", err)
			} else if n == 1 {
				created, sec.CreatedAt, sec.UpdatedAt = true, now, now
				return nil
			}
			var c int64
			err = tx.QueryRowContext(ctx, `UPDATE secrets SET ciphertext = $3, updated_at = $4
				WHERE tenant_id = $1 AND name = $2 RETURNING created_at`,
				sec.TenantID, sec.Name, enc, now.UnixNano()).Scan(&c)
			if errors.Is(err, sql.ErrNoRows) {
				gone = true
				return nil
			}
			if err != nil {
				return s.dbErr("put secret", err)
			}
			created, sec.CreatedAt, sec.UpdatedAt = false, time.Unix(0, c).UTC(), now
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		if !gone {
			return &sec, created, nil
		}
	}
	return nil, false, errdefs.Conflictf("secret %q changed while being set; try again", sec.Name)
}

// GetSecret returns the tenant's secret name, ciphertext included. A
// missing secret, or one of another tenant, is ErrNotFound.
func (s *Store) GetSecret(ctx context.Context, tenantID, name string) (*Secret, error) {
	if err := checkSecretKey(tenantID, name); err != nil {
		return nil, err
	}
	sec := Secret{TenantID: tenantID, Name: name}
	var enc string
	var created, updated int64
	err := s.r.QueryRowContext(ctx,
		`SELECT ciphertext, created_at, updated_at FROM secrets WHERE tenant_id = $1 AND name = $2`,
		tenantID, name).Scan(&enc, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errdefs.NotFoundf("secret %q not found", name)
	}
	if err != nil {
		return nil, s.dbErr("get secret", err)
	}
	if sec.Ciphertext, err = base64.StdEncoding.DecodeString(enc); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnprocessable, err, fmt.Sprintf("secret %q is corrupt in the database", name))
	}
	sec.CreatedAt, sec.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return &sec, nil
}

// ListSecrets returns the tenant's secrets by name, without ciphertexts.
func (s *Store) ListSecrets(ctx context.Context, tenantID string) ([]*Secret, error) {
	rows, err := s.r.QueryContext(ctx,
		`SELECT name, created_at, updated_at FROM secrets WHERE tenant_id = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, s.dbErr("list secrets", err)
	}
	defer rows.Close()
	var out []*Secret
	for rows.Next() {
		sec := Secret{TenantID: tenantID}
		var created, updated int64
		if err := rows.Scan(&sec.Name, &created, &updated); err != nil {
			return nil, s.dbErr("list secrets", err)
		}
		sec.CreatedAt, sec.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		out = append(out, &sec)
	}
	return out, s.dbErr("list secrets", rows.Err())
}

// DeleteSecret removes the tenant's secret name. A missing secret, or one
// of another tenant, is ErrNotFound.
func (s *Store) DeleteSecret(ctx context.Context, tenantID, name string) error {
	if err := checkSecretKey(tenantID, name); err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM secrets WHERE tenant_id = $1 AND name = $2`, tenantID, name)
	if err != nil {
		return s.dbErr("delete secret", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.dbErr("delete secret", err)
	} else if n == 0 {
		return errdefs.NotFoundf("secret %q not found", name)
	}
	return nil
}
