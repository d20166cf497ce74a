package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// CreateForward makes the daemon listen on 127.0.0.1:req.ListenPort inside
// the sandbox (0: a free port, reported in the answer) and pipe each
// connection to the unix socket req.Socket in the sandbox's socket
// directory (POST /v1/forwards).
func (c *Client) CreateForward(ctx context.Context, req sandboxapi.ForwardRequest) (*sandboxapi.Forward, error) {
	var f sandboxapi.Forward
	if err := c.call(ctx, http.MethodPost, "/forwards", nil, req, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// ListForwards lists the forwards, oldest first (GET /v1/forwards).
func (c *Client) ListForwards(ctx context.Context) ([]sandboxapi.Forward, error) {
	var list sandboxapi.ForwardList
	if err := c.call(ctx, http.MethodGet, "/forwards", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Forwards, nil
}

// DeleteForward stops forward id: its listener closes and its open
// connections are cut (DELETE /v1/forwards/{id}).
func (c *Client) DeleteForward(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/forwards/"+url.PathEscape(id), nil, nil, nil)
}
