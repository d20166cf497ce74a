package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/corral-sh/corral/api/cpapi"
)

func secretPath(name string) string { return "/v1/secrets/" + url.PathEscape(name) }

// SetSecret stores value as the tenant's secret name, creating it or
// replacing its value; created tells which. Jobs name secrets to receive
// them (JobRequest.Secrets, Repo.Secret); the API never returns a value.
// A bad name or value (over 64 KiB, NUL bytes) is ErrInvalid.
func (cp *ControlPlane) SetSecret(ctx context.Context, name, value string) (sec *cpapi.Secret, created bool, err error) {
	body, err := json.Marshal(cpapi.SecretRequest{Value: value})
	if err != nil {
		return nil, false, fmt.Errorf("client: set secret %q: encode request: %w", name, err)
	}
	req, err := cp.c.newRequest(ctx, http.MethodPut, cp.c.endpoint(secretPath(name), nil), bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := cp.c.do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	var s cpapi.Secret
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, false, fmt.Errorf("client: set secret %q: decode response: %w", name, err)
	}
	return &s, resp.StatusCode == http.StatusCreated, nil
}

// ListSecrets lists the tenant's secrets by name: names and times, never
// values.
func (cp *ControlPlane) ListSecrets(ctx context.Context) ([]cpapi.Secret, error) {
	var list cpapi.SecretList
	if err := cp.c.call(ctx, http.MethodGet, "/v1/secrets", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Secrets, nil
}

// DeleteSecret deletes the tenant's secret name; ErrNotFound if there is
// none.
func (cp *ControlPlane) DeleteSecret(ctx context.Context, name string) error {
	return cp.c.call(ctx, http.MethodDelete, secretPath(name), nil, nil, nil)
}
