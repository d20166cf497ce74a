// Package client is the Go SDK for both of Corral's APIs.
//
// Client speaks the sandbox daemon API (`corral sandboxd`, DESIGN.md §2):
// processes and terminals, their output over WebSocket with lossless
// reconnection, lifecycle events over SSE, one-shot exec, files and system
// information — to a daemon directly, or to any sandbox through the
// control plane's proxy (ControlPlane.Sandbox).
//
// ControlPlane speaks the control plane API (`corral up`, DESIGN.md §3):
// jobs and their event logs (resuming after a dropped connection),
// artifacts and diffs, sandboxes, tokens.
//
// A Client is safe for concurrent use. Every call takes a context first;
// long-lived results (a Stream, an EventStream, a file body) live until
// they are closed or their context ends.
//
// Errors the daemon reports arrive as *APIError, which errors.Is matches
// against the class sentinels (ErrNotFound, ErrConflict, ...):
//
//	p, err := c.GetProcess(ctx, "main-terminal")
//	if errors.Is(err, client.ErrNotFound) { ... }
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Client talks to one sandbox daemon.
type Client struct {
	// base is the scheme and host; prefix the path every API route hangs
	// under ("/v1" for a daemon, or a proxy path such as the control
	// plane's "/v1/sandboxes/{id}").
	base   *url.URL
	prefix string
	token  string
	hc     *http.Client
	socket string // unix socket path, empty for TCP
	// origin names the server in error messages: "sandboxd", or "control
	// plane" for a ControlPlane's client.
	origin string
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as a bearer token on every request, WebSocket and
// SSE included.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient makes the Client use hc for every request. hc must reach
// the daemon: with a "unix:" base URL its transport has to dial the socket
// itself. hc.Timeout should be zero, since it would also cut off streams;
// use contexts for deadlines instead.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a Client for the daemon at baseURL: "http://host:port", or
// "unix:/path/to/sandboxd.sock". A base URL with a path (for example
// "http://127.0.0.1:7070/v1/sandboxes/sb_1", the control plane's proxy)
// uses that path instead of "/v1" as the prefix of every route.
func New(baseURL string, opts ...Option) (*Client, error) {
	return newClient(baseURL, "/v1", originSandboxd, opts)
}

// Names of the servers, as error messages give them.
const (
	originSandboxd     = "sandboxd"
	originControlPlane = "control plane"
)

// newClient parses baseURL as New describes; a base URL without a path
// gets defaultPrefix.
func newClient(baseURL, defaultPrefix, origin string, opts []Option) (*Client, error) {
	c := &Client{origin: origin}
	if path, ok := strings.CutPrefix(baseURL, "unix:"); ok {
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return nil, fmt.Errorf("client: base URL %q: empty socket path", baseURL)
		}
		c.socket = path
		c.base = &url.URL{Scheme: "http", Host: "sandboxd"}
		c.prefix = defaultPrefix
	} else {
		u, err := url.Parse(baseURL)
		if err != nil {
			return nil, fmt.Errorf("client: base URL %q: %w", baseURL, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("client: base URL %q: want http://host:port, https://host or unix:/path", baseURL)
		}
		c.base = &url.URL{Scheme: u.Scheme, Host: u.Host}
		c.prefix = strings.TrimSuffix(u.EscapedPath(), "/")
		if c.prefix == "" {
			c.prefix = defaultPrefix
		}
	}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: c.defaultTransport()}
	}
	return c, nil
}

// defaultTransport is a fresh transport, dialing the unix socket when
// there is one.
func (c *Client) defaultTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	if c.socket != "" {
		socket := c.socket
		tr.Proxy = nil
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
	}
	return tr
}

// endpoint returns the absolute URL of an API route: route is the part
// after the prefix ("/processes/p_1/output"), with any dynamic segment
// already escaped, so a "/" inside a ref stays "%2F".
func (c *Client) endpoint(route string, query url.Values) string {
	s := c.base.String() + c.prefix + route
	if len(query) > 0 {
		s += "?" + query.Encode()
	}
	return s
}

// processPath is the escaped route of one process, plus a sub-path.
func processPath(ref, sub string) string {
	return "/processes/" + url.PathEscape(ref) + sub
}

func (c *Client) authHeader(h http.Header) {
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
}

// newRequest builds a request for an absolute URL, with the token.
func (c *Client) newRequest(ctx context.Context, method, rawURL string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, rawURL, err)
	}
	c.authHeader(req.Header)
	return req, nil
}

// do sends req and turns any status of 300 or more into an *APIError, in
// which case the body is already closed.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, parseError(c.origin, req.Method, req.URL.Path, resp)
	}
	return resp, nil
}

// call sends a JSON request (in may be nil) to a route and
// decodes a JSON answer into out (out may be nil, for 204s).
func (c *Client) call(ctx context.Context, method, route string, query url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: %s %s: encode request: %w", method, route, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := c.newRequest(ctx, method, c.endpoint(route, query), body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: decode response: %w", method, req.URL.Path, err)
	}
	return nil
}
