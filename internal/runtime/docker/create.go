package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

const (
	// startTimeout bounds the wait for sandboxd's first health answer
	// when the caller's context has no earlier deadline.
	startTimeout = 2 * time.Minute
	// cleanupTimeout bounds removing what a failed Create made; it runs
	// even when the caller's context is already done.
	cleanupTimeout = 30 * time.Second
	// startLogLines is how much of a sandbox's output a failed start
	// reports.
	startLogLines = 20
)

// Create starts a sandbox and returns once its sandboxd is healthy. On
// failure it leaves no container and no state directory behind.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (*runtime.Sandbox, error) {
	spec, err := r.normalize(spec)
	if err != nil {
		return nil, err
	}
	if r.binErr != nil {
		return nil, fmt.Errorf("docker: create sandbox %s: %w", spec.ID, r.binErr)
	}
	hostCPUs := 0
	if spec.Resources.CPUs > 0 {
		if hostCPUs, err = r.hostCPUs(ctx); err != nil {
			return nil, err
		}
	}
	s, err := r.state.Create(hoststate.Meta{
		ID: spec.ID, Runtime: runtimeName, Template: spec.Template, Spec: spec,
		CreatedAt: time.Now().UTC(), Extra: map[string]string{},
	}, runtime.AgentUID, runtime.AgentGID)
	if err != nil {
		return nil, err
	}
	containerID, err := r.createContainer(ctx, s, hostCPUs)
	if err == nil {
		err = r.start(ctx, s, containerID)
	}
	if err != nil {
		if cerr := r.discard(ctx, spec.ID, containerID); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return s.Runtime(runtime.StatusRunning), nil
}

// createContainer creates the container of s and records its id (and any
// unenforced disk limit) in s's meta. It returns the container id.
func (r *Runtime) createContainer(ctx context.Context, s *hoststate.Sandbox, hostCPUs int) (string, error) {
	spec := s.Meta.Spec
	opts := client.ContainerCreateOptions{
		Name:       containerPrefix + spec.ID,
		Config:     containerConfig(spec, s.Token, r.state.Root),
		HostConfig: hostConfig(spec, r.bin, s.SocketDir(), hostCPUs),
	}
	res, diskRefused, err := r.createWithDiskLimit(ctx, opts, spec.Resources.DiskMB)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", &errdefs.Error{Class: errdefs.ErrUnprocessable, Err: err, Msg: fmt.Sprintf(
				"template %q is not an image docker has; build the default templates with `corral template build` (or docker pull/load the image): %v",
				spec.Template, err)}
		}
		return "", engineErr(err, "docker: create container for sandbox %s", spec.ID)
	}
	if diskRefused != "" {
		s.Meta.Extra[metaDiskLimit] = "not enforced: " + diskRefused
	}
	s.Meta.Extra[metaContainerID] = res.ID
	if err := s.Save(); err != nil {
		return res.ID, fmt.Errorf("docker: save meta of sandbox %s: %w", spec.ID, err)
	}
	return res.ID, nil
}

// createWithDiskLimit creates the container, with the storage option
// "size" when diskMB > 0. If the engine refuses it (overlay2 off xfs with
// pquota, among others), it creates the container without and returns the
// refusal, which it remembers so later creates skip the attempt.
func (r *Runtime) createWithDiskLimit(ctx context.Context, opts client.ContainerCreateOptions, diskMB int64) (client.ContainerCreateResult, string, error) {
	if diskMB <= 0 {
		res, err := r.cli.ContainerCreate(ctx, opts)
		return res, "", err
	}
	refused := r.diskRefusal()
	if refused == "" {
		opts.HostConfig.StorageOpt = map[string]string{"size": fmt.Sprintf("%dM", diskMB)}
		res, err := r.cli.ContainerCreate(ctx, opts)
		if err == nil || ctx.Err() != nil {
			return res, "", err
		}
		refused = err.Error()
		opts.HostConfig.StorageOpt = nil
	}
	res, err := r.cli.ContainerCreate(ctx, opts)
	if err != nil {
		return res, "", err // the refusal may have been about something else
	}
	r.setDiskRefusal(refused)
	return res, refused, nil
}

// start starts the container and waits for sandboxd to answer; a
// container that exits meanwhile fails the wait with its last log lines.
func (r *Runtime) start(ctx context.Context, s *hoststate.Sandbox, containerID string) error {
	if _, err := r.cli.ContainerStart(ctx, containerID, client.ContainerStartOptions{}); err != nil {
		return engineErr(err, "docker: start sandbox %s", s.Meta.ID)
	}
	wctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	err := hoststate.WaitHealthy(wctx, s, func() error { return r.exited(wctx, s.Meta.ID, containerID) })
	if err != nil {
		return fmt.Errorf("docker: sandbox %s: %w", s.Meta.ID, err)
	}
	return nil
}

// exited returns an error, with the container's last log lines, if the
// container is no longer running; nil while it runs.
func (r *Runtime) exited(ctx context.Context, id, containerID string) error {
	res, err := r.cli.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
	if err != nil {
		return engineErr(err, "inspect container")
	}
	st := res.Container.State
	if st == nil || st.Running {
		return nil
	}
	why := fmt.Sprintf("status %s, exit code %d", st.Status, st.ExitCode)
	if st.OOMKilled {
		why += ", killed for memory"
	}
	if st.Error != "" {
		why += ", " + st.Error
	}
	return fmt.Errorf("sandboxd exited while starting (%s); its last output:\n%s", why, r.lastLogs(ctx, containerID))
}

// lastLogs returns the last lines the container wrote, for error messages.
func (r *Runtime) lastLogs(ctx context.Context, containerID string) string {
	rc, err := r.cli.ContainerLogs(ctx, containerID, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(startLogLines),
	})
	if err != nil {
		return fmt.Sprintf("(no logs: %v)", err)
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil {
		fmt.Fprintf(&out, "(reading logs: %v)", err)
	}
	return strings.TrimSpace(out.String())
}

// discard removes what a failed Create made: the container if there is
// one, and the state directory. It runs even if ctx is done.
func (r *Runtime) discard(ctx context.Context, id, containerID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var errs []error
	if containerID != "" {
		if err := r.removeContainer(ctx, containerID); err != nil {
			errs = append(errs, engineErr(err, "docker: clean up container of sandbox %s", id))
		}
	}
	if err := r.state.Remove(id); err != nil {
		errs = append(errs, fmt.Errorf("docker: clean up state of sandbox %s: %w", id, err))
	}
	return errors.Join(errs...)
}

// hostCPUs returns the engine's CPU count, asking it once.
func (r *Runtime) hostCPUs(ctx context.Context) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ncpu > 0 {
		return r.ncpu, nil
	}
	info, err := r.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return 0, engineErr(err, "docker: engine info")
	}
	r.ncpu = info.Info.NCPU
	return r.ncpu, nil
}

// diskRefusal returns why the engine refused the size storage option, or
// "" if it has not (yet).
func (r *Runtime) diskRefusal() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.noDiskQuota
}

func (r *Runtime) setDiskRefusal(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noDiskQuota = why
}
