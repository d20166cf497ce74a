package sandboxd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
	"github.com/corral-sh/corral/internal/testenv"
)

// desktopDaemon starts a daemon with a token whose desktop can run here:
// Xvfb (and the tools the test names) installed, a fresh HOME for the
// window manager's settings.
func desktopDaemon(t testing.TB, programs ...string) (*sandboxdtest.Daemon, *client.Client) {
	t.Helper()
	for _, p := range append([]string{"Xvfb"}, programs...) {
		if _, err := exec.LookPath(p); err != nil {
			testenv.Unavailable(t, "%s is not installed (scripts/deps.sh installs it)", p)
		}
	}
	t.Setenv("HOME", t.TempDir())
	d := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{Token: "desktop-token"}})
	c, err := client.New(d.URL, client.WithToken(d.Token))
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

func desktopAPI(t *testing.T, programs ...string) (*api, *client.Client) {
	d, c := desktopDaemon(t, programs...)
	return &api{t: t, d: d}, c
}

// desktopProblem checks a problem+json answer: its status, and a detail
// containing detail.
func desktopProblem(t *testing.T, what string, resp *http.Response, body []byte, status int, detail string) {
	t.Helper()
	var p struct {
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != problem.ContentType ||
		json.Unmarshal(body, &p) != nil || p.Status != status || !strings.Contains(p.Detail, detail) {
		t.Errorf("%s = %d %s %s; want %d problem+json with %q", what, resp.StatusCode, resp.Header.Get("Content-Type"), body, status, detail)
	}
}

func TestDesktopHTTP(t *testing.T) {
	a, c := desktopAPI(t)
	ctx := context.Background()

	resp, body := a.do("GET", "/v1/desktop/status", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"running":false`) {
		t.Fatalf("status before start = %d %s; want 200 running false", resp.StatusCode, body)
	}
	resp, body = a.do("GET", "/v1/desktop/screenshot", nil)
	desktopProblem(t, "screenshot before start", resp, body, 409, "not running")
	resp, body = a.do("POST", "/v1/desktop/action", `{"action":"cursor_position"}`)
	desktopProblem(t, "action before start", resp, body, 409, "not running")

	// Start: 201, then 200 for the same or an empty request, 409 for
	// another size; bad bodies are 400.
	resp, body = a.do("POST", "/v1/desktop/start", `{"width":800,"height":600}`)
	var st sandboxapi.DesktopStatus
	if resp.StatusCode != 201 || json.Unmarshal(body, &st) != nil || !st.Running || st.Width != 800 || st.Display == "" {
		t.Fatalf("start = %d %s; want 201 running 800x600", resp.StatusCode, body)
	}
	if resp, body = a.do("POST", "/v1/desktop/start", nil); resp.StatusCode != 200 || !strings.Contains(string(body), `"display":"`+st.Display+`"`) {
		t.Errorf("start again (empty body) = %d %s; want 200, the same display", resp.StatusCode, body)
	}
	resp, body = a.do("POST", "/v1/desktop/start", `{"width":1024}`)
	desktopProblem(t, "start at another size", resp, body, 409, "stop it first")
	for _, bad := range []string{`{"width":"wide"}`, `{"colour":1}`, `{"depth":8}`, `[1]`, `{"width":1}{}`} {
		resp, body = a.do("POST", "/v1/desktop/start", bad)
		desktopProblem(t, "start "+bad, resp, body, 400, "")
	}
	if got, err := c.DesktopStatus(ctx); err != nil || !got.Running || got.Display != st.Display || got.VNC != st.VNC {
		t.Errorf("DesktopStatus() = %+v, %v; want %+v", got, err, st)
	}

	// Screenshots: PNGs of the asked size; bad queries are problems.
	for _, tt := range []struct {
		query string
		w, h  int
	}{{"", 800, 600}, {"?x=100&y=50&w=200&h=100", 200, 100}, {"?scale=0.5", 400, 300}, {"?x=700&y=500&scale=2", 200, 200}} {
		resp, body = a.do("GET", "/v1/desktop/screenshot"+tt.query, nil)
		img, err := png.Decode(bytes.NewReader(body))
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || err != nil ||
			img.Bounds().Dx() != tt.w || img.Bounds().Dy() != tt.h || resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
			t.Errorf("screenshot%s = %d %s, %v; want a %dx%d PNG", tt.query, resp.StatusCode, resp.Header.Get("Content-Type"), err, tt.w, tt.h)
		}
	}
	for _, tt := range []struct {
		query  string
		status int
		detail string
	}{
		{"?x=abc", 400, "x must be a whole number"},
		{"?w=1.5", 400, "w must be a whole number"},
		{"?scale=big", 400, "scale must be a number"},
		{"?scale=0", 200, ""},
		{"?scale=-1", 400, "scale must be more than 0"},
		{"?scale=100", 400, "at most 4"},
		{"?x=-5", 400, "negative"},
		{"?x=790&w=20", 422, "not inside the 800x600 screen"},
		{"?y=600", 422, "not inside"},
	} {
		resp, body = a.do("GET", "/v1/desktop/screenshot"+tt.query, nil)
		if tt.status == 200 {
			if resp.StatusCode != 200 {
				t.Errorf("screenshot%s = %d %s; want 200", tt.query, resp.StatusCode, body)
			}
			continue
		}
		desktopProblem(t, "screenshot"+tt.query, resp, body, tt.status, tt.detail)
	}
	png, err := c.DesktopScreenshot(ctx, client.ScreenshotOptions{Width: 10, Height: 20, Scale: 2})
	if img, derr := pngDecode(png); err != nil || derr != nil || img.w != 20 || img.h != 40 {
		t.Errorf("Screenshot(10x20, scale 2) = %v %v, %v; want 20x40", img, err, derr)
	}

	// Actions: the cursor comes back; bad input is a clear problem.
	res, err := c.DesktopAction(ctx, sandboxapi.DesktopAction{Action: sandboxapi.ActionMouseMove, Coordinate: []int{123, 45}})
	if err != nil || !res.OK || res.Cursor != [2]int{123, 45} {
		t.Errorf("mouse_move = %+v, %v; want ok at [123 45]", res, err)
	}
	resp, body = a.do("POST", "/v1/desktop/action", `{"action":"left_click","coordinate":[10,10]}`)
	if resp.StatusCode != 200 || string(bytes.TrimSpace(body)) != `{"ok":true,"cursor":[10,10]}` {
		t.Errorf("left_click = %d %s", resp.StatusCode, body)
	}
	for _, tt := range []struct {
		body   string
		status int
		detail string
	}{
		{`{"action":"fly"}`, 400, `unknown action "fly"`},
		{`{}`, 400, "action is required"},
		{`{"action":"mouse_move"}`, 400, "needs coordinate"},
		{`{"action":"mouse_move","coordinate":[800,10]}`, 422, "outside the 800x600 screen"},
		{`{"action":"mouse_move","coordinate":[1,2,3]}`, 400, "[x, y]"},
		{`{"action":"mouse_move","coordinate":"here"}`, 400, `"coordinate"`},
		{`{"action":"left_click","speed":3}`, 400, "unknown field"},
		{`{"action":"type","text":"` + strings.Repeat("x", 5000) + `"}`, 413, "at most 4096"},
		{`{"action":"wait","duration":600}`, 400, "at most 30"},
		{`{"action":"key","key":"-h"}`, 400, "not a key name"},
		{`{"action":"scroll","scroll_direction":"sideways"}`, 400, "up, down, left or right"},
		{`{"action":"type","text":"` + strings.Repeat("x", 70000) + `"}`, 413, "exceeds"},
		{`not json`, 400, "malformed JSON"},
	} {
		resp, body = a.do("POST", "/v1/desktop/action", tt.body)
		name := tt.body
		if len(name) > 60 {
			name = name[:60] + "..."
		}
		desktopProblem(t, "action "+name, resp, body, tt.status, tt.detail)
	}

	if list, err := c.DesktopWindows(ctx); err != nil || list == nil {
		t.Errorf("DesktopWindows() = %v, %v; want a list", list, err)
	}
	if resp, body = a.do("GET", "/v1/desktop/windows", nil); resp.StatusCode != 200 || !strings.HasPrefix(string(body), `{"windows":[`) {
		t.Errorf("windows = %d %s", resp.StatusCode, body)
	}

	// Stop: 204, twice; then the desktop is gone.
	for range 2 {
		if resp, body = a.do("POST", "/v1/desktop/stop", nil); resp.StatusCode != 204 {
			t.Errorf("stop = %d %s; want 204", resp.StatusCode, body)
		}
	}
	resp, body = a.do("POST", "/v1/desktop/action", `{"action":"cursor_position"}`)
	desktopProblem(t, "action after stop", resp, body, 409, "not running")
	resp, body = a.do("GET", "/v1/desktop/vnc", nil)
	desktopProblem(t, "vnc after stop", resp, body, 409, "not running")
	if _, err := c.DialVNC(ctx); !errors.Is(err, client.ErrConflict) {
		t.Errorf("DialVNC() after stop = %v; want ErrConflict", err)
	}
}

type pngSize struct{ w, h int }

func pngDecode(b []byte) (pngSize, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return pngSize{}, err
	}
	return pngSize{img.Bounds().Dx(), img.Bounds().Dy()}, nil
}

// TestDesktopNotInstalled: a sandbox without Xvfb has no desktop, and
// every route says so with 404.
func TestDesktopNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	a := newAPI(t)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/desktop/status", ""},
		{"POST", "/v1/desktop/start", "{}"},
		{"POST", "/v1/desktop/stop", ""},
		{"GET", "/v1/desktop/screenshot", ""},
		{"POST", "/v1/desktop/action", `{"action":"cursor_position"}`},
		{"GET", "/v1/desktop/windows", ""},
		{"GET", "/v1/desktop/vnc", ""},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		resp, data := a.do(r.method, r.path, body)
		desktopProblem(t, r.method+" "+r.path, resp, data, 404, "Xvfb is not installed")
	}
}

// TestDesktopVNCWebSocket speaks RFB through the WebSocket bridge, the way
// noVNC does: the token as ?access_token=, the "binary" subprotocol.
func TestDesktopVNCWebSocket(t *testing.T) {
	a, c := desktopAPI(t, "x11vnc")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.StartDesktop(ctx, sandboxapi.DesktopStartRequest{Width: 320, Height: 240}); err != nil {
		t.Fatal(err)
	}

	url := strings.Replace(a.d.URL, "http", "ws", 1) + "/v1/desktop/vnc?access_token=" + a.d.Token
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	if resp.Header.Get("Sec-WebSocket-Protocol") != "binary" {
		t.Errorf("subprotocol %q; want binary", resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	conn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	rfbHandshake(t, conn)
	conn.Close()

	// The SDK's net.Conn, while a second viewer is connected (-shared).
	v1, err := c.DialVNC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	rfbHandshake(t, v1)
	v2, err := c.DialVNC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rfbHandshake(t, v2)

	// Stopping the desktop ends the bridged connections.
	if err := c.StopDesktop(ctx); err != nil {
		t.Fatal(err)
	}
	v2.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, v2); err != nil {
		t.Errorf("after stop, the VNC connection ended with %v; want a clean close", err)
	}

	// No token, no VNC.
	_, resp, err = websocket.Dial(ctx, strings.Replace(a.d.URL, "http", "ws", 1)+"/v1/desktop/vnc", nil)
	if err == nil || resp == nil || resp.StatusCode != 401 {
		t.Errorf("dial without a token: %v, %v; want 401", resp, err)
	}
}

// rfbHandshake reads the server's protocol version, answers it, and reads
// the security types (x11vnc -nopw offers None, type 1).
func rfbHandshake(t *testing.T, conn io.ReadWriter) {
	t.Helper()
	version := make([]byte, 12)
	if _, err := io.ReadFull(conn, version); err != nil || !strings.HasPrefix(string(version), "RFB 003.00") {
		t.Fatalf("server version %q, %v; want RFB 003.00x", version, err)
	}
	if _, err := conn.Write([]byte("RFB 003.008\n")); err != nil {
		t.Fatal(err)
	}
	n := make([]byte, 1)
	if _, err := io.ReadFull(conn, n); err != nil {
		t.Fatalf("security types: %v", err)
	}
	if n[0] == 0 { // refused; the reason follows
		var size [4]byte
		io.ReadFull(conn, size[:])
		reason := make([]byte, min(int(size[0])<<24|int(size[1])<<16|int(size[2])<<8|int(size[3]), 1024))
		io.ReadFull(conn, reason)
		t.Fatalf("the VNC server refused the connection: %q", reason)
	}
	types := make([]byte, n[0])
	if _, err := io.ReadFull(conn, types); err != nil || !bytes.Contains(types, []byte{1}) {
		t.Fatalf("security types %v, %v; want None (1) among them", types, err)
	}
}

// TestDesktopNoVNC serves the noVNC client, with the shim in its pages
// and nothing outside its directory.
func TestDesktopNoVNC(t *testing.T) {
	if _, err := os.Stat("/usr/share/novnc/vnc.html"); err != nil {
		testenv.Unavailable(t, "noVNC is not installed (scripts/deps.sh installs it)")
	}
	a := newAPI(t)
	for _, tt := range []struct {
		path, ctype, has string
	}{
		{"/v1/desktop/novnc/vnc.html", "text/html; charset=utf-8", `data-corral-src="app/ui.js"`},
		{"/v1/desktop/novnc/", "text/html; charset=utf-8", `var modules = [`},
		{"/v1/desktop/novnc/vnc_lite.html", "text/html; charset=utf-8", `import RFB from './core/rfb.js'`},
		{"/v1/desktop/novnc/core/rfb.js", "text/javascript; charset=utf-8", "export default class RFB"},
		{"/v1/desktop/novnc/app/styles/base.css", "text/css; charset=utf-8", "url("},
		{"/v1/desktop/novnc", "text/html; charset=utf-8", `location.replace("novnc/vnc.html" + location.search`},
	} {
		resp, body := a.do("GET", tt.path, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tt.ctype || !strings.Contains(string(body), tt.has) {
			t.Errorf("GET %s = %d %s; want 200 %s with %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.ctype, tt.has)
		}
		if strings.HasSuffix(tt.path, ".html") && resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: Referrer-Policy %q; want no-referrer", tt.path, resp.Header.Get("Referrer-Policy"))
		}
	}
	for _, tt := range []struct {
		path   string
		status int
	}{
		{"/v1/desktop/novnc/nothing.js", 404},
		{"/v1/desktop/novnc/app", 404},
		{"/v1/desktop/novnc/%2e%2e/%2e%2e/%2e%2e/etc/passwd", 403},
		{"/v1/desktop/novnc/app%2F..%2F..%2F..%2Fetc%2Fpasswd", 403},
	} {
		resp, body := a.do("GET", tt.path, nil)
		desktopProblem(t, "GET "+tt.path, resp, body, tt.status, "")
	}
}

// TestDesktopStopsWithDaemon: closing the daemon stops the desktop's
// processes.
func TestDesktopStopsWithDaemon(t *testing.T) {
	a, c := desktopAPI(t, "fluxbox", "x11vnc")
	if _, err := c.StartDesktop(context.Background(), sandboxapi.DesktopStartRequest{Width: 320, Height: 240}); err != nil {
		t.Fatal(err)
	}
	kids := childPIDs(t, "Xvfb", "fluxbox", "x11vnc")
	if len(kids) != 3 {
		t.Fatalf("desktop processes: %v; want Xvfb, fluxbox and x11vnc", kids)
	}
	a.d.Server.Close()
	for name, pid := range kids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (%d) outlived the daemon: %v", name, pid, err)
		}
	}
}

// childPIDs returns this process's children with the given names.
func childPIDs(t *testing.T, names ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		for _, n := range names {
			if s[open+1:end] == n {
				out[n] = pid
			}
		}
	}
	return out
}
