package store

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Token is an API token. Only its hash is stored: the caller generates a
// high-entropy token (at least 128 random bits), shows it to the user once,
// and stores the lowercase hex SHA-256 of it. A fast unsalted hash is right
// for random tokens: there is no dictionary to guess from, and lookups by
// hash stay one indexed query.
type Token struct {
	ID         string
	TenantID   string
	Name       string
	Hash       string // 64 lowercase hex digits: SHA-256 of the token
	Admin      bool
	CreatedAt  time.Time
	RevokedAt  time.Time // zero while the token is valid
	LastUsedAt time.Time // zero if never used; updated at most once a minute
}

// touchEvery is how stale last_used_at may get: TouchToken writes only when
// the stored value is older, so a busy token costs one write a minute, not
// one per request.
const touchEvery = time.Minute

var validHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

const tokenCols = `id, tenant_id, name, hash, admin, created_at, revoked_at, last_used_at`

func scanToken(r scanner) (*Token, error) {
	var t Token
	var created int64
	var revoked, used sql.NullInt64
	if err := r.Scan(&t.ID, &t.TenantID, &t.Name, &t.Hash, &t.Admin, &created, &revoked, &used); err != nil {
		return nil, err
	}
	t.CreatedAt = time.Unix(0, created).UTC()
	t.RevokedAt, t.LastUsedAt = fromNanos(revoked), fromNanos(used)
	return &t, nil
}

// CreateToken stores t, which must carry TenantID and Hash (the SHA-256 hex
// of the token; this package never sees the token itself). An empty ID gets
// a fresh "tok_..." id. A hash already stored is ErrConflict, an unknown
// tenant ErrNotFound.
func (s *Store) CreateToken(ctx context.Context, t Token) (*Token, error) {
	if t.ID == "" {
		t.ID = newID("tok")
	} else if err := checkID("token", t.ID); err != nil {
		return nil, err
	}
	switch {
	case !validHash.MatchString(t.Hash):
		return nil, errdefs.Invalidf("token hash must be 64 lowercase hex digits (SHA-256)")
	case t.TenantID == "":
		return nil, errdefs.Invalidf("token needs a tenant")
	case len(t.Name) > 200:
		return nil, errdefs.Invalidf("token name must be at most 200 bytes")
	}
	t.CreatedAt, t.RevokedAt, t.LastUsedAt = round(s.now()), time.Time{}, time.Time{}
	_, err := s.w.ExecContext(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL)`,
		t.ID, t.TenantID, t.Name, t.Hash, t.Admin, t.CreatedAt.UnixNano())
	if err != nil {
		return nil, s.dbErr("create token", err)
	}
	return &t, nil
}

// TokenByHash returns the unrevoked token with hash. A revoked or unknown
// token is ErrNotFound: callers answer both with 401.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*Token, error) {
	t, err := scanToken(s.r.QueryRowContext(ctx,
		`SELECT `+tokenCols+` FROM tokens WHERE hash = $1 AND revoked_at IS NULL`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errdefs.NotFoundf("token not found")
	}
	if err != nil {
		return nil, s.dbErr("token by hash", err)
	}
	return t, nil
}

// ListTokens returns the tenant's tokens, revoked ones included, oldest
// first.
func (s *Store) ListTokens(ctx context.Context, tenantID string) ([]*Token, error) {
	rows, err := s.r.QueryContext(ctx,
		`SELECT `+tokenCols+` FROM tokens WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID)
	if err != nil {
		return nil, s.dbErr("list tokens", err)
	}
	defer rows.Close()
	var ts []*Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, s.dbErr("list tokens", err)
		}
		ts = append(ts, t)
	}
	return ts, s.dbErr("list tokens", rows.Err())
}

// RevokeToken revokes the tenant's token id. Revoking a revoked token is a
// no-op; another tenant's token is ErrNotFound.
func (s *Store) RevokeToken(ctx context.Context, tenantID, id string) error {
	res, err := s.w.ExecContext(ctx,
		`UPDATE tokens SET revoked_at = $3 WHERE id = $1 AND tenant_id = $2 AND revoked_at IS NULL`,
		id, tenantID, s.now().UnixNano())
	if err != nil {
		return s.dbErr("revoke token", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var one int
	err = s.r.QueryRowContext(ctx, `SELECT 1 FROM tokens WHERE id = $1 AND tenant_id = $2`, id, tenantID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return errdefs.NotFoundf("token %q not found", id)
	}
	return s.dbErr("revoke token", err)
}

// TouchToken records that token id was just used. It writes only when the
// recorded time is more than a minute old, so calling it on every request
// is cheap. An unknown id is not an error.
func (s *Store) TouchToken(ctx context.Context, id string) error {
	now := s.now()
	// Skip the database entirely while this process touched id recently.
	if last, ok := s.touched.Load(id); ok && now.Sub(last.(time.Time)) < touchEvery {
		return nil
	}
	_, err := s.w.ExecContext(ctx,
		`UPDATE tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`,
		id, now.UnixNano(), now.Add(-touchEvery).UnixNano())
	if err != nil {
		return s.dbErr("touch token", err)
	}
	s.touched.Store(id, now)
	return nil
}
