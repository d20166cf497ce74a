package client

import (
	"context"
	"net/http"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// Health reports whether the daemon is up (GET /v1/health).
func (c *Client) Health(ctx context.Context) (*sandboxapi.Health, error) {
	var h sandboxapi.Health
	if err := c.call(ctx, http.MethodGet, "/health", nil, nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// Info describes the sandbox's resources: CPUs, memory and disk, and the
// number of running managed processes (GET /v1/info).
func (c *Client) Info(ctx context.Context) (*sandboxapi.Info, error) {
	var info sandboxapi.Info
	if err := c.call(ctx, http.MethodGet, "/info", nil, nil, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Ports lists the TCP ports listening inside the sandbox (GET /v1/ports).
func (c *Client) Ports(ctx context.Context) ([]sandboxapi.Port, error) {
	var list sandboxapi.PortList
	if err := c.call(ctx, http.MethodGet, "/ports", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Ports, nil
}
