package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// Get returns sandbox id from its container and its state directory; it
// is ErrNotFound when neither exists.
func (r *Runtime) Get(ctx context.Context, id string) (*runtime.Sandbox, error) {
	if runtime.CheckID(id) != nil {
		return nil, errdefs.NotFoundf("no sandbox %q", id)
	}
	cs, err := r.containers(ctx, id)
	if err != nil {
		return nil, err
	}
	s, err := r.state.Open(id)
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return nil, fmt.Errorf("docker: %w", err)
	}
	var c *container.Summary
	if len(cs) > 0 {
		c = &cs[0]
	}
	if c == nil && s == nil {
		return nil, errdefs.NotFoundf("no sandbox %q", id)
	}
	return join(c, s), nil
}

// List returns every sandbox of this Runtime's state directory: each
// container labelled with it, and each state directory, joined by id.
func (r *Runtime) List(ctx context.Context) ([]*runtime.Sandbox, error) {
	cs, err := r.containers(ctx, "")
	if err != nil {
		return nil, err
	}
	states, err := r.state.List()
	if err != nil {
		return nil, fmt.Errorf("docker: list state in %s: %w", r.state.Root, err)
	}
	byID := make(map[string]*hoststate.Sandbox, len(states))
	for _, s := range states {
		byID[s.Meta.ID] = s
	}
	out := make([]*runtime.Sandbox, 0, len(states))
	for i := range cs {
		id := cs[i].Labels[labelSandbox]
		out = append(out, join(&cs[i], byID[id]))
		delete(byID, id)
	}
	for _, s := range byID {
		out = append(out, join(nil, s))
	}
	slices.SortFunc(out, func(a, b *runtime.Sandbox) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Delete force-removes the sandbox's container, with its anonymous
// volumes, then its state directory. Deleting an unknown sandbox succeeds.
func (r *Runtime) Delete(ctx context.Context, id string) error {
	if runtime.CheckID(id) != nil {
		return nil // no sandbox can have that id
	}
	cs, err := r.containers(ctx, id)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := r.removeContainer(ctx, c.ID); err != nil {
			return engineErr(err, "docker: remove container of sandbox %s", id)
		}
	}
	if err := r.state.Remove(id); err != nil {
		return fmt.Errorf("docker: remove state of sandbox %s: %w", id, err)
	}
	return nil
}

// removeContainer force-removes a container with its anonymous volumes.
// A container already gone is fine; one another call is removing (the
// engine answers 409) is waited for, so concurrent Deletes all succeed.
func (r *Runtime) removeContainer(ctx context.Context, containerID string) error {
	_, err := r.cli.ContainerRemove(ctx, containerID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	for cerrdefs.IsConflict(err) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the engine to remove it: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		_, err = r.cli.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
		if err == nil {
			_, err = r.cli.ContainerRemove(ctx, containerID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// containers lists the containers of this Runtime, of sandbox id only
// when id is not "". Label filters are and-ed.
func (r *Runtime) containers(ctx context.Context, id string) ([]container.Summary, error) {
	f := make(client.Filters).Add("label", labelRuntime+"="+runtimeName, labelStateDir+"="+r.state.Root)
	if id != "" {
		f.Add("label", labelSandbox+"="+id)
	} else {
		f.Add("label", labelSandbox)
	}
	res, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, engineErr(err, "docker: list containers")
	}
	return res.Items, nil
}

// join makes the runtime view of a sandbox from its container and its
// state directory, either of which may be missing. It runs only when both
// are there and the container runs; without a state directory there is no
// token to reach it, so it can only be deleted.
func join(c *container.Summary, s *hoststate.Sandbox) *runtime.Sandbox {
	status := runtime.StatusStopped
	if c != nil && s != nil && c.State == container.StateRunning {
		status = runtime.StatusRunning
	}
	if s != nil {
		return s.Runtime(status)
	}
	return &runtime.Sandbox{
		ID:        c.Labels[labelSandbox],
		Runtime:   runtimeName,
		Template:  c.Labels[labelTemplate],
		Status:    status,
		Labels:    userLabels(c.Labels),
		CreatedAt: time.Unix(c.Created, 0).UTC(),
	}
}
