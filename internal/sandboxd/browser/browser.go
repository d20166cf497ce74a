// Package browser drives the sandbox's own Chromium through the DevTools
// protocol (chromedp): one browser per sandbox, started on first use,
// headless or in a window on the sandbox's X display, and tabs that
// persist across calls — navigate, click and type by CSS selector or by
// accessibility node, read the page as text or as an accessibility tree,
// evaluate JavaScript, take screenshots, wait for the network to go idle.
// It does not import net/http.
//
// Lifetimes. A Manager owns at most one browser process. Start launches it
// (idempotently); Stop and Close end it. chromedp's allocator starts the
// process and waits for it at once (so the PID 1 reaper, which only takes
// zombies older than a second, never steals its status), in its own
// process group; Stop asks the browser to close, then kills what is left
// of the group and every process still using the browser's private
// profile directory, and waits. The processes Chromium forks (zygote,
// renderers, GPU and network services) are its children and reaped by it;
// if it dies first they become orphans and the reaper collects them.
// A Tab lives until it is closed, the page closes itself, or the browser
// ends; one goroutine per tab (owned by the Manager) watches for the page
// going away, and one per browser watches for the browser going away.
package browser

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Executables are the names searched on $PATH for the browser, in order.
var Executables = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

const (
	defaultWidth  = 1280
	defaultHeight = 800
	// startTimeout bounds the launch of the browser and its first tab.
	startTimeout = 60 * time.Second
	// closeGrace is how long Stop lets the browser close by itself.
	closeGrace = 3 * time.Second
	// outputTail is how much of the browser's own output is kept, to
	// explain a failed start.
	outputTail = 16 << 10
)

// Options configure a Manager.
type Options struct {
	// Executable is the browser binary; found on $PATH (Executables) when "".
	Executable string
	// Display returns the X display a browser shows its window on when the
	// start request names none: "" means no display is up, so the browser
	// runs headless. nil: $DISPLAY, when its X socket accepts connections.
	Display func() string
	// Env is the browser's environment; the daemon's own, without its
	// token, when nil.
	Env []string
	// Logger receives lifecycle logs; slog.Default() when nil.
	Logger *slog.Logger
}

// Config is what a browser was started with.
type Config struct {
	Headless      bool
	Display       string
	Width, Height int
}

// Manager owns the sandbox's browser and its tabs. Its methods are safe
// for concurrent use.
type Manager struct {
	opts Options
	log  *slog.Logger

	// startMu serialises Start, Stop and Close, so two first requests
	// do not launch two browsers.
	startMu sync.Mutex

	mu     sync.Mutex
	inst   *instance       // the running browser; nil when none
	tabs   map[string]*Tab // by id, tabs of inst
	closed bool
	wg     sync.WaitGroup // watcher goroutines
}

// instance is one launched browser.
type instance struct {
	cfg         Config
	exe         string
	pid         int
	pgid        int
	version     string
	started     time.Time
	allocCancel context.CancelFunc
	// root is the context of the browser's first tab, which owns the
	// process: tabs derive from it, and it ends when the browser does.
	root       context.Context
	rootCancel context.CancelFunc
	stopping   bool // Stop is ending it; set under Manager.mu
}

// NewManager returns a Manager with no browser running.
func NewManager(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Display == nil {
		opts.Display = EnvDisplay
	}
	return &Manager{opts: opts, log: opts.Logger, tabs: map[string]*Tab{}}
}

