package bwrap

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/cgroups"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// deleteTimeout bounds Delete when ctx has no deadline.
const deleteTimeout = 30 * time.Second

// Get returns the sandbox id from its state directory; it is running
// while the bwrap process recorded there is alive.
func (r *Runtime) Get(ctx context.Context, id string) (*runtime.Sandbox, error) {
	return r.state.Get(id, status)
}

// List returns every sandbox with a state directory, running or not.
func (r *Runtime) List(ctx context.Context) ([]*runtime.Sandbox, error) {
	all, err := r.state.Sandboxes(status)
	if err != nil {
		return nil, fmt.Errorf("list bwrap sandboxes: %w", err)
	}
	return all, nil
}

func status(sb *hoststate.Sandbox) string {
	if p, err := cgroups.ParseProc(sb.Meta.Extra[metaPID]); err == nil && p.Alive() {
		return runtime.StatusRunning
	}
	return runtime.StatusStopped
}

// Delete kills the sandbox's processes and removes its cgroup and state
// directory. It works from any process (it needs only the id and what the
// host holds) and succeeds for a sandbox that is already gone.
//
// Order: the cgroup's members die first (everything bwrap started, however
// it was forked); then the namespace's init and bwrap by their recorded
// identity, which is all there is to kill on a host without cgroups, since
// the kernel ends every process of a pid namespace with its init.
func (r *Runtime) Delete(ctx context.Context, id string) error {
	if runtime.CheckID(id) != nil {
		return nil // no sandbox can have that id
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deleteTimeout)
		defer cancel()
	}
	var group *cgroups.Group
	if r.cg != nil {
		group = r.cg.Group(id)
	}
	sb, err := r.state.Open(id)
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		// Unreadable meta: still remove what the id alone names.
		r.log.Warn("bwrap: deleting a sandbox with unreadable state", "sandbox", id, "err", err)
	}
	var errs []error
	if group != nil {
		if err := group.Kill(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if sb != nil {
		for _, key := range []string{metaInit, metaPID} {
			if p, err := cgroups.ParseProc(sb.Meta.Extra[key]); err == nil {
				if err := p.Kill(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if err := r.waitGone(ctx, sb); err != nil {
			errs = append(errs, err)
		}
	}
	if group != nil {
		if err := group.Remove(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Keep the state directory: it is how a retry finds the rest.
		return fmt.Errorf("delete sandbox %s: %w", id, errors.Join(errs...))
	}
	if err := r.state.Remove(id); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	return nil
}

// waitGone waits until sb's bwrap and the init of its pid namespace have
// both exited: bwrap reaped by this Runtime's waiter if it started it, and
// each no longer alive (a zombie waiting for its parent counts as gone).
// Killed together, the two can die in either order under load.
func (r *Runtime) waitGone(ctx context.Context, sb *hoststate.Sandbox) error {
	r.mu.Lock()
	exited := r.exited[sb.Meta.ID]
	r.mu.Unlock()
	if exited != nil {
		select {
		case <-exited:
		case <-ctx.Done():
			return fmt.Errorf("bwrap did not exit: %w", ctx.Err())
		}
	}
	for _, key := range []string{metaPID, metaInit} {
		p, err := cgroups.ParseProc(sb.Meta.Extra[key])
		if err != nil {
			continue
		}
		for p.Alive() {
			select {
			case <-ctx.Done():
				return fmt.Errorf("bwrap process %d did not exit: %w", p.PID, ctx.Err())
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	return nil
}
