package containerd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/containers"
	cerrdefs "github.com/containerd/containerd/errdefs"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// Get returns the sandbox id as containerd and the state directory know
// it. A sandbox only one of them knows is reported stopped.
func (r *Runtime) Get(ctx context.Context, id string) (*runtime.Sandbox, error) {
	if runtime.CheckID(id) != nil {
		return nil, errdefs.NotFoundf("no sandbox %q", id)
	}
	c, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	ctx = withNamespace(ctx)
	st, err := r.state.Open(id)
	if err != nil && !isNotFound(err) {
		return nil, err
	}
	var rec *containers.Container
	got, err := c.ContainerService().Get(ctx, id)
	switch {
	case err == nil && got.Labels[LabelSandbox] == id:
		rec = &got
	case err != nil && !cerrdefs.IsNotFound(err):
		return nil, fmt.Errorf("get container %s: %w", id, err)
	}
	if st == nil && rec == nil {
		return nil, errdefs.NotFoundf("no sandbox %q", id)
	}
	status := noTask
	if rec != nil {
		resp, err := c.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: id})
		switch {
		case err == nil:
			status = resp.Process.Status
		case !cerrdefs.IsNotFound(cerrdefs.FromGRPC(err)):
			return nil, fmt.Errorf("get task %s: %w", id, cerrdefs.FromGRPC(err))
		}
	}
	return r.join(st, rec, status), nil
}

// List returns every sandbox in containerd's corral namespace or in the
// state directory, oldest first.
func (r *Runtime) List(ctx context.Context) ([]*runtime.Sandbox, error) {
	c, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	ctx = withNamespace(ctx)
	recs, err := c.ContainerService().List(ctx, fmt.Sprintf("labels.%q", LabelSandbox))
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	resp, err := c.TaskService().List(ctx, &tasks.ListTasksRequest{})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", cerrdefs.FromGRPC(err))
	}
	states, err := r.state.List()
	if err != nil {
		return nil, fmt.Errorf("list state of %s: %w", r.cfg.StateDir, err)
	}
	status := make(map[string]tasktypes.Status, len(resp.Tasks))
	for _, t := range resp.Tasks {
		status[t.ID] = t.Status
	}
	byID := make(map[string]*hoststate.Sandbox, len(states))
	for _, st := range states {
		byID[st.Meta.ID] = st
	}
	var out []*runtime.Sandbox
	for i := range recs {
		id := recs[i].Labels[LabelSandbox]
		if id != recs[i].ID {
			continue // not made by Create
		}
		task, ok := status[id]
		if !ok {
			task = noTask
		}
		out = append(out, r.join(byID[id], &recs[i], task))
		delete(byID, id)
	}
	for _, st := range byID {
		out = append(out, r.join(st, nil, noTask))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// noTask stands for a container without a task; containerd's own
// Status_UNKNOWN means a task whose state could not be read.
const noTask tasktypes.Status = -1

// join makes the view of one sandbox from its state directory and its
// container record, either of which may be missing (nil), and its task's
// status. Running means the task runs; a missing container or task means
// stopped; a task whose state containerd could not read is unknown.
func (r *Runtime) join(st *hoststate.Sandbox, rec *containers.Container, task tasktypes.Status) *runtime.Sandbox {
	status := runtime.StatusStopped
	switch {
	case rec == nil:
	case task == tasktypes.Status_RUNNING:
		status = runtime.StatusRunning
	case task == tasktypes.Status_UNKNOWN:
		// containerd reports a task whose shim did not answer in time
		// as UNKNOWN; a missing task is passed here as noTask instead.
		status = runtime.StatusUnknown
	}
	if st != nil {
		return st.Runtime(status)
	}
	// A container without state (the directory was removed by hand, or a
	// crash in Create): report what the labels say so it can be deleted.
	id := rec.Labels[LabelSandbox]
	where := hoststate.Sandbox{Path: filepath.Join(r.cfg.StateDir, id)}
	sb := &runtime.Sandbox{
		ID: id, Runtime: name, Template: rec.Labels[LabelTemplate], Status: status,
		Endpoint: where.Endpoint(), CreatedAt: rec.CreatedAt,
	}
	for k, v := range rec.Labels {
		if key, ok := strings.CutPrefix(k, LabelUserPrefix); ok {
			if sb.Labels == nil {
				sb.Labels = map[string]string{}
			}
			sb.Labels[key] = v
		}
	}
	return sb
}

func isNotFound(err error) bool { return errors.Is(err, errdefs.ErrNotFound) }
