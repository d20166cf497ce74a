package sandboxd

import (
	"context"
	"fmt"
)

// RunConfig is what `corral sandboxd` needs: where to listen and the
// server's Config.
type RunConfig struct {
	Listen string
	Config Config
}

// Run serves the daemon until ctx ends. When the daemon is PID 1 it also
// reaps orphaned processes (see the reaper package).
func Run(ctx context.Context, rc RunConfig) error {
	srv, err := New(rc.Config)
	if err != nil {
		return err
	}
	ln, err := Listen(rc.Listen)
	if err != nil {
		srv.Close()
		return fmt.Errorf("listen %s: %w", rc.Listen, err)
	}
	srv.log.Info("sandboxd listening", "addr", rc.Listen, "root", srv.cfg.Root, "auth", srv.cfg.Token != "")
	return srv.Serve(ctx, ln)
}
