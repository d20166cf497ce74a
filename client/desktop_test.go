package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
	"github.com/corral-sh/corral/internal/testenv"
)

// TestDesktopInSandbox drives the desktop of a real sandbox made from the
// desktop template (bwrap), through a real control plane's proxy: an
// xterm on the display, a command typed into it with the API, its result
// read back from the window title and a file; a screenshot; the VNC
// bridge speaking RFB; the noVNC page in a real Chromium, connecting and
// taking over the keyboard. The template is built on first use (about 8
// minutes; cached in /var/cache/corral/templates).
func TestDesktopInSandbox(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{Template: "desktop"})
	cp := newCP(t, srv, srv.Token)
	ctx := testContext(t, 5*time.Minute)
	sb, err := cp.CreateSandbox(ctx, cpapi.SandboxRequest{Template: srv.Template})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.DeleteSandbox(context.Background(), sb.ID) })
	c := cp.Sandbox(sb.ID)

	if st, err := c.DesktopStatus(ctx); err != nil || st.Running {
		t.Fatalf("DesktopStatus() before start = %+v, %v; want 200, not running", st, err)
	}
	st, err := c.StartDesktop(ctx, sandboxapi.DesktopStartRequest{Width: 1280, Height: 800})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Running || !st.VNC || st.Width != 1280 || st.Height != 800 {
		t.Fatalf("StartDesktop() = %+v; want 1280x800 with VNC", st)
	}

	t.Run("xterm", func(t *testing.T) {
		// sh, not the user's bash, whose prompt would set the title.
		_, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "xterm", Args: []string{"-title", "corral-xterm", "-e", "/bin/sh"},
			Env: map[string]string{"DISPLAY": st.Display}, Tag: "xterm"})
		if err != nil {
			t.Fatal(err)
		}
		win := waitWindow(ctx, t, c, "corral-xterm")
		if _, err := c.DesktopAction(ctx, sandboxapi.DesktopAction{Action: sandboxapi.ActionLeftClick,
			Coordinate: []int{win.X + win.Width/2, win.Y + win.Height/2}}); err != nil {
			t.Fatal(err)
		}
		typed := `echo hi > /tmp/x; printf '\033]0;corral-ok\007'`
		if _, err := c.DesktopAction(ctx, sandboxapi.DesktopAction{Action: sandboxapi.ActionType, Text: typed}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DesktopAction(ctx, sandboxapi.DesktopAction{Action: sandboxapi.ActionKey, Key: "Return"}); err != nil {
			t.Fatal(err)
		}
		waitWindow(ctx, t, c, "corral-ok")
		if got := readFile(ctx, t, c, "/tmp/x"); got != "hi\n" {
			t.Errorf("/tmp/x = %q; want hi", got)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		b, err := c.DesktopScreenshot(ctx, client.ScreenshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 {
			t.Fatalf("screenshot: %v, %v; want a 1280x800 PNG", img.Bounds(), err)
		}
		// The xterm drew something: not every pixel is the same.
		first := img.At(0, 0)
		varied := false
		for y := 0; y < 800 && !varied; y += 7 {
			for x := 0; x < 1280; x += 7 {
				if img.At(x, y) != first {
					varied = true
					break
				}
			}
		}
		if !varied {
			t.Error("the screenshot is one flat colour")
		}
	})

	t.Run("vnc", func(t *testing.T) {
		conn, err := c.DialVNC(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		version := make([]byte, 12)
		if _, err := io.ReadFull(conn, version); err != nil || !strings.HasPrefix(string(version), "RFB 003.00") {
			t.Fatalf("through the control plane the VNC server said %q, %v; want RFB 003.00x", version, err)
		}
	})

	t.Run("novnc in chromium", func(t *testing.T) {
		browserTakesOver(ctx, t, c)
	})

	t.Run("windows and stop", func(t *testing.T) {
		list, err := c.DesktopWindows(ctx)
		if err != nil || len(list) == 0 {
			t.Fatalf("DesktopWindows() = %+v, %v", list, err)
		}
		if err := c.StopDesktop(ctx); err != nil {
			t.Fatal(err)
		}
		if st, err := c.DesktopStatus(ctx); err != nil || st.Running {
			t.Errorf("after stop: %+v, %v; want not running", st, err)
		}
		if _, err := c.DesktopAction(ctx, sandboxapi.DesktopAction{Action: sandboxapi.ActionCursorPosition}); !errors.Is(err, client.ErrConflict) {
			t.Errorf("action after stop = %v; want ErrConflict", err)
		}
	})

	t.Run("no desktop in the minimal template", func(t *testing.T) {
		tpl := controlplanetest.PrepareTemplate(t, "bwrap", srv.Config.StateRoot, "minimal")
		min, err := cp.CreateSandbox(ctx, cpapi.SandboxRequest{Template: tpl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cp.DeleteSandbox(context.Background(), min.ID) })
		_, err = cp.Sandbox(min.ID).DesktopStatus(ctx)
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 404 || !strings.Contains(apiErr.Detail, "Xvfb is not installed") {
			t.Errorf("DesktopStatus() in a minimal sandbox = %v; want 404, Xvfb is not installed", err)
		}
	})
}

// waitWindow waits for a window titled title and returns it.
func waitWindow(ctx context.Context, t *testing.T, c *client.Client, title string) sandboxapi.DesktopWindow {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last []sandboxapi.DesktopWindow
	for {
		list, err := c.DesktopWindows(ctx)
		if err == nil {
			last = list
			for _, w := range list {
				if w.Title == title {
					return w
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no window titled %q: %+v, %v", title, last, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func readFile(ctx context.Context, t *testing.T, c *client.Client, path string) string {
	t.Helper()
	body, err := c.ReadFile(ctx, path)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", path, err)
	}
	defer body.Close()
	b, _ := io.ReadAll(body)
	return string(b)
}

// browserTakesOver opens the noVNC page through the control plane in a
// headless Chromium, as a person would from the web UI: every file loads
// with the access token, noVNC connects over the proxied WebSocket, and
// keys typed in the page reach the xterm.
func browserTakesOver(ctx context.Context, t *testing.T, c *client.Client) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Unavailable(t, "chromium is not installed (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1400, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	var mu sync.Mutex
	var failed []string
	err = chromedp.Listen(bctx, func(ev any) {
		if r, ok := ev.(*network.EventResponseReceived); ok && r.Response.Status >= 400 {
			mu.Lock()
			failed = append(failed, fmt.Sprintf("%d %s", int(r.Response.Status), strings.SplitN(r.Response.URL, "?", 2)[0]))
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	page := c.NoVNCURL()
	err = chromedp.Do(bctx,
		chromedp.Navigate(page),
		chromedp.Poll[chromedp.Void](`document.documentElement.classList.contains("noVNC_connected")`, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.Poll[chromedp.Void](`(() => { const c = document.querySelector("#noVNC_container canvas"); return c && c.width === 1280 && c.height === 800; })()`,
			chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("noVNC at %s did not connect: %v (failed requests: %v)", strings.SplitN(page, "?", 2)[0], err, failed)
	}
	// The stylesheet's images came with the token too.
	handle, err := chromedp.Run(bctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#noVNC_control_bar_handle")).backgroundImage`))
	if err != nil || !strings.Contains(handle, "access_token=") {
		t.Errorf("the control bar's image is %q, %v; want a URL with the token", handle, err)
	}

	// Take over: click into the xterm through noVNC and type a command.
	box, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector("#noVNC_container canvas").getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`))
	if err != nil || len(box) != 4 {
		t.Fatalf("canvas box %v, %v", box, err)
	}
	xterm := waitWindow(ctx, t, c, "corral-ok")
	sx, sy := box[2]/1280, box[3]/800
	x, y := box[0]+float64(xterm.X+xterm.Width/2)*sx, box[1]+float64(xterm.Y+xterm.Height/2)*sy
	err = chromedp.Do(bctx,
		chromedp.MouseClickXY(x, y),
		chromedp.KeyEvent("echo from-vnc > /tmp/y\r"),
	)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		body, err := c.ReadFile(ctx, "/tmp/y")
		if err == nil {
			b, _ := io.ReadAll(body)
			body.Close()
			if string(b) == "from-vnc\n" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys typed in noVNC did not reach the xterm: /tmp/y: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// noVNC's lighter page: one inline module, whose imports the import
	// map gives the token.
	lite := strings.Replace(page, "/vnc.html?", "/vnc_lite.html?", 1)
	err = chromedp.Do(bctx,
		chromedp.Navigate(lite),
		chromedp.Poll[chromedp.Void](`document.getElementById("status").textContent.startsWith("Connected")`, chromedp.WithPollingTimeout(60*time.Second)),
	)
	if err != nil {
		t.Errorf("vnc_lite.html did not connect: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	t.Logf("requests that failed: %q", failed)
	for _, f := range failed {
		// Debian's novnc has no package.json (noVNC then shows its
		// version as "Unknown"); /favicon.ico is the browser's own.
		if strings.Contains(f, "/desktop/") && !strings.HasSuffix(f, "/package.json") {
			t.Errorf("the page's request failed: %s", f)
		}
	}
}
