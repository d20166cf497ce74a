// Package sandboxd is the HTTP face of the in-sandbox daemon
// (`corral sandboxd`, DESIGN.md §2). It wires the domain services —
// processes, files, ports, system info — to routes, middleware and the one
// problem+json error writer. Domain packages below it do not import net/http.
package sandboxd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-sh/corral/internal/sandboxd/forward"
	"github.com/corral-sh/corral/internal/sandboxd/procs"
)

// Config configures a Server.
type Config struct {
	// Root confines the files API; "/" when empty.
	Root string
	// Token, when set, is required as a bearer token on every request.
	Token string
	// KillGrace is how long DELETE and shutdown wait between SIGTERM and
	// SIGKILL; 5s when zero.
	KillGrace time.Duration
	// MaxProcesses caps live managed processes; 0 means 4096.
	MaxProcesses int
	// ForwardDir holds the unix sockets /v1/forwards may forward to;
	// forward.DefaultDir (/run/corral) when empty. Run makes it the
	// directory of the daemon's own unix socket.
	ForwardDir string
	// Logger receives request and error logs; slog.Default() when nil.
	Logger *slog.Logger
}

// Server is the sandbox daemon. Its lifetime: New starts nothing; Serve
// serves a listener until its context ends; Close stops every managed
// process. Processes never depend on connections: they live until they exit,
// are deleted, or the Server is closed.
type Server struct {
	cfg     Config
	log     *slog.Logger
	started time.Time
	procs   *procs.Manager
	files   *filesAPI
	system  *systemAPI
	desktop *desktopAPI // its processes stop on Close
	browser *browserAPI // the browser stops on Close
	lsp     *lspAPI     // language servers stop on Close
	metrics *metrics
	reg     *prometheus.Registry
	handler http.Handler
	// forwards serves /v1/forwards; Close shuts it down.
	forwards *forward.Manager
	// stopping is closed when shutdown begins, so long-lived streams
	// (SSE, WebSocket, long polls) end and let http.Server.Shutdown finish.
	stopping chan struct{}
}

// New builds a Server from cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = 5 * time.Second
	}
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = 4096
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, started: time.Now(), stopping: make(chan struct{})}
	s.reg = prometheus.NewRegistry()
	s.metrics = newMetrics(s.reg)
	s.procs = procs.NewManager(procs.Options{KillGrace: cfg.KillGrace, MaxProcesses: cfg.MaxProcesses, Logger: cfg.Logger})
	s.forwards = forward.New(forward.Options{Dir: cfg.ForwardDir, Logger: cfg.Logger})
	s.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "corral_sandboxd_processes_running",
		Help: "Running child processes, exec included.",
	}, func() float64 { return float64(s.procs.Running()) }))
	var err error
	if s.files, err = newFilesAPI(cfg.Root, s.stopping); err != nil {
		return nil, fmt.Errorf("sandboxd: files root %q: %w", cfg.Root, err)
	}
	s.system = newSystemAPI(s)
	s.desktop = newDesktopAPI(s)
	s.browser = newBrowserAPI(s)
	s.lsp = newLSPAPI(s)
	s.handler = s.routes()
	return s, nil
}

// Handler returns the daemon's HTTP handler, middleware included.
func (s *Server) Handler() http.Handler { return s.handler }

// Procs returns the process manager, for in-process callers.
func (s *Server) Procs() *procs.Manager { return s.procs }

// Serve serves ln until ctx is done, then shuts down gracefully: streams
// are told to end, in-flight requests get up to 5s, and managed processes
// are stopped (SIGTERM, then SIGKILL after the grace period).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.beginStop()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	<-errc
	s.Close()
	return err
}

func (s *Server) beginStop() {
	select {
	case <-s.stopping:
	default:
		close(s.stopping)
	}
}

// Close ends streams and stops every managed process. It is idempotent.
func (s *Server) Close() {
	s.beginStop()
	s.files.close()
	s.browser.close() // before the desktop: it may show on its display
	s.lsp.close()
	s.desktop.close()
	s.forwards.Shutdown()
	s.procs.Close()
}

// Listen opens a listener from a --listen value: "unix:/path.sock" or
// "host:port". A stale socket file is replaced; the socket is made 0660.
func Listen(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %q: %w", path, err)
		}
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, err
		}
		if err := os.Chmod(path, 0o660); err != nil {
			ln.Close()
			return nil, err
		}
		return ln, nil
	}
	return net.Listen("tcp", addr)
}
