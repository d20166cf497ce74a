// Package desktop runs a sandbox's virtual desktop and drives it: an X
// server (Xvfb), a small window manager (fluxbox) and a VNC server
// (x11vnc, on a unix socket) for a person to watch and take over;
// screenshots, the computer-use actions and the window list over the X11
// protocol (github.com/jezek/xgb: pure Go, no cgo); keys and typing through
// xdotool, which knows every keysym name and types any character. It also
// serves the noVNC web client's files. It does not import net/http.
//
// # Lifetimes and locking
//
// A Desktop has at most one session: the X server with its window manager
// and VNC server. Start makes one and returns when the X server accepts
// connections (Xvfb -displayfd says so; no sleeping); Stop, Close, or the
// X server's own exit end it. Each session has one owner goroutine that
// waits for the X server, then stops the other processes (SIGTERM to each
// process group, SIGKILL after the grace period), closes the X connection
// and forgets the session; Stop and Close wait for it. Each child process
// is waited for by its own goroutine from the moment it starts, so the PID
// 1 reaper (internal/sandboxd/reaper, which leaves a zombie alone for a
// second) never takes an exit status from us.
//
// lifeMu serializes Start, Stop and Close and is held while they run; mu
// guards the current session pointer only and is never held across I/O.
// Screenshots, actions and window lists use the session they found under
// mu, concurrently; input actions (keys, mouse) are serialized per session
// so that one action's events never interleave with another's. An action
// that races a Stop fails with a conflict.
package desktop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Defaults and limits of Start.
const (
	DefaultWidth  = 1280
	DefaultHeight = 800
	DefaultDepth  = 24
	DefaultDPI    = 96

	minSide, maxWidth, maxHeight = 64, 7680, 4320
	minDPI, maxDPI               = 24, 480

	// startTimeout bounds how long Start waits for the X server and
	// the VNC server to be ready.
	startTimeout = 20 * time.Second
	// wmTimeout bounds how long Start waits for the window manager to
	// take the screen; a window manager that is slower is not an error.
	wmTimeout = 5 * time.Second
)

// Options configure a Desktop.
type Options struct {
	// Env is the environment of the desktop's processes and of xdotool;
	// the daemon's own environment when nil. DISPLAY is set by the
	// Desktop; CORRAL_SANDBOX_TOKEN is always removed.
	Env []string
	// KillGrace is how long Stop waits between SIGTERM and SIGKILL; 2s
	// when zero.
	KillGrace time.Duration
	// NoVNCDir holds the noVNC web client; /usr/share/novnc (Debian's
	// novnc package) when "".
	NoVNCDir string
	// Logger receives the processes' output at debug level and their
	// failures; slog.Default() when nil.
	Logger *slog.Logger
}

// Desktop is a sandbox's virtual desktop. It is safe for concurrent use.
type Desktop struct {
	opts Options
	log  *slog.Logger

	lifeMu sync.Mutex // serializes Start, Stop and Close; held while they run
	mu     sync.Mutex // guards cur and closed
	cur    *session
	closed bool
}

// New returns a stopped Desktop. It starts nothing.
func New(opts Options) *Desktop {
	if opts.KillGrace <= 0 {
		opts.KillGrace = 2 * time.Second
	}
	if opts.NoVNCDir == "" {
		opts.NoVNCDir = "/usr/share/novnc"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	opts.Env = cleanEnv(opts.Env)
	return &Desktop{opts: opts, log: opts.Logger}
}

// cleanEnv drops the daemon's token and any DISPLAY from env.
func cleanEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != "CORRAL_SANDBOX_TOKEN" && k != "DISPLAY" {
			out = append(out, kv)
		}
	}
	return out
}

// Available reports whether this sandbox can have a desktop: nil when
// Xvfb is installed, else an ErrNotFound error saying so. It looks again
// on every call, so installing Xvfb later makes the desktop available.
func (d *Desktop) Available() error {
	if _, err := d.lookPath("Xvfb"); err != nil {
		return errdefs.Wrap(errdefs.ErrNotFound, err,
			"this sandbox has no desktop: Xvfb is not installed (create the sandbox from the desktop template)")
	}
	return nil
}

// lookPath finds a program on the PATH of the desktop's environment.
func (d *Desktop) lookPath(name string) (string, error) {
	for _, kv := range d.opts.Env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range strings.Split(path, ":") {
				if dir == "" {
					continue
				}
				p := dir + "/" + name
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					return p, nil
				}
			}
			return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
		}
	}
	return exec.LookPath(name)
}

// Status describes the desktop. It fails only when the desktop is not
// available here (ErrNotFound).
func (d *Desktop) Status() (sandboxapi.DesktopStatus, error) {
	if err := d.Available(); err != nil {
		return sandboxapi.DesktopStatus{}, err
	}
	if s := d.session(); s != nil {
		return s.status(), nil
	}
	return sandboxapi.DesktopStatus{}, nil
}

// session returns the running session, or nil.
func (d *Desktop) session() *session {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur
}

// running returns the running session, or an ErrConflict error.
func (d *Desktop) running() (*session, error) {
	if err := d.Available(); err != nil {
		return nil, err
	}
	if s := d.session(); s != nil {
		return s, nil
	}
	return nil, errNotRunning
}

