package desktop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sandboxd/ports"
	"github.com/corral-sh/corral/internal/testenv"
)

// need skips (or fails, in CI) a test when a program it drives is not
// installed; scripts/deps.sh installs them all.
func need(t testing.TB, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			testenv.Unavailable(t, "%s is not installed (scripts/deps.sh installs it)", p)
		}
	}
}

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// newDesktop returns a Desktop whose processes have a fresh HOME (fluxbox
// writes its settings there), closed when the test ends.
func newDesktop(t testing.TB) *Desktop {
	t.Helper()
	need(t, "Xvfb")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+t.TempDir())
	d := New(Options{Env: env, KillGrace: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	t.Cleanup(d.Close)
	return d
}

func start(t *testing.T, d *Desktop, req sandboxapi.DesktopStartRequest) sandboxapi.DesktopStatus {
	t.Helper()
	st, created, err := d.Start(context.Background(), req)
	if err != nil {
		t.Fatalf("Start(%+v): %v", req, err)
	}
	if !created || !st.Running || !strings.HasPrefix(st.Display, ":") {
		t.Fatalf("Start(%+v) = %+v, created %v; want a new running desktop", req, st, created)
	}
	return st
}

// pids returns the process ids of the running session.
func pids(t *testing.T, d *Desktop) []int {
	t.Helper()
	s := d.session()
	if s == nil {
		t.Fatal("no session")
	}
	out := []int{s.xvfb.pid}
	for _, c := range []*child{s.wm, s.vnc} {
		if c != nil {
			out = append(out, c.pid)
		}
	}
	return out
}

// gone reports whether no process with one of pids exists (zombies of
// ours would still exist).
func gone(pids []int) error {
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("process %d is still there (%v)", pid, err)
		}
	}
	return nil
}

// eventually polls cond until it is true or 15 s have passed.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	// Generous: it bounds only a failure, and an X client such as xterm
	// can take most of it to draw on a loaded machine.
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartValidation(t *testing.T) {
	d := New(Options{})
	for _, req := range []sandboxapi.DesktopStartRequest{
		{Width: 10}, {Height: 100000}, {Width: -1}, {Depth: 8}, {Depth: 32}, {DPI: 1}, {DPI: 1000},
	} {
		if _, _, err := d.Start(context.Background(), req); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Start(%+v) = %v; want invalid", req, err)
		}
	}
}

func TestUnavailable(t *testing.T) {
	d := New(Options{Env: []string{"PATH=" + t.TempDir()}})
	ctx := context.Background()
	if _, err := d.Status(); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "Xvfb is not installed") {
		t.Errorf("Status() = %v; want not found, Xvfb is not installed", err)
	}
	if _, _, err := d.Start(ctx, sandboxapi.DesktopStartRequest{}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Start() = %v; want not found", err)
	}
	if err := d.Stop(ctx); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Stop() = %v; want not found", err)
	}
	if _, err := d.Screenshot(ctx, Region{}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Screenshot() = %v; want not found", err)
	}
	if _, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "cursor_position"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Do() = %v; want not found", err)
	}
}

