package auth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
)

// maxName is the longest token name, in characters.
const maxName = 100

// tenantName is what a tenant created through Create may be called; the
// name is also its id.
var tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Create makes a token for by and returns it with its secret, the only
// time the secret is shown.
//
// A token acts for one tenant. Without Tenant and Admin in req it goes to
// by's own tenant, which anyone may do. Only an admin may set req.Admin, or
// req.Tenant to another tenant (named by id or name); a tenant that does
// not exist yet is created, with the name as its id. Anyone else asking
// for either gets ErrForbidden.
func (a *Authenticator) Create(ctx context.Context, by Principal, req cpapi.TokenRequest) (*cpapi.Token, error) {
	if by.TenantID == "" {
		return nil, errNoToken
	}
	if err := checkName(req.Name); err != nil {
		return nil, err
	}
	if req.Admin && !by.Admin {
		return nil, errdefs.Forbiddenf("only an admin token can create admin tokens")
	}
	tenantID := by.TenantID
	if req.Tenant != "" && req.Tenant != by.TenantID {
		if !by.Admin {
			own, err := a.st.GetTenant(ctx, by.TenantID)
			if err != nil {
				return nil, fmt.Errorf("auth: create token: %w", err)
			}
			if req.Tenant != own.Name {
				return nil, errdefs.Forbiddenf("only an admin token can create tokens for another tenant")
			}
		} else {
			t, err := a.tenant(ctx, req.Tenant)
			if err != nil {
				return nil, fmt.Errorf("auth: create token: %w", err)
			}
			tenantID = t.ID
		}
	}

	secret, hash := NewToken()
	tok, err := a.st.CreateToken(ctx, store.Token{TenantID: tenantID, Name: req.Name, Hash: hash, Admin: req.Admin})
	if err != nil {
		return nil, fmt.Errorf("auth: create token: %w", err)
	}
	a.cache.forgetHash(hash)
	out := apiToken(tok)
	out.Secret = secret
	return &out, nil
}

// List returns the valid tokens of by's tenant, oldest first, without
// their secrets.
func (a *Authenticator) List(ctx context.Context, by Principal) (*cpapi.TokenList, error) {
	if by.TenantID == "" {
		return nil, errNoToken
	}
	toks, err := a.st.ListTokens(ctx, by.TenantID)
	if err != nil {
		return nil, fmt.Errorf("auth: list tokens: %w", err)
	}
	list := &cpapi.TokenList{Tokens: []cpapi.Token{}}
	for _, t := range toks {
		if t.RevokedAt.IsZero() {
			list.Tokens = append(list.Tokens, apiToken(t))
		}
	}
	return list, nil
}

// Revoke revokes token id of by's tenant; this Authenticator rejects it
// from now on, other replicas within their cache TTL. Another tenant's
// token is ErrNotFound, like a token that does not exist; revoking a
// revoked token is not an error.
func (a *Authenticator) Revoke(ctx context.Context, by Principal, id string) error {
	if by.TenantID == "" {
		return errNoToken
	}
	if err := a.st.RevokeToken(ctx, by.TenantID, id); err != nil {
		return fmt.Errorf("auth: revoke token: %w", err)
	}
	a.cache.forgetToken(id)
	return nil
}

// tenant returns the tenant with id or name ref, creating it (with ref as
// both) if there is none.
func (a *Authenticator) tenant(ctx context.Context, ref string) (*store.Tenant, error) {
	t, err := a.st.GetTenant(ctx, ref)
	if !errors.Is(err, errdefs.ErrNotFound) {
		return t, err
	}
	all, err := a.st.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range all {
		if t.Name == ref {
			return t, nil
		}
	}
	if !tenantName.MatchString(ref) {
		return nil, errdefs.Invalidf("tenant name %q must be 1-63 lowercase letters, digits, '_' or '-'", ref)
	}
	t, err = a.st.CreateTenant(ctx, a.newTenants.tenant(ref))
	if errors.Is(err, errdefs.ErrConflict) { // created meanwhile, by another request
		return a.st.GetTenant(ctx, ref)
	}
	return t, err
}

func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errdefs.Invalidf("token name is required")
	case !utf8.ValidString(name) || strings.ContainsFunc(name, isControl):
		return errdefs.Invalidf("token name must be UTF-8 text without control characters")
	case utf8.RuneCountInString(name) > maxName || len(name) > 2*maxName:
		return errdefs.Invalidf("token name must be at most %d characters", maxName)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// apiToken converts a stored token; the secret is not part of it.
func apiToken(t *store.Token) cpapi.Token {
	out := cpapi.Token{ID: t.ID, Name: t.Name, Tenant: t.TenantID, Admin: t.Admin, CreatedAt: t.CreatedAt}
	if !t.LastUsedAt.IsZero() {
		used := t.LastUsedAt
		out.LastUsedAt = &used
	}
	return out
}