var errNotRunning = errdefs.Conflictf("the desktop is not running: start it with POST /v1/desktop/start")

// Start starts the desktop, or finds it running. created is false when it
// was running already (with a compatible request: zero fields, or the same
// values). A request for another size than the running one is a conflict.
func (d *Desktop) Start(ctx context.Context, req sandboxapi.DesktopStartRequest) (st sandboxapi.DesktopStatus, created bool, err error) {
	cfg, err := screenConfig(req)
	if err != nil {
		return st, false, err
	}
	if err := d.Available(); err != nil {
		return st, false, err
	}
	d.lifeMu.Lock()
	defer d.lifeMu.Unlock()
	d.mu.Lock()
	closed, cur := d.closed, d.cur
	d.mu.Unlock()
	if closed {
		return st, false, errdefs.Unavailablef("the daemon is shutting down")
	}
	if cur != nil {
		if (req.Width != 0 && req.Width != cur.cfg.width) || (req.Height != 0 && req.Height != cur.cfg.height) ||
			(req.Depth != 0 && req.Depth != cur.cfg.depth) || (req.DPI != 0 && req.DPI != cur.cfg.dpi) {
			return st, false, errdefs.Conflictf("the desktop is running at %dx%dx%d, %d dpi: stop it first to change that",
				cur.cfg.width, cur.cfg.height, cur.cfg.depth, cur.cfg.dpi)
		}
		return cur.status(), false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	s, err := d.startSession(ctx, cfg)
	if err != nil {
		return st, false, err
	}
	d.mu.Lock()
	d.cur = s
	d.mu.Unlock()
	go s.own(d)
	d.log.Info("desktop started", "display", s.display, "size", fmt.Sprintf("%dx%dx%d", cfg.width, cfg.height, cfg.depth), "vnc", s.vncSock != "")
	return s.status(), true, nil
}

// forget clears the current session if it is s.
func (d *Desktop) forget(s *session) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == s {
		d.cur = nil
	}
}

// Stop stops the desktop and waits until all its processes have exited.
// Stopping a stopped desktop is not an error.
func (d *Desktop) Stop(ctx context.Context) error {
	if err := d.Available(); err != nil && d.session() == nil {
		return err
	}
	d.lifeMu.Lock()
	defer d.lifeMu.Unlock()
	if s := d.session(); s != nil {
		s.stop()
		d.log.Info("desktop stopped", "display", s.display)
	}
	return nil
}

// Close stops the desktop and refuses to start it again. It is idempotent.
func (d *Desktop) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.lifeMu.Lock()
	defer d.lifeMu.Unlock()
	if s := d.session(); s != nil {
		s.stop()
	}
}

// VNCSocket returns the unix socket of the running desktop's VNC server.
// It is ErrConflict when the desktop is not running and ErrUnavailable
// when it runs without a VNC server (no x11vnc).
func (d *Desktop) VNCSocket() (string, error) {
	s, err := d.running()
	if err != nil {
		return "", err
	}
	if s.vncSock == "" {
		return "", errdefs.Unavailablef("the desktop has no VNC server: x11vnc is not installed or failed to start")
	}
	return s.vncSock, nil
}

// Display returns the running desktop's DISPLAY, ":1".
func (d *Desktop) Display() (string, error) {
	s, err := d.running()
	if err != nil {
		return "", err
	}
	return s.display, nil
}

// screen is what a session was started with.
type screen struct {
	width, height, depth, dpi int
}

// screenConfig validates a start request and applies the defaults.
func screenConfig(req sandboxapi.DesktopStartRequest) (screen, error) {
	c := screen{req.Width, req.Height, req.Depth, req.DPI}
	if c.width == 0 {
		c.width = DefaultWidth
	}
	if c.height == 0 {
		c.height = DefaultHeight
	}
	if c.depth == 0 {
		c.depth = DefaultDepth
	}
	if c.dpi == 0 {
		c.dpi = DefaultDPI
	}
	switch {
	case c.width < minSide || c.width > maxWidth || c.height < minSide || c.height > maxHeight:
		return c, errdefs.Invalidf("width and height must be from %d to %dx%d; got %dx%d", minSide, maxWidth, maxHeight, c.width, c.height)
	case c.depth != 16 && c.depth != 24:
		return c, errdefs.Invalidf("depth must be 16 or 24; got %d", c.depth)
	case c.dpi < minDPI || c.dpi > maxDPI:
		return c, errdefs.Invalidf("dpi must be from %d to %d; got %d", minDPI, maxDPI, c.dpi)
	}
	return c, nil
}

// sessionErr turns a failure of the X connection into what the client
// should see: a conflict when the session has ended meanwhile.
func sessionErr(s *session, err error, what string) error {
	if err == nil {
		return nil
	}
	var e *errdefs.Error
	if errors.As(err, &e) {
		return err
	}
	if s.ended() {
		return errdefs.Wrap(errdefs.ErrConflict, err, "the desktop stopped during "+what)
	}
	return fmt.Errorf("desktop: %s: %w", what, err)
}