func TestLifecycle(t *testing.T) {
	d := newDesktop(t)
	ctx := context.Background()
	if st, err := d.Status(); err != nil || st.Running {
		t.Fatalf("Status() before start = %+v, %v; want not running", st, err)
	}
	for name, call := range map[string]func() error{
		"Screenshot": func() error { _, err := d.Screenshot(ctx, Region{}); return err },
		"Do":         func() error { _, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "cursor_position"}); return err },
		"Windows":    func() error { _, err := d.Windows(ctx); return err },
		"VNCSocket":  func() error { _, err := d.VNCSocket(); return err },
	} {
		if err := call(); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "not running") {
			t.Errorf("%s before start = %v; want conflict, not running", name, err)
		}
	}
	if err := d.Stop(ctx); err != nil {
		t.Errorf("Stop() of a stopped desktop = %v", err)
	}

	st := start(t, d, sandboxapi.DesktopStartRequest{Width: 640, Height: 480})
	if st.Width != 640 || st.Height != 480 || st.Depth != 24 || st.DPI != 96 || st.StartedAt == nil {
		t.Errorf("status = %+v; want 640x480x24, 96 dpi, started_at", st)
	}
	again, created, err := d.Start(ctx, sandboxapi.DesktopStartRequest{})
	if err != nil || created || again.Display != st.Display {
		t.Errorf("second Start() = %+v, created %v, %v; want the running one", again, created, err)
	}
	if _, _, err := d.Start(ctx, sandboxapi.DesktopStartRequest{Width: 800}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("Start() with another size = %v; want conflict", err)
	}
	if got, _ := d.Status(); got.Display != st.Display || !got.Running {
		t.Errorf("Status() = %+v; want running on %s", got, st.Display)
	}

	for _, tt := range []struct {
		r    Region
		w, h int
	}{{Region{}, 640, 480}, {Region{X: 10, Y: 20, Width: 100, Height: 50}, 100, 50}, {Region{Scale: 0.5}, 320, 240}, {Region{X: 600, Y: 400, Scale: 2}, 80, 160}} {
		img, err := d.Screenshot(ctx, tt.r)
		if err != nil || img.Rect.Dx() != tt.w || img.Rect.Dy() != tt.h {
			t.Errorf("Screenshot(%+v) = %v, %v; want %dx%d", tt.r, img.Rect, err, tt.w, tt.h)
		}
	}
	if _, err := d.Screenshot(ctx, Region{X: 600, Width: 100}); !errors.Is(err, errdefs.ErrUnprocessable) {
		t.Errorf("Screenshot off the screen = %v; want unprocessable", err)
	}

	do := func(a sandboxapi.DesktopAction) sandboxapi.DesktopActionResult {
		t.Helper()
		res, err := d.Do(ctx, a)
		if err != nil || !res.OK {
			t.Fatalf("Do(%+v) = %+v, %v", a, res, err)
		}
		return res
	}
	if res := do(sandboxapi.DesktopAction{Action: "mouse_move", Coordinate: []int{100, 200}}); res.Cursor != [2]int{100, 200} {
		t.Errorf("mouse_move: cursor %v; want [100 200]", res.Cursor)
	}
	if res := do(sandboxapi.DesktopAction{Action: "cursor_position"}); res.Cursor != [2]int{100, 200} {
		t.Errorf("cursor_position: %v; want [100 200]", res.Cursor)
	}
	if res := do(sandboxapi.DesktopAction{Action: "left_click_drag", StartCoordinate: []int{5, 5}, Coordinate: []int{639, 479}}); res.Cursor != [2]int{639, 479} {
		t.Errorf("left_click_drag: cursor %v; want [639 479]", res.Cursor)
	}
	for _, a := range []sandboxapi.DesktopAction{
		{Action: "left_click", Coordinate: []int{320, 240}},
		{Action: "right_click"}, {Action: "middle_click"}, {Action: "double_click"}, {Action: "triple_click"},
		{Action: "left_click", Text: "shift"},
		{Action: "left_mouse_down"}, {Action: "left_mouse_up", Coordinate: []int{1, 1}},
		{Action: "scroll", ScrollDirection: "down", Coordinate: []int{300, 300}, Key: "ctrl"},
		{Action: "wait", Duration: 0.01},
	} {
		do(a)
	}
	for _, p := range [][]int{{640, 0}, {0, 480}, {-1, 5}} {
		_, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "mouse_move", Coordinate: p})
		if !errors.Is(err, errdefs.ErrUnprocessable) || !strings.Contains(err.Error(), "outside the 640x480 screen") {
			t.Errorf("mouse_move %v = %v; want unprocessable, outside", p, err)
		}
	}
	if _, err := d.Windows(ctx); err != nil {
		t.Errorf("Windows() = %v", err)
	}

	procs := pids(t, d)
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if err := gone(procs); err != nil {
		t.Errorf("after Stop: %v", err)
	}
	if st, err := d.Status(); err != nil || st.Running {
		t.Errorf("Status() after stop = %+v, %v; want not running", st, err)
	}
	if _, err := d.Screenshot(ctx, Region{}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("Screenshot after stop = %v; want conflict", err)
	}
	start(t, d, sandboxapi.DesktopStartRequest{Depth: 16})
	if img, err := d.Screenshot(ctx, Region{}); err != nil || img.Rect.Dx() != DefaultWidth || img.Rect.Dy() != DefaultHeight {
		t.Errorf("depth 16 screenshot = %v, %v", img.Rect, err)
	}

	// Close stops it and refuses to start again.
	procs = pids(t, d)
	d.Close()
	if err := gone(procs); err != nil {
		t.Errorf("after Close: %v", err)
	}
	if _, _, err := d.Start(ctx, sandboxapi.DesktopStartRequest{}); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("Start() after Close = %v; want unavailable", err)
	}
}

// TestVNC checks that x11vnc speaks RFB on its unix socket, and that
// neither it nor the X server listens anywhere else: no TCP port, no
// abstract socket (both would be shared with the host when the sandbox
// shares its network).
func TestVNC(t *testing.T) {
	need(t, "x11vnc")
	d := newDesktop(t)
	st := start(t, d, sandboxapi.DesktopStartRequest{Width: 320, Height: 240})
	sock, err := d.VNCSocket()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the VNC socket's directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hello := make([]byte, 12)
	if _, err := io.ReadFull(conn, hello); err != nil || !strings.HasPrefix(string(hello), "RFB 003.00") {
		t.Fatalf("VNC server said %q, %v; want RFB 003.00x", hello, err)
	}

	mine := map[int]bool{}
	for _, pid := range pids(t, d) {
		mine[pid] = true
	}
	lns, err := ports.List("")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lns {
		if mine[l.PID] {
			t.Errorf("%s (%d) listens on TCP %s", l.Command, l.PID, l.Addr)
		}
	}
	unix, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	if abstract := "@/tmp/.X11-unix/X" + strings.TrimPrefix(st.Display, ":"); strings.Contains(string(unix), abstract+"\n") {
		t.Errorf("the X server listens on the abstract socket %s", abstract)
	}
}

