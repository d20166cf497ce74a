package containerd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	ctrd "github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	cerrdefs "github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/identifiers"
	"github.com/containerd/containerd/pkg/netns"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// Create starts a sandbox and returns once its sandboxd is healthy. On
// failure everything it made is removed again.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (_ *runtime.Sandbox, err error) {
	if err := r.validate(&spec); err != nil {
		return nil, err
	}
	c, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	ctx = withNamespace(ctx)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	img, err := r.image(ctx, c, spec.Template)
	if err != nil {
		return nil, err
	}
	st, err := r.state.Create(hoststate.Meta{
		ID: spec.ID, Runtime: name, Template: spec.Template, Spec: spec, CreatedAt: time.Now().UTC(),
		Extra: map[string]string{"image": img.Name(), "runtime_handler": r.cfg.RuntimeHandler},
	}, runtime.AgentUID, runtime.AgentGID)
	if err != nil {
		return nil, err
	}
	// From here on the id is ours (the state directory is made atomically),
	// except when containerd already has a container or snapshot of that
	// name: then only the state directory is ours to remove.
	ownEngine := true
	defer func() {
		if err == nil {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if ownEngine {
			_ = r.removeEngine(cctx, c, spec.ID) // the original error matters more
		}
		_ = r.state.Remove(spec.ID)
	}()

	// An egress sandbox's network namespace: made now for the container's
	// label, connected once the container exists. Until then a failure
	// removes it here; after, removeEngine detaches it by the label.
	var netPath string
	created := false
	if spec.Network == runtime.NetworkEgress {
		if netPath, err = r.newNetNS(spec.ID); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil && !created {
				_ = netns.LoadNetNS(netPath).Remove() // the original error matters more
			}
		}()
	}
	opts, err := r.specOpts(ctx, img, st, netPath)
	if err != nil {
		return nil, err
	}
	// The lease keeps the new snapshot from being collected before the
	// container record refers to it.
	lctx, done, err := c.WithLease(ctx)
	if err != nil {
		return nil, fmt.Errorf("containerd lease: %w", err)
	}
	defer done(context.WithoutCancel(ctx))
	ctr, err := c.NewContainer(lctx, spec.ID,
		ctrd.WithImageName(img.Name()),
		ctrd.WithSnapshotter(r.cfg.Snapshotter),
		ctrd.WithNewSnapshot(spec.ID, img),
		ctrd.WithRuntime(r.cfg.RuntimeHandler, nil),
		ctrd.WithNewSpec(opts...),
		ctrd.WithContainerLabels(labels(spec, netPath)),
	)
	if cerrdefs.IsAlreadyExists(err) {
		ownEngine = false
		return nil, errdefs.Conflictf("containerd already has a container or snapshot %q in namespace %s", spec.ID, Namespace)
	}
	if cerrdefs.IsInvalidArgument(err) {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, err, fmt.Sprintf("containerd refused sandbox %s: %v", spec.ID, err))
	}
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", spec.ID, err)
	}
	created = true
	if netPath != "" {
		if err := r.connect(ctx, spec.ID, netPath); err != nil {
			return nil, err
		}
	}
	task, err := ctr.NewTask(ctx, cio.LogFile(consoleLog(st)))
	if err != nil {
		return nil, fmt.Errorf("create task %s: %w%s", spec.ID, err, logTail(st))
	}
	if err := task.Start(ctx); err != nil {
		return nil, fmt.Errorf("start task %s: %w%s", spec.ID, err, logTail(st))
	}
	stopped := func() error {
		s, err := task.Status(ctx)
		if err != nil {
			return fmt.Errorf("task %s status: %w", spec.ID, err)
		}
		if s.Status == ctrd.Stopped {
			return fmt.Errorf("sandboxd exited with status %d before it was healthy", s.ExitStatus)
		}
		return nil
	}
	if err := hoststate.WaitHealthy(ctx, st, stopped); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w%s", spec.ID, err, logTail(st))
	}
	return st.Runtime(runtime.StatusRunning), nil
}

// validate fills the defaults of spec and refuses what this backend
// cannot do.
func (r *Runtime) validate(spec *runtime.Spec) error {
	norm, err := runtime.Normalize(*spec)
	if err != nil {
		return err
	}
	*spec = norm
	if err := identifiers.Validate(spec.ID); err != nil {
		return errdefs.Invalidf("sandbox id %q is not a valid containerd identifier", spec.ID)
	}
	if spec.Network == runtime.NetworkEgress {
		if _, err := r.network(); err != nil {
			return err
		}
	}
	res := spec.Resources
	if res.MemoryMB > 0 && res.MemoryMB < 6 {
		return errdefs.Invalidf("memory_mb %d is below the 6 MiB the kernel allows", res.MemoryMB)
	}
	if res.CPUs > 0 && res.CPUs*cpuPeriod < 1000 {
		return errdefs.Invalidf("cpus %g is below 0.01", res.CPUs)
	}
	if spec.Template == "" {
		spec.Template = r.cfg.DefaultTemplate
	}
	return nil
}

// labels are the container's labels: the sandbox id, the backend, the
// template, an egress sandbox's network namespace and the spec's labels
// under corral.label.
func labels(spec runtime.Spec, netPath string) map[string]string {
	l := map[string]string{
		LabelSandbox:  spec.ID,
		LabelRuntime:  name,
		LabelTemplate: spec.Template,
	}
	if netPath != "" {
		l[LabelNetNS] = netPath
	}
	for k, v := range spec.Labels {
		l[LabelUserPrefix+k] = v
	}
	return l
}

func consoleLog(st *hoststate.Sandbox) string { return filepath.Join(st.Path, "console.log") }

// logTail returns the end of the sandbox's console log, formatted to end
// an error message, or "" when it is empty.
func logTail(st *hoststate.Sandbox) string {
	const max = 2048
	f, err := os.Open(consoleLog(st))
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(fi.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, max))
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	return "; console: " + s
}
