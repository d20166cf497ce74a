package client

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/coder/websocket"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// The sandbox's virtual desktop (/v1/desktop/*): a sandbox made from the
// desktop template has one; in others these calls fail with ErrNotFound.
// Until StartDesktop, the calls that need a running desktop fail with
// ErrConflict.

// maxDesktopScreenshot bounds the PNG a Screenshot reads.
const maxDesktopScreenshot = 256 << 20

// StartDesktop starts the virtual display, its window manager and VNC
// server, or finds them running (POST /v1/desktop/start). Zero fields of
// req take the daemon's defaults (1280×800, depth 24); asking a running
// desktop for another size is ErrConflict.
func (c *Client) StartDesktop(ctx context.Context, req sandboxapi.DesktopStartRequest) (*sandboxapi.DesktopStatus, error) {
	var st sandboxapi.DesktopStatus
	if err := c.call(ctx, http.MethodPost, "/desktop/start", nil, req, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// StopDesktop stops the desktop and returns once its processes have
// exited (POST /v1/desktop/stop). Stopping a stopped desktop is no error.
func (c *Client) StopDesktop(ctx context.Context) error {
	return c.call(ctx, http.MethodPost, "/desktop/stop", nil, nil, nil)
}

// DesktopStatus describes the desktop (GET /v1/desktop/status);
// ErrNotFound when the sandbox has none.
func (c *Client) DesktopStatus(ctx context.Context) (*sandboxapi.DesktopStatus, error) {
	var st sandboxapi.DesktopStatus
	if err := c.call(ctx, http.MethodGet, "/desktop/status", nil, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// ScreenshotOptions choose the part of the screen and the image's scale.
// Zero values take the whole screen at scale 1.
type ScreenshotOptions struct {
	X, Y, Width, Height int
	// Scale resizes the image: 0.5 halves each side (at most 4).
	Scale float64
}

// DesktopScreenshot returns a PNG of the screen (GET /v1/desktop/screenshot).
func (c *Client) DesktopScreenshot(ctx context.Context, opts ScreenshotOptions) ([]byte, error) {
	q := url.Values{}
	for _, p := range []struct {
		name string
		v    int
	}{{"x", opts.X}, {"y", opts.Y}, {"w", opts.Width}, {"h", opts.Height}} {
		if p.v != 0 {
			q.Set(p.name, strconv.Itoa(p.v))
		}
	}
	if opts.Scale != 0 {
		q.Set("scale", strconv.FormatFloat(opts.Scale, 'g', -1, 64))
	}
	req, err := c.newRequest(ctx, http.MethodGet, c.endpoint("/desktop/screenshot", q), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "image/png")
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	png, err := io.ReadAll(io.LimitReader(resp.Body, maxDesktopScreenshot+1))
	if err != nil {
		return nil, fmt.Errorf("client: screenshot: %w", err)
	}
	if len(png) > maxDesktopScreenshot {
		return nil, fmt.Errorf("client: screenshot: over %d bytes", maxDesktopScreenshot)
	}
	return png, nil
}

// DesktopAction performs one computer-use action — a key, typing, a
// click, a drag, a scroll, a wait — and returns the pointer position
// after it (POST /v1/desktop/action). The sandboxapi.Action* constants
// name the actions and the fields each takes.
func (c *Client) DesktopAction(ctx context.Context, a sandboxapi.DesktopAction) (*sandboxapi.DesktopActionResult, error) {
	var res sandboxapi.DesktopActionResult
	if err := c.call(ctx, http.MethodPost, "/desktop/action", nil, a, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// DesktopWindows lists the desktop's top-level windows, bottom of the
// stack first (GET /v1/desktop/windows).
func (c *Client) DesktopWindows(ctx context.Context) ([]sandboxapi.DesktopWindow, error) {
	var list sandboxapi.DesktopWindowList
	if err := c.call(ctx, http.MethodGet, "/desktop/windows", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Windows, nil
}

// DialVNC connects to the desktop's VNC server through the daemon's
// WebSocket bridge (GET /v1/desktop/vnc) and returns the connection as a
// net.Conn carrying the RFB protocol. It lives until it is closed or ctx
// ends.
func (c *Client) DialVNC(ctx context.Context) (net.Conn, error) {
	h := http.Header{}
	c.authHeader(h)
	conn, resp, err := websocket.Dial(ctx, c.endpoint("/desktop/vnc", nil), &websocket.DialOptions{
		HTTPClient:   c.hc,
		HTTPHeader:   h,
		Subprotocols: []string{"binary"},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, parseError(c.origin, http.MethodGet, c.prefix+"/desktop/vnc", resp)
		}
		return nil, fmt.Errorf("client: vnc: %w", err)
	}
	conn.SetReadLimit(1 << 20)
	return websocket.NetConn(ctx, conn, websocket.MessageBinary), nil
}

// NoVNCURL is the address of the desktop's noVNC page, for a browser: it
// connects to the desktop at once and lets a person watch and take over.
// It carries the client's token (as access_token), so treat it as a
// secret. Over a unix socket it names the host "sandboxd", which no
// browser reaches.
func (c *Client) NoVNCURL() string {
	q := url.Values{}
	if c.token != "" {
		q.Set("access_token", c.token)
	}
	return c.endpoint("/desktop/novnc/vnc.html", q)
}