// TestXServerDies checks that a desktop whose X server is killed ends:
// the other processes stop and the status says so.
func TestXServerDies(t *testing.T) {
	d := newDesktop(t)
	start(t, d, sandboxapi.DesktopStartRequest{Width: 320, Height: 240})
	procs := pids(t, d)
	if err := syscall.Kill(procs[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the desktop ends with its X server", func() error {
		if st, _ := d.Status(); st.Running {
			return errors.New("still running")
		}
		return gone(procs)
	})
	if _, err := d.Do(context.Background(), sandboxapi.DesktopAction{Action: "cursor_position"}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("Do() after the X server died = %v; want conflict", err)
	}
	start(t, d, sandboxapi.DesktopStartRequest{Width: 320, Height: 240}) // it can start again
}

// TestXterm is the scenario on the host: an xterm on the display,
// a command typed into it, the result seen in a file and in the window
// title.
func TestXterm(t *testing.T) {
	need(t, "xterm", "xdotool", "fluxbox")
	d := newDesktop(t)
	st := start(t, d, sandboxapi.DesktopStartRequest{Width: 800, Height: 600})
	ctx := context.Background()

	dir := t.TempDir()
	xterm := exec.Command("xterm", "-title", "corral-xterm", "-e", "/bin/sh")
	xterm.Env = append(os.Environ(), "DISPLAY="+st.Display)
	xterm.Dir = dir
	if err := xterm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { xterm.Process.Kill(); xterm.Wait() })

	var win sandboxapi.DesktopWindow
	eventually(t, "the xterm window appears, focused", func() error {
		list, err := d.Windows(ctx)
		if err != nil {
			return err
		}
		for _, w := range list {
			if w.Title == "corral-xterm" && w.Focused {
				win = w
				return nil
			}
		}
		return fmt.Errorf("windows: %+v", list)
	})
	if win.Width < 50 || win.Height < 50 || win.X < 0 || win.Y < 0 {
		t.Errorf("xterm window = %+v; want a real geometry", win)
	}
	center := []int{win.X + win.Width/2, win.Y + win.Height/2}
	if _, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "left_click", Coordinate: center}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "x")
	typed := fmt.Sprintf(`echo hi > %s; printf '\033]0;corral-ok\007'`, out)
	if _, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "type", Text: typed}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "key", Key: "Return"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the typed command runs", func() error {
		b, err := os.ReadFile(out)
		if err != nil || string(b) != "hi\n" {
			return fmt.Errorf("%s = %q, %v", out, b, err)
		}
		list, err := d.Windows(ctx)
		for _, w := range list {
			if w.Title == "corral-ok" {
				return nil
			}
		}
		return fmt.Errorf("no window titled corral-ok: %+v, %v", list, err)
	})

	// Keys xdotool does not know are an error the client can act on.
	if _, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "key", Key: "ctrl+NoSuchKey"}); !errors.Is(err, errdefs.ErrUnprocessable) || !strings.Contains(err.Error(), "NoSuchKey") {
		t.Errorf("unknown key = %v; want unprocessable naming it", err)
	}
	if _, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "hold_key", Key: "shift", Duration: 0.05}); err != nil {
		t.Errorf("hold_key: %v", err)
	}
	// A cancelled hold still releases the key, and says it was cancelled.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.Do(cctx, sandboxapi.DesktopAction{Action: "hold_key", Key: "shift", Duration: 5}); err == nil {
		t.Error("hold_key with a cancelled context succeeded")
	}
}

// TestConcurrentUse runs screenshots, actions and window lists from many
// goroutines while the desktop is stopped under them: every call
// succeeds or reports a conflict, nothing hangs or panics.
func TestConcurrentUse(t *testing.T) {
	d := newDesktop(t)
	start(t, d, sandboxapi.DesktopStartRequest{Width: 320, Height: 240})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Go(func() {
			for j := range 30 {
				var err error
				switch (i + j) % 3 {
				case 0:
					_, err = d.Screenshot(ctx, Region{Scale: 0.5})
				case 1:
					_, err = d.Do(ctx, sandboxapi.DesktopAction{Action: "mouse_move", Coordinate: []int{i * 10, j}})
				default:
					_, err = d.Windows(ctx)
				}
				if err != nil && !errors.Is(err, errdefs.ErrConflict) {
					errs <- err
					return
				}
			}
		})
	}
	if err := d.Stop(ctx); err != nil {
		t.Error(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call: %v; want success or conflict", err)
	}
}