// Executable returns the browser binary to run, or ErrNotFound.
func (m *Manager) Executable() (string, error) {
	if m.opts.Executable != "" {
		return m.opts.Executable, nil
	}
	for _, name := range Executables {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errdefs.NotFoundf("no browser in this sandbox (looked for %s on PATH)", strings.Join(Executables, ", "))
}

// Status describes the browser; ErrNotFound when there is none to run.
func (m *Manager) Status() (sandboxapi.Browser, error) {
	exe, err := m.Executable()
	if err != nil {
		return sandboxapi.Browser{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.statusLocked(exe), nil
}

func (m *Manager) statusLocked(exe string) sandboxapi.Browser {
	st := sandboxapi.Browser{Executable: exe, Tabs: len(m.tabs)}
	if in := m.inst; in != nil {
		started := in.started.UTC()
		st.Running, st.Executable, st.Version, st.PID = true, in.exe, in.version, in.pid
		st.Headless, st.Display, st.Width, st.Height = in.cfg.Headless, in.cfg.Display, in.cfg.Width, in.cfg.Height
		st.StartedAt = &started
	}
	return st
}

var displayRE = regexp.MustCompile(`^[A-Za-z0-9.\-]*:[0-9]{1,5}(\.[0-9]{1,3})?$`)

// validate checks the form of a start request.
func validate(req sandboxapi.BrowserStartRequest) error {
	w, h := req.Width, req.Height
	if (w != 0 && (w < 100 || w > 7680)) || (h != 0 && (h < 100 || h > 4320)) {
		return errdefs.Invalidf("window size %dx%d is out of range (100x100 to 7680x4320)", w, h)
	}
	if req.Display == "" {
		return nil
	}
	if req.Headless != nil && *req.Headless {
		return errdefs.Invalidf("display %q and headless: true contradict each other", req.Display)
	}
	if !displayRE.MatchString(req.Display) {
		return errdefs.Invalidf("display %q is not an X display name such as \":99\"", req.Display)
	}
	return nil
}

// config turns a valid start request into a Config, choosing headless or
// a display as the comment of sandboxapi.BrowserStartRequest says.
func (m *Manager) config(req sandboxapi.BrowserStartRequest) (Config, error) {
	cfg := Config{Headless: true, Width: req.Width, Height: req.Height}
	if err := validate(req); err != nil {
		return cfg, err
	}
	if cfg.Width == 0 {
		cfg.Width = defaultWidth
	}
	if cfg.Height == 0 {
		cfg.Height = defaultHeight
	}
	switch {
	case req.Display != "":
		cfg.Headless, cfg.Display = false, req.Display
	case req.Headless != nil && !*req.Headless:
		d := m.opts.Display()
		if d == "" {
			return cfg, errdefs.Unprocessablef("headless: false needs an X display, and none is running (start the desktop, or pass display)")
		}
		cfg.Headless, cfg.Display = false, d
	case req.Headless == nil:
		if d := m.opts.Display(); d != "" {
			cfg.Headless, cfg.Display = false, d
		}
	}
	return cfg, nil
}

// conflicts reports how req asks for something other than the running
// browser's cfg; "" when it does not.
func conflicts(cfg Config, req sandboxapi.BrowserStartRequest) string {
	switch {
	case req.Headless != nil && *req.Headless != cfg.Headless:
		return fmt.Sprintf("headless=%v", cfg.Headless)
	case req.Display != "" && req.Display != cfg.Display:
		return fmt.Sprintf("display %q", cfg.Display)
	case req.Width != 0 && req.Width != cfg.Width, req.Height != 0 && req.Height != cfg.Height:
		return fmt.Sprintf("window %dx%d", cfg.Width, cfg.Height)
	}
	return ""
}

// Start starts the browser unless it runs already, and describes it. A
// running browser started differently from what req asks is a conflict:
// stop it first.
func (m *Manager) Start(ctx context.Context, req sandboxapi.BrowserStartRequest) (sandboxapi.Browser, error) {
	exe, err := m.Executable()
	if err != nil {
		return sandboxapi.Browser{}, err
	}
	if err := validate(req); err != nil {
		return sandboxapi.Browser{}, err
	}
	m.startMu.Lock()
	defer m.startMu.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return sandboxapi.Browser{}, errdefs.Unavailablef("sandboxd is shutting down")
	}
	if in := m.inst; in != nil {
		defer m.mu.Unlock()
		if c := conflicts(in.cfg, req); c != "" {
			return sandboxapi.Browser{}, errdefs.Conflictf("the browser is running with %s; stop it first to start it differently", c)
		}
		return m.statusLocked(exe), nil
	}
	m.mu.Unlock()

	cfg, err := m.config(req)
	if err != nil {
		return sandboxapi.Browser{}, err
	}
	in, err := m.launch(ctx, exe, cfg)
	if err != nil {
		return sandboxapi.Browser{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inst = in
	m.wg.Add(1)
	go m.watch(in)
	m.log.Info("browser: started", "pid", in.pid, "version", in.version, "headless", cfg.Headless, "display", cfg.Display)
	return m.statusLocked(exe), nil
}

// ensure returns the running browser, starting one with the defaults if
// none runs.
func (m *Manager) ensure(ctx context.Context) (*instance, error) {
	m.mu.Lock()
	in := m.inst
	m.mu.Unlock()
	if in != nil {
		return in, nil
	}
	if _, err := m.Start(ctx, sandboxapi.BrowserStartRequest{}); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inst == nil {
		return nil, errdefs.Unavailablef("the browser exited as it started")
	}
	return m.inst, nil
}

// launch starts a browser process and its first tab.
func (m *Manager) launch(ctx context.Context, exe string, cfg Config) (*instance, error) {
	env := m.opts.Env
	if env == nil {
		env = childEnv(os.Environ())
	}
	if !cfg.Headless {
		env = append(slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
			return strings.HasPrefix(kv, "DISPLAY=") || strings.HasPrefix(kv, "WAYLAND_DISPLAY=")
		}), "DISPLAY="+cfg.Display)
	}
	output := &tailBuffer{max: outputTail}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		// Chromium's own sandbox needs user namespaces, which a sandbox
		// does not offer; the sandbox is the isolation.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(cfg.Width, cfg.Height),
		chromedp.NoInheritEnv,
		chromedp.Env(env...),
		chromedp.CombinedOutput(output),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			// Its own process group, so Stop can end every process it
			// made; killed if the daemon dies without stopping it.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}),
	)
	if !cfg.Headless {
		opts = append(opts, chromedp.Flag("headless", false), chromedp.Flag("hide-scrollbars", false))
	}
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	root, rootCancel := chromedp.NewContext(allocCtx)
	in := &instance{cfg: cfg, exe: exe, started: time.Now(), allocCancel: allocCancel, root: root, rootCancel: rootCancel}

	// The first Run binds the browser's life to root, so it cannot carry
	// a deadline; bound it (and the caller's cancellation) from outside.
	timer := time.AfterFunc(startTimeout, rootCancel)
	stopAfter := context.AfterFunc(ctx, rootCancel)
	err := chromedp.Do(root)
	timer.Stop()
	stopAfter()
	if err == nil {
		if b := chromedp.FromContext(root).Browser; b != nil && b.Process() != nil {
			in.pid = b.Process().Pid
			in.pgid = in.pid
		}
		vctx, cancel := context.WithTimeout(root, 10*time.Second)
		var v cdpbrowser.GetVersionResult
		v, err = chromedp.CallBrowser(vctx, cdpbrowser.GetVersion, cdp.Empty{})
		cancel()
		in.version = v.Product
	}
	if err != nil {
		in.kill()
		msg := strings.TrimSpace(output.String())
		if len(msg) > 2048 {
			msg = "…" + msg[len(msg)-2048:]
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("browser: start: %w", ctx.Err())
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, errdefs.Wrap(errdefs.ErrUnprocessable, err, "the browser did not start: "+msg)
	}
	return in, nil
}

// watch waits for in to end, then forgets it and its tabs. A browser
// that ends without Stop (a crash, a kill from inside the sandbox) is
// logged and cleaned up the same way.
func (m *Manager) watch(in *instance) {
	defer m.wg.Done()
	<-in.root.Done()
	m.mu.Lock()
	stopping := in.stopping
	if m.inst == in {
		m.inst = nil
		clear(m.tabs)
	}
	m.mu.Unlock()
	if !stopping {
		m.log.Warn("browser: exited unexpectedly", "pid", in.pid)
		in.kill()
	}
}

// Stop ends the browser and every tab; ErrNotFound when none runs.
func (m *Manager) Stop(ctx context.Context) error {
	m.startMu.Lock()
	defer m.startMu.Unlock()
	return m.stop(ctx)
}

func (m *Manager) stop(ctx context.Context) error {
	m.mu.Lock()
	in := m.inst
	if in == nil {
		m.mu.Unlock()
		return errdefs.NotFoundf("the browser is not running")
	}
	in.stopping = true
	m.inst = nil
	clear(m.tabs)
	m.mu.Unlock()
	in.close(ctx)
	m.log.Info("browser: stopped", "pid", in.pid)
	return nil
}

// Close stops the browser, if any, and refuses to start another. It is
// idempotent and waits for the Manager's goroutines.
func (m *Manager) Close() {
	m.startMu.Lock()
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace+5*time.Second)
	_ = m.stop(ctx)
	cancel()
	m.startMu.Unlock()
	m.wg.Wait()
}

// close asks the browser to close, gives it closeGrace, then kills.
func (in *instance) close(ctx context.Context) {
	gctx, cancel := context.WithTimeout(in.root, closeGrace)
	stopAfter := context.AfterFunc(ctx, cancel)
	_ = chromedp.Cancel(gctx) // graceful Browser.close; cancels root when done
	stopAfter()
	cancel()
	in.kill()
}

// kill ends the browser's contexts (chromedp kills the process and every
// process using its profile directory, then removes the directory), kills
// whatever is left in its process group, and waits for the allocator.
func (in *instance) kill() {
	if in.pgid > 0 {
		_ = syscall.Kill(-in.pgid, syscall.SIGKILL)
	}
	in.rootCancel()
	in.allocCancel()
}

// childEnv is env without the daemon's token.
func childEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "CORRAL_SANDBOX_TOKEN=")
	})
}

// EnvDisplay returns $DISPLAY when it names a local X server whose socket
// accepts connections, else "".
func EnvDisplay() string {
	d := os.Getenv("DISPLAY")
	if d == "" || !displayRE.MatchString(d) {
		return ""
	}
	host, num, _ := strings.Cut(d, ":")
	if host != "" && host != "unix" {
		return d // a remote display: trust it
	}
	num, _, _ = strings.Cut(num, ".")
	if !XServerUp(num) {
		return ""
	}
	return d
}

// XServerUp reports whether display number num (":99" → "99") has a local
// X server accepting connections on its socket.
func XServerUp(num string) bool {
	c, err := net.DialTimeout("unix", filepath.Join("/tmp/.X11-unix", "X"+num), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func newID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + idEncoding.EncodeToString(b)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
