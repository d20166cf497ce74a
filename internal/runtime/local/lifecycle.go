package local

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/cgroups"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// stopGrace is how long Delete lets sandboxd end its processes after
// SIGTERM before it is killed (sandboxd's own default grace is 5 s).
const stopGrace = 8 * time.Second

// Get returns sandbox id; it is running while its sandboxd is alive.
func (r *Runtime) Get(ctx context.Context, id string) (*runtime.Sandbox, error) {
	return r.state.Get(id, status)
}

// List returns every sandbox with a state directory.
func (r *Runtime) List(ctx context.Context) ([]*runtime.Sandbox, error) {
	all, err := r.state.Sandboxes(status)
	if err != nil {
		return nil, fmt.Errorf("list local sandboxes: %w", err)
	}
	return all, nil
}

func status(sb *hoststate.Sandbox) string {
	if p, err := cgroups.ParseProc(sb.Meta.Extra[metaPID]); err == nil && p.Alive() {
		return runtime.StatusRunning
	}
	return runtime.StatusStopped
}

// Delete stops the sandbox's processes and removes its cgroup and state
// directory; an unknown id is not an error.
func (r *Runtime) Delete(ctx context.Context, id string) error {
	if runtime.CheckID(id) != nil {
		return nil
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, stopGrace+30*time.Second)
		defer cancel()
	}
	sb, err := r.state.Open(id)
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		r.log.Warn("local runtime: deleting a sandbox with unreadable state", "sandbox", id, "err", err)
	}
	var group *cgroups.Group
	if r.cg != nil {
		group = r.cg.Group(id)
	}
	var errs []error
	if group != nil {
		if err := group.Kill(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if sb != nil {
		if err := r.stop(ctx, sb); err != nil {
			errs = append(errs, err)
		}
	}
	if group != nil {
		if err := group.Remove(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete sandbox %s: %w", id, errors.Join(errs...))
	}
	if err := r.state.Remove(id); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	return nil
}

// stop ends sandboxd if it still runs (it does not when its cgroup was
// killed): SIGTERM, so it stops the processes it manages, then SIGKILL
// after stopGrace. It returns once sandboxd is gone.
func (r *Runtime) stop(ctx context.Context, sb *hoststate.Sandbox) error {
	p, err := cgroups.ParseProc(sb.Meta.Extra[metaPID])
	if err != nil {
		return nil
	}
	r.mu.Lock()
	exited := r.exited[sb.Meta.ID]
	r.mu.Unlock()
	gone := func() bool {
		if exited != nil {
			select {
			case <-exited:
				return true
			default:
				return false
			}
		}
		return !p.Alive()
	}
	if !gone() && p.Alive() {
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
	}
	deadline := time.Now().Add(stopGrace)
	for !gone() {
		if time.Now().After(deadline) {
			if err := p.Kill(); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandboxd (pid %d) did not exit: %w", p.PID, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
