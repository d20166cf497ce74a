package desktop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// session is one running desktop: the X server, the window manager and
// the VNC server, and this daemon's X connection to it. Its fields are set
// before it is published and never change, except through stopOnce.
type session struct {
	d       *Desktop
	cfg     screen
	display string // ":N"
	started time.Time
	env     []string // the desktop's environment, with DISPLAY
	dir     string   // the session's own files (0700): fluxbox settings, the VNC socket; removed at the end
	x       *xconn
	lock    *displayLock // the display number's claim; nil until made
	xvfb    *child
	wm      *child // nil without a window manager
	vnc     *child // nil without a VNC server
	vncSock string // the VNC server's unix socket; "" without one

	// inputMu serializes input actions, so one action's key and button
	// events never interleave with another's.
	inputMu sync.Mutex

	stopReq  chan struct{} // closed to ask the owner to stop
	stopOnce sync.Once
	done     chan struct{} // closed when the owner has stopped everything
}

// startSession starts the X server, then the window manager and the VNC
// server; on any failure it stops what it started.
func (d *Desktop) startSession(ctx context.Context, cfg screen) (_ *session, err error) {
	s := &session{d: d, cfg: cfg, stopReq: make(chan struct{}), done: make(chan struct{})}
	defer func() {
		if err != nil {
			s.shutdown()
		}
	}()
	if s.dir, err = os.MkdirTemp("", "corral-desktop-"); err != nil {
		return nil, fmt.Errorf("desktop: session directory: %w", err)
	}
	if err := s.startX(ctx); err != nil {
		return nil, err
	}
	if s.x, err = dialX(s.display, cfg); err != nil {
		return nil, fmt.Errorf("desktop: connect to the X server %s: %w", s.display, err)
	}
	if wm, err := d.lookPath("fluxbox"); err == nil {
		rc, err := s.fluxboxConfig()
		if err != nil {
			return nil, err
		}
		if s.wm, err = s.spawn("fluxbox", exec.Command(wm, "-rc", rc), nil); err != nil {
			d.log.Warn("desktop: no window manager", "err", err)
		} else if !s.x.waitWM(ctx, wmTimeout, s.wm.done) {
			d.log.Warn("desktop: the window manager did not take the screen in time", "display", s.display)
		}
	}
	if vnc, err := d.lookPath("x11vnc"); err == nil {
		if err := s.startVNC(ctx, vnc); err != nil {
			d.log.Warn("desktop: no VNC server", "err", err)
		}
	}
	s.started = time.Now()
	return s, nil
}

// startX starts Xvfb on the first free display (see displaylock.go) and
// waits until it accepts connections: with -displayfd it writes the
// display number to a pipe once it is ready.
func (s *session) startX(ctx context.Context) error {
	bin, err := s.d.lookPath("Xvfb")
	if err != nil {
		return errdefs.Wrap(errdefs.ErrNotFound, err, "Xvfb is not installed")
	}
	if s.lock, err = claimDisplay(); err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("desktop: displayfd pipe: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(bin, ":"+strconv.Itoa(s.lock.n), "-displayfd", "3",
		"-screen", "0", fmt.Sprintf("%dx%dx%d", s.cfg.width, s.cfg.height, s.cfg.depth),
		"-dpi", strconv.Itoa(s.cfg.dpi),
		// Only the socket in /tmp/.X11-unix, which is the sandbox's own:
		// no TCP, and no abstract socket ("local"), which lives in the
		// network namespace and so would be shared with the host where
		// the sandbox shares its network.
		"-nolisten", "tcp", "-nolisten", "local", "-noreset", "+extension", "XTEST", "+extension", "RANDR")
	cmd.ExtraFiles = []*os.File{w}
	s.env = s.d.opts.Env
	s.xvfb, err = s.spawn("Xvfb", cmd, w)
	if err != nil {
		return err
	}
	if err := s.lock.handOver(s.xvfb.pid); err != nil {
		s.d.log.Warn("desktop: the display's lock still names this daemon", "err", err)
	}
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() { // ends at the number, or EOF when Xvfb exits, or when r is closed
		line, err := bufio.NewReader(r).ReadString('\n')
		got <- result{line, err}
	}()
	var res result
	select {
	case res = <-got:
	case <-ctx.Done():
		r.Close()
		<-got
		return errdefs.Wrap(errdefs.ErrTimeout, ctx.Err(), "the X server did not start in time")
	}
	n, convErr := strconv.Atoi(strings.TrimSpace(res.line))
	if convErr != nil || n != s.lock.n {
		<-s.xvfb.done // it closed the pipe: it is exiting
		<-s.xvfb.outDone
		return errdefs.Wrap(errdefs.ErrUnavailable, fmt.Errorf("x server exited: %v", s.xvfb.err),
			"the X server failed to start: "+s.xvfb.out.tail())
	}
	s.display = ":" + strconv.Itoa(n)
	s.env = append(append([]string(nil), s.d.opts.Env...), "DISPLAY="+s.display)
	return nil
}

