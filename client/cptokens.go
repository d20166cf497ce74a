package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/corral-sh/corral/api/cpapi"
)

// CreateToken creates an API token. The answer's Secret is the token
// itself, shown this once. Admin and Tenant need an admin caller.
func (cp *ControlPlane) CreateToken(ctx context.Context, req cpapi.TokenRequest) (*cpapi.Token, error) {
	var tok cpapi.Token
	if err := cp.c.call(ctx, http.MethodPost, "/v1/tokens", nil, req, &tok); err != nil {
		return nil, err
	}
	return &tok, nil
}

// ListTokens lists the tenant's tokens, without their secrets.
func (cp *ControlPlane) ListTokens(ctx context.Context) ([]cpapi.Token, error) {
	var list cpapi.TokenList
	if err := cp.c.call(ctx, http.MethodGet, "/v1/tokens", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Tokens, nil
}

// RevokeToken revokes a token by id: requests bearing it fail with
// ErrUnauthorized from then on.
func (cp *ControlPlane) RevokeToken(ctx context.Context, id string) error {
	return cp.c.call(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), nil, nil, nil)
}
