package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// The sandbox's browser (/v1/browser/*): one Chromium per sandbox, started
// on first use, with tabs that persist across calls. Each method names a
// tab by the id OpenTab returned.

// maxScreenshot bounds a screenshot read by Screenshot.
const maxScreenshot = 256 << 20

// Browser describes the sandbox's browser (GET /v1/browser); ErrNotFound
// when the sandbox has none.
func (c *Client) Browser(ctx context.Context) (*sandboxapi.Browser, error) {
	var b sandboxapi.Browser
	if err := c.call(ctx, http.MethodGet, "/browser", nil, nil, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// StartBrowser starts the browser, or returns the running one
// (POST /v1/browser/start). ErrConflict when it runs in another mode.
func (c *Client) StartBrowser(ctx context.Context, req sandboxapi.BrowserStartRequest) (*sandboxapi.Browser, error) {
	var b sandboxapi.Browser
	if err := c.call(ctx, http.MethodPost, "/browser/start", nil, req, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// StopBrowser stops the browser and closes every tab (POST
// /v1/browser/stop); a browser that is not running is not an error.
func (c *Client) StopBrowser(ctx context.Context) error {
	return c.call(ctx, http.MethodPost, "/browser/stop", nil, nil, nil)
}

func tabPath(id, sub string) string { return "/browser/tabs/" + url.PathEscape(id) + sub }

// OpenTab opens a tab, starting the browser if needed, and loads req.URL
// if set (POST /v1/browser/tabs).
func (c *Client) OpenTab(ctx context.Context, req sandboxapi.TabRequest) (*sandboxapi.Tab, error) {
	var t sandboxapi.Tab
	if err := c.call(ctx, http.MethodPost, "/browser/tabs", nil, req, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Tabs lists the open tabs (GET /v1/browser/tabs).
func (c *Client) Tabs(ctx context.Context) ([]sandboxapi.Tab, error) {
	var l sandboxapi.TabList
	if err := c.call(ctx, http.MethodGet, "/browser/tabs", nil, nil, &l); err != nil {
		return nil, err
	}
	return l.Tabs, nil
}

// GetTab describes one tab (GET /v1/browser/tabs/{id}).
func (c *Client) GetTab(ctx context.Context, id string) (*sandboxapi.Tab, error) {
	return c.tabCall(ctx, http.MethodGet, id, "", nil)
}

// CloseTab closes a tab (DELETE /v1/browser/tabs/{id}).
func (c *Client) CloseTab(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, tabPath(id, ""), nil, nil, nil)
}

// TabNavigate loads a URL in a tab and waits as req.Wait says.
func (c *Client) TabNavigate(ctx context.Context, id string, req sandboxapi.NavigateRequest) (*sandboxapi.Tab, error) {
	return c.tabCall(ctx, http.MethodPost, id, "/navigate", req)
}

// TabClick clicks an element, by CSS selector or accessibility node id.
func (c *Client) TabClick(ctx context.Context, id string, req sandboxapi.ClickRequest) (*sandboxapi.Tab, error) {
	return c.tabCall(ctx, http.MethodPost, id, "/click", req)
}

// TabType types text into an element, optionally clearing it first and
// pressing Enter after.
func (c *Client) TabType(ctx context.Context, id string, req sandboxapi.TypeRequest) (*sandboxapi.Tab, error) {
	return c.tabCall(ctx, http.MethodPost, id, "/type", req)
}

// TabWait waits for a selector to match and/or for the network to go idle.
func (c *Client) TabWait(ctx context.Context, id string, req sandboxapi.WaitRequest) (*sandboxapi.Tab, error) {
	return c.tabCall(ctx, http.MethodPost, id, "/wait", req)
}

func (c *Client) tabCall(ctx context.Context, method, id, sub string, in any) (*sandboxapi.Tab, error) {
	var t sandboxapi.Tab
	if err := c.call(ctx, method, tabPath(id, sub), nil, in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TabText reads a tab's rendered text; maxBytes 0 takes the daemon's
// default (1 MiB).
func (c *Client) TabText(ctx context.Context, id string, maxBytes int) (*sandboxapi.PageText, error) {
	q := url.Values{}
	if maxBytes > 0 {
		q.Set("max_bytes", strconv.Itoa(maxBytes))
	}
	var t sandboxapi.PageText
	if err := c.call(ctx, http.MethodGet, tabPath(id, "/text"), q, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TabAXTree reads a tab's accessibility tree; maxNodes 0 takes the
// daemon's default (5000). Its node ids are valid for TabClick and TabType.
func (c *Client) TabAXTree(ctx context.Context, id string, maxNodes int) (*sandboxapi.AXTree, error) {
	q := url.Values{}
	if maxNodes > 0 {
		q.Set("max_nodes", strconv.Itoa(maxNodes))
	}
	var t sandboxapi.AXTree
	if err := c.call(ctx, http.MethodGet, tabPath(id, "/ax"), q, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TabEval evaluates JavaScript in a tab. An exception is an *APIError of
// class ErrUnprocessable whose Detail is the exception.
func (c *Client) TabEval(ctx context.Context, id string, req sandboxapi.EvalRequest) (*sandboxapi.EvalResult, error) {
	var r sandboxapi.EvalResult
	if err := c.call(ctx, http.MethodPost, tabPath(id, "/eval"), nil, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// TabScreenshot returns a PNG of a tab's viewport, or of the whole page.
func (c *Client) TabScreenshot(ctx context.Context, id string, fullPage bool) ([]byte, error) {
	q := url.Values{}
	if fullPage {
		q.Set("full_page", "true")
	}
	req, err := c.newRequest(ctx, http.MethodGet, c.endpoint(tabPath(id, "/screenshot"), q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxScreenshot+1))
	if err != nil {
		return nil, fmt.Errorf("client: screenshot: %w", err)
	}
	if len(b) > maxScreenshot {
		return nil, fmt.Errorf("client: screenshot: over %d bytes", maxScreenshot)
	}
	return b, nil
}
