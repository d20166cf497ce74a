package sandboxd

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/corral-sh/corral/internal/sandboxd/reaper"
	"golang.org/x/sys/unix"
)

// RunConfig is what `corral sandboxd` needs: where to listen and the
// server's Config.
type RunConfig struct {
	Listen string
	Config Config
}

// Run serves the daemon until ctx ends.
//
// When the daemon is PID 1 (a container's init) it also reaps orphaned
// processes for its whole life, leaving the ones the process manager waits
// for itself. SIGTERM and SIGINT reach it as the end of ctx (see
// cmd/corral); shutdown then stops the managed processes (Serve), and
// finally sends SIGTERM, then SIGKILL after the kill grace, to everything
// else left in the PID namespace — daemons the agent started with setsid,
// for instance — so they can exit cleanly before the kernel kills them with
// their init.
func Run(ctx context.Context, rc RunConfig) error {
	// Descriptors inherited from whoever started us (an engine, a test
	// harness) must not reach the processes we start: mark every one
	// close-on-exec. Go's own are already; this costs one syscall.
	_ = unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	reserveThreads(spareThreads)
	if sock, ok := strings.CutPrefix(rc.Listen, "unix:"); ok && rc.Config.ForwardDir == "" {
		// Forwards reach the sockets next to the daemon's own: the
		// sandbox's socket directory, wherever it is mounted.
		rc.Config.ForwardDir = filepath.Dir(sock)
	}
	srv, err := New(rc.Config)
	if err != nil {
		return err
	}
	if reaper.IsInit() {
		r := reaper.Start(context.WithoutCancel(ctx), reaper.Options{
			IsManaged: srv.procs.Owns,
			Logger:    srv.log,
			OnReap:    func(int, syscall.WaitStatus) { srv.metrics.orphans.Inc() },
		})
		defer func() {
			tctx, cancel := context.WithTimeout(context.Background(), srv.cfg.KillGrace+10*time.Second)
			defer cancel()
			if err := r.TerminateAll(tctx, srv.cfg.KillGrace); err != nil {
				srv.log.Warn("sandboxd: ending leftover processes", "err", err)
			}
			r.Stop()
		}()
		srv.log.Info("sandboxd is PID 1: reaping orphans")
	}
	ln, err := Listen(rc.Listen)
	if err != nil {
		srv.Close()
		return fmt.Errorf("listen %s: %w", rc.Listen, err)
	}
	srv.log.Info("sandboxd listening", "addr", rc.Listen, "root", srv.cfg.Root, "auth", srv.cfg.Token != "")
	return srv.Serve(ctx, ln)
}
