package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/corral-sh/corral/api/cpapi"
)

func sandboxPath(id, sub string) string { return "/v1/sandboxes/" + url.PathEscape(id) + sub }

// CreateSandbox creates a sandbox (POST /v1/sandboxes) and returns it once
// its daemon answers. Use Sandbox(id) to work in it.
func (cp *ControlPlane) CreateSandbox(ctx context.Context, req cpapi.SandboxRequest) (*cpapi.Sandbox, error) {
	var sb cpapi.Sandbox
	if err := cp.c.call(ctx, http.MethodPost, "/v1/sandboxes", nil, req, &sb); err != nil {
		return nil, err
	}
	return &sb, nil
}

// ListSandboxes lists the tenant's sandboxes.
func (cp *ControlPlane) ListSandboxes(ctx context.Context) ([]cpapi.Sandbox, error) {
	var list cpapi.SandboxList
	if err := cp.c.call(ctx, http.MethodGet, "/v1/sandboxes", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Sandboxes, nil
}

// GetSandbox returns one sandbox.
func (cp *ControlPlane) GetSandbox(ctx context.Context, id string) (*cpapi.Sandbox, error) {
	var sb cpapi.Sandbox
	if err := cp.c.call(ctx, http.MethodGet, sandboxPath(id, ""), nil, nil, &sb); err != nil {
		return nil, err
	}
	return &sb, nil
}

// DeleteSandbox deletes a sandbox and everything running in it.
func (cp *ControlPlane) DeleteSandbox(ctx context.Context, id string) error {
	return cp.c.call(ctx, http.MethodDelete, sandboxPath(id, ""), nil, nil, nil)
}

// ExtendSandbox makes the sandbox live timeoutS seconds from now, and
// returns it with its new expiry.
func (cp *ControlPlane) ExtendSandbox(ctx context.Context, id string, timeoutS int64) (*cpapi.Sandbox, error) {
	var sb cpapi.Sandbox
	if err := cp.c.call(ctx, http.MethodPost, sandboxPath(id, "/timeout"), nil, cpapi.TimeoutRequest{TimeoutS: timeoutS}, &sb); err != nil {
		return nil, err
	}
	return &sb, nil
}