// TestCaptureSHM checks that a capture through shared memory and one
// through GetImage (used when the segment is busy or missing) see the
// same pixels.
func TestCaptureSHM(t *testing.T) {
	need(t, "xterm")
	d := newDesktop(t)
	st := start(t, d, sandboxapi.DesktopStartRequest{Width: 640, Height: 480})
	xterm := exec.Command("xterm", "-geometry", "60x20+10+10", "-e", "ls -l /usr/bin; sleep 60")
	xterm.Env = append(os.Environ(), "DISPLAY="+st.Display)
	if err := xterm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { xterm.Process.Kill(); xterm.Wait() })
	x := d.session().x
	if x.shm == nil {
		t.Fatal("MIT-SHM is not in use")
	}
	eventually(t, "both captures agree on a screen with text", func() error {
		viaSHM, err := x.capture(5, 7, 400, 300)
		if err != nil {
			return err
		}
		x.shm.mu.Lock() // busy: the next capture uses GetImage
		viaSocket, err := x.capture(5, 7, 400, 300)
		x.shm.mu.Unlock()
		if err != nil {
			return err
		}
		if !bytes.Equal(viaSHM.Pix, viaSocket.Pix) {
			return errors.New("the captures differ (the screen may still be changing)")
		}
		for i := 0; i < len(viaSHM.Pix); i += 4 {
			if viaSHM.Pix[i] != viaSHM.Pix[0] {
				return nil // not a blank screen
			}
		}
		return errors.New("the screen is still blank")
	})
}

// fakePath returns a PATH holding scripts named by the keys and links to
// the real programs named in real.
func fakePath(t *testing.T, scripts map[string]string, real ...string) []string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range real {
		p, err := exec.LookPath(name)
		if err != nil {
			testenv.Unavailable(t, "%s is not installed", name)
		}
		if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"PATH=" + dir, "HOME=" + t.TempDir()}
}

func TestXServerFailsToStart(t *testing.T) {
	// Xvfb exits at once: its complaint is the error.
	d := New(Options{Env: fakePath(t, map[string]string{"Xvfb": `echo "Fatal server error: no screens found" >&2; exit 1`})})
	defer d.Close()
	_, _, err := d.Start(context.Background(), sandboxapi.DesktopStartRequest{})
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "no screens found") {
		t.Errorf("Start() with a failing Xvfb = %v; want unavailable with its message", err)
	}

	// Xvfb never becomes ready: Start gives up when its context ends and
	// stops it.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	d = New(Options{Env: fakePath(t, map[string]string{"Xvfb": `echo $$ > "$HOME/pid"; exec ` + sleep + ` 60`}), KillGrace: 100 * time.Millisecond})
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err = d.Start(ctx, sandboxapi.DesktopStartRequest{})
	if !errors.Is(err, errdefs.ErrTimeout) {
		t.Errorf("Start() with a hanging Xvfb = %v; want a timeout", err)
	}
	b, _ := os.ReadFile(filepath.Join(envValue(d.opts.Env, "HOME"), "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatal("the fake Xvfb did not run")
	}
	if err := gone([]int{pid}); err != nil {
		t.Errorf("the hanging Xvfb: %v", err)
	}
	if st, err := d.Status(); err != nil || st.Running {
		t.Errorf("Status() = %+v, %v; want not running", st, err)
	}
}

// TestWithoutTools: a desktop without xdotool, fluxbox and x11vnc still
// runs; keys say what is missing, the pointer works, VNC is unavailable.
func TestWithoutTools(t *testing.T) {
	d := New(Options{Env: fakePath(t, nil, "Xvfb"), KillGrace: 500 * time.Millisecond})
	defer d.Close()
	st := start(t, d, sandboxapi.DesktopStartRequest{Width: 320, Height: 240})
	if st.VNC {
		t.Error("status says VNC without x11vnc")
	}
	ctx := context.Background()
	if _, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "key", Key: "a"}); !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "xdotool is not installed") {
		t.Errorf("key without xdotool = %v; want unavailable, xdotool is not installed", err)
	}
	if res, err := d.Do(ctx, sandboxapi.DesktopAction{Action: "left_click", Coordinate: []int{3, 4}}); err != nil || res.Cursor != [2]int{3, 4} {
		t.Errorf("left_click without xdotool = %+v, %v", res, err)
	}
	if _, err := d.VNCSocket(); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("VNCSocket() without x11vnc = %v; want unavailable", err)
	}
	if list, err := d.Windows(ctx); err != nil || len(list) != 0 {
		t.Errorf("Windows() without a window manager = %+v, %v; want none", list, err)
	}
}