// fluxboxConfig writes the window manager's settings into the session's
// own directory and returns the file to give fluxbox -rc: one workspace,
// and a background left alone (fluxbox would otherwise run fbsetbg,
// which pops up a message box when no wallpaper tool is installed). The
// user's ~/.fluxbox must exist, or fluxbox overwrites the file with its
// defaults on its first run; it keeps its menu and keys there.
func (s *session) fluxboxConfig() (string, error) {
	overlay := filepath.Join(s.dir, "fluxbox-overlay")
	rc := filepath.Join(s.dir, "fluxbox-init")
	settings := "session.configVersion: 13\n" +
		"session.styleOverlay: " + overlay + "\n" +
		"session.screen0.workspaces: 1\n" +
		"session.screen0.workspaceNames: Desktop\n"
	if err := os.WriteFile(overlay, []byte("background: unset\n"), 0o644); err != nil {
		return "", fmt.Errorf("desktop: fluxbox settings: %w", err)
	}
	if err := os.WriteFile(rc, []byte(settings), 0o644); err != nil {
		return "", fmt.Errorf("desktop: fluxbox settings: %w", err)
	}
	if home := envValue(s.env, "HOME"); home != "" {
		if err := os.MkdirAll(filepath.Join(home, ".fluxbox"), 0o755); err != nil {
			s.d.log.Warn("desktop: cannot make ~/.fluxbox", "err", err)
		}
	}
	return rc, nil
}

// startVNC starts x11vnc on a unix socket in the session's directory
// (0700), with no TCP port: where a sandbox shares the host's network (a
// bwrap sandbox with egress), a port on 127.0.0.1 would let any local
// process watch and drive the desktop, since the server asks for no
// password. It waits for the lines x11vnc prints once the socket listens
// and once its screen is set up, when it serves clients.
func (s *session) startVNC(ctx context.Context, bin string) error {
	sock := filepath.Join(s.dir, "vnc.sock")
	ready := make(chan struct{})
	listening := false // only the output reader's goroutine touches it
	cmd := exec.Command(bin, "-display", s.display, "-unixsock", sock, "-rfbport", "0", "-rfbportv6", "-1",
		"-shared", "-forever", "-nopw", "-noxdamage", "-xkb")
	var err error
	s.vnc, err = s.spawn("x11vnc", cmd, nil, func(line string) {
		switch {
		case strings.Contains(line, "listening on unix socket: "+sock):
			listening = true
		case listening && strings.Contains(line, "screen setup finished"):
			listening = false
			close(ready)
		}
	})
	if err != nil {
		return err
	}
	select {
	case <-ready:
		s.vncSock = sock
		return nil
	case <-s.vnc.done:
		<-s.vnc.outDone
		return fmt.Errorf("x11vnc exited: %v: %s", s.vnc.err, s.vnc.out.tail())
	case <-ctx.Done():
		s.vnc.stop(s.d.opts.KillGrace)
		return fmt.Errorf("x11vnc did not listen in time: %w", ctx.Err())
	}
}

// own is the session's owner goroutine: it waits until the X server
// exits or a stop is asked for, then stops everything and forgets the
// session.
func (s *session) own(d *Desktop) {
	select {
	case <-s.xvfb.done:
		d.log.Warn("desktop: the X server exited", "display", s.display, "err", s.xvfb.err, "output", s.xvfb.out.tail())
	case <-s.stopReq:
	}
	s.shutdown()
	d.forget(s)
	close(s.done)
}

