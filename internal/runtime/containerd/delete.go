package containerd

import (
	"context"
	"fmt"

	ctrd "github.com/containerd/containerd"
	cerrdefs "github.com/containerd/containerd/errdefs"

	"github.com/corral-sh/corral/internal/runtime"
)

// Delete kills the sandbox's processes and removes its task, container,
// snapshot and state directory. A sandbox (or any part of one) that is
// already gone is fine.
func (r *Runtime) Delete(ctx context.Context, id string) error {
	if runtime.CheckID(id) != nil {
		return nil // no sandbox can have this id
	}
	c, err := r.conn(ctx)
	if err != nil {
		return err
	}
	if err := r.removeEngine(withNamespace(ctx), c, id); err != nil {
		return err
	}
	if err := r.state.Remove(id); err != nil {
		return fmt.Errorf("remove state of %s: %w", id, err)
	}
	return nil
}

// removeEngine removes what containerd holds of sandbox id: the task
// (killed with SIGKILL to all its processes and waited for), an egress
// sandbox's network attachment, the container and its snapshot — or the
// snapshot alone, left by a Create that failed before the container
// existed. ctx must be in the corral namespace.
func (r *Runtime) removeEngine(ctx context.Context, c *ctrd.Client, id string) error {
	ctr, err := c.LoadContainer(ctx, id)
	if cerrdefs.IsNotFound(err) {
		err := c.SnapshotService(r.cfg.Snapshotter).Remove(ctx, id)
		if err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("remove snapshot %s: %w", id, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("load container %s: %w", id, err)
	}
	info, err := ctr.Info(ctx, ctrd.WithoutRefreshedMetadata) // as LoadContainer read it
	if err != nil {
		return fmt.Errorf("container %s: %w", id, err)
	}
	task, err := ctr.Task(ctx, nil)
	switch {
	case err == nil:
		if _, err := task.Delete(ctx, ctrd.WithProcessKill); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("delete task %s: %w", id, err)
		}
	case !cerrdefs.IsNotFound(err):
		return fmt.Errorf("load task %s: %w", id, err)
	}
	if path := info.Labels[LabelNetNS]; path != "" {
		if err := r.detach(ctx, id, path); err != nil {
			return err
		}
	}
	if err := ctr.Delete(ctx, ctrd.WithSnapshotCleanup); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("delete container %s: %w", id, err)
	}
	return nil
}
