package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/corral-sh/corral/api/cpapi"
)

// ListTenants lists every tenant with its limits; it needs an admin token.
func (cp *ControlPlane) ListTenants(ctx context.Context) ([]cpapi.Tenant, error) {
	var list cpapi.TenantList
	if err := cp.c.call(ctx, http.MethodGet, "/v1/tenants", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Tenants, nil
}

// GetTenant returns a tenant with its limits: the caller's own, or any
// for an admin.
func (cp *ControlPlane) GetTenant(ctx context.Context, id string) (*cpapi.Tenant, error) {
	var t cpapi.Tenant
	if err := cp.c.call(ctx, http.MethodGet, "/v1/tenants/"+url.PathEscape(id), nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// SetTenantLimits changes the limits of tenant id that limits names (an
// absent one is kept, 0 lifts it); it needs an admin token.
func (cp *ControlPlane) SetTenantLimits(ctx context.Context, id string, limits cpapi.TenantLimits) (*cpapi.Tenant, error) {
	var t cpapi.Tenant
	if err := cp.c.call(ctx, http.MethodPatch, "/v1/tenants/"+url.PathEscape(id), nil, limits, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