// stop asks the owner to stop the session and waits until it has.
func (s *session) stop() {
	s.stopOnce.Do(func() { close(s.stopReq) })
	<-s.done
}

// ended reports whether the session is stopping or stopped.
func (s *session) ended() bool {
	select {
	case <-s.stopReq:
		return true
	case <-s.xvfb.done:
		return true
	default:
		return false
	}
}

// shutdown stops the processes, clients first, and closes the X
// connection.
func (s *session) shutdown() {
	grace := s.d.opts.KillGrace
	var wg sync.WaitGroup
	for _, c := range []*child{s.vnc, s.wm} {
		if c != nil {
			wg.Go(func() { c.stop(grace) })
		}
	}
	wg.Wait()
	if s.x != nil {
		s.x.close()
	}
	if s.xvfb != nil {
		s.xvfb.stop(grace)
	}
	if s.lock != nil {
		s.lock.release()
	}
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			s.d.log.Warn("desktop: remove the session directory", "err", err)
		}
	}
}

func (s *session) status() sandboxapi.DesktopStatus {
	started := s.started
	return sandboxapi.DesktopStatus{
		Running:   true,
		Display:   s.display,
		Width:     s.cfg.width,
		Height:    s.cfg.height,
		Depth:     s.cfg.depth,
		DPI:       s.cfg.dpi,
		VNC:       s.vncSock != "",
		StartedAt: &started,
	}
}

// spawn starts cmd in its own process group with the session's
// environment, its output going to the log (and to each onLine). extra,
// if not nil, is a descriptor handed to the child that spawn closes in
// this process once the child has it.
func (s *session) spawn(name string, cmd *exec.Cmd, extra *os.File, onLine ...func(string)) (*child, error) {
	cmd.Env = s.env
	cmd.Dir = "/"
	if home := envValue(s.env, "HOME"); home != "" {
		if fi, err := os.Stat(home); err == nil && fi.IsDir() {
			cmd.Dir = home
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c, err := startChild(name, cmd, s.d, onLine)
	if extra != nil {
		extra.Close()
	}
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, err, name+" failed to start")
	}
	return c, nil
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// child is one process of the desktop. One goroutine waits for it from
// Start on; done is closed, and err set, when it has exited.
type child struct {
	name    string
	pid     int
	out     *tail
	outDone chan struct{} // closed when the output pipe is at EOF
	done    chan struct{}
	err     error // cmd.Wait's result; read after done
}

// startChild starts cmd with a pipe for its stdout and stderr that one
// goroutine reads line by line until every holder has closed it.
func startChild(name string, cmd *exec.Cmd, d *Desktop, onLine []func(string)) (*child, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	c := &child{name: name, pid: cmd.Process.Pid, out: &tail{}, outDone: make(chan struct{}), done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	go func() { // ends at EOF: the child and whatever inherited the pipe are gone
		defer close(c.outDone)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 4096), 64<<10)
		for sc.Scan() {
			line := sc.Text()
			c.out.add(line)
			d.log.Debug("desktop: "+name, "line", line)
			for _, f := range onLine {
				f(line)
			}
		}
		if err := sc.Err(); err != nil {
			_, _ = io.Copy(io.Discard, r)
		}
	}()
	return c, nil
}

// stop ends the child's process group: SIGTERM, then SIGKILL after grace
// if the child is still there; then it waits for the child and sweeps
// whatever is left of its group.
func (c *child) stop(grace time.Duration) {
	select {
	case <-c.done:
	default:
		_ = syscall.Kill(-c.pid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-c.done:
			t.Stop()
		case <-t.C:
			_ = syscall.Kill(-c.pid, syscall.SIGKILL)
			<-c.done
		}
	}
	// The group outlives its leader while a member lives; its id cannot
	// be reused until then, so this reaches only what the child left.
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
}

// tail keeps the last lines of a process's output, for error messages.
type tail struct {
	mu    sync.Mutex
	lines []string
}

const tailLines = 8

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(line) > 300 {
		line = line[:300]
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

func (t *tail) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "; ")
}
