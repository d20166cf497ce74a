package bwrap

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/cgroups"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// Keys of hoststate Meta.Extra.
const (
	metaPID     = "pid"            // bwrap, as cgroups.Proc "pid:start"
	metaInit    = "init"           // the pid namespace's init (bwrap's child)
	metaCgroup  = "cgroup"         // the hierarchy the group lives in, "" if none
	metaMissing = "limits_missing" // requested limits the host cannot enforce
)

// healthyTimeout bounds Create's wait for sandboxd when ctx has no deadline.
const healthyTimeout = time.Minute

// logFile is bwrap's (and sandboxd's) stdout and stderr, in the state dir.
const logFile = "bwrap.log"

// Create starts a sandbox and returns once its sandboxd is healthy.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (*runtime.Sandbox, error) {
	spec, err := runtime.Normalize(spec)
	if err != nil {
		return nil, err
	}
	tpl, err := templateName(spec.Template)
	if err != nil {
		return nil, err
	}
	rootfs := ""
	if tpl != HostTemplate {
		rootfs = r.rootfs(tpl)
		if !isDir(rootfs) {
			return nil, errdefs.Unprocessablef("template %q is not imported (no %s)", tpl, rootfs)
		}
	}
	if r.bwrap == "" {
		return nil, r.Available(ctx)
	}
	bin, err := r.binary()
	if err != nil {
		return nil, fmt.Errorf("corral binary for sandboxes: %w", err)
	}

	saved := spec
	saved.Env = nil // may hold secrets; sandboxd has them, the state dir need not
	sb, err := r.state.Create(hoststate.Meta{
		ID: spec.ID, Runtime: runtimeName, Template: tpl, Spec: saved, CreatedAt: time.Now().UTC(),
		Extra: map[string]string{},
	}, runtime.AgentUID, runtime.AgentGID)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if derr := r.Delete(dctx, sb.Meta.ID); derr != nil {
				r.log.Warn("bwrap: cleaning up a failed create", "sandbox", sb.Meta.ID, "err", derr)
			}
		}
	}()

	l, err := r.prepare(sb, spec, rootfs, bin)
	if err != nil {
		return nil, err
	}
	exited, initProc, err := r.start(sb, l)
	if err != nil {
		return nil, err
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, healthyTimeout)
		defer cancel()
	}
	died := func() error {
		select {
		case <-exited:
			return fmt.Errorf("bwrap exited while sandboxd was starting: %s", strings.TrimSpace(logTail(filepath.Join(sb.Path, logFile), 2048)))
		default:
			return nil
		}
	}
	err = waitSocket(ctx, sb.Socket(), died)
	if err == nil {
		err = hoststate.WaitHealthy(ctx, sb, died)
	}
	if err != nil {
		return nil, fmt.Errorf("start sandbox %s: %w", sb.Meta.ID, err)
	}
	// The init's identity came in while sandboxd started.
	if p, got := <-initProc; got {
		sb.Meta.Extra[metaInit] = p.String()
		if err := sb.Save(); err != nil {
			return nil, fmt.Errorf("save sandbox state: %w", err)
		}
	}
	ok = true
	return sb.Runtime(runtime.StatusRunning), nil
}

// prepare makes the sandbox's writable directories and its cgroup.
func (r *Runtime) prepare(sb *hoststate.Sandbox, spec runtime.Spec, rootfs, bin string) (*launch, error) {
	uid, gid := r.hostIDs()
	if err := reachable(sb.SocketDir(), uid, gid); err != nil {
		return nil, fmt.Errorf("state dir %s must be reachable by the sandbox user: %w", r.cfg.StateDir, err)
	}
	if rootfs != "" {
		if err := reachable(rootfs, uid, gid); err != nil {
			return nil, fmt.Errorf("template dir %s must be reachable by the sandbox user: %w", r.cfg.TemplatesDir, err)
		}
	}
	l := &launch{id: sb.Meta.ID, spec: spec, rootfs: rootfs, state: sb, binary: bin, home: filepath.Join(sb.Path, "home")}
	homeSrc := ""
	if rootfs != "" {
		homeSrc = filepath.Join(rootfs, strings.TrimPrefix(runtime.AgentHome, "/"))
	}
	if err := seedDir(homeSrc, l.home, uid, gid); err != nil {
		return nil, fmt.Errorf("home directory: %w", err)
	}
	if spec.Resources.DiskMB == 0 {
		l.workspace = filepath.Join(sb.Path, "workspace")
		if err := seedDir("", l.workspace, uid, gid); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	limits := cgroups.Limits{CPUs: spec.Resources.CPUs, MemoryBytes: spec.Resources.MemoryMB << 20, PIDs: spec.Resources.PIDs}
	var enforced cgroups.Enforced
	if r.cg != nil {
		g, err := r.cg.Create(l.id, limits)
		if err != nil {
			// Not ours to write (not root, a read-only mount): run
			// without, as on a host with no cgroups.
			r.log.Warn("bwrap: no cgroup for the sandbox", "sandbox", l.id, "err", err)
		} else {
			l.group, enforced = g, g.Enforced
			sb.Meta.Extra[metaCgroup] = r.cg.String()
		}
	}
	if missing := enforced.Missing(limits); len(missing) > 0 {
		r.log.Warn("bwrap: resource limits NOT enforced on this host", "sandbox", l.id, "missing", missing, "cgroups", r.cgErr)
		sb.Meta.Extra[metaMissing] = strings.Join(missing, ",")
	}
	return l, sb.Save()
}

// start runs bwrap detached and inside the cgroup and records its
// identity in the meta. It returns a channel closed once bwrap has exited
// and been reaped, and one that yields the identity of bwrap's child, the
// pid namespace's init, when bwrap reports it (--info-fd), then closes.
func (r *Runtime) start(sb *hoststate.Sandbox, l *launch) (exited <-chan struct{}, init <-chan cgroups.Proc, err error) {
	args, err := l.args()
	if err != nil {
		return nil, nil, err
	}
	logf, err := os.OpenFile(filepath.Join(sb.Path, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer logf.Close()
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}

	cmd := exec.Command(r.bwrap, args...)
	// The environment, token included, goes through bwrap's own
	// environment rather than --setenv, which would put the token in
	// bwrap's command line: readable in ps on the host and, as the
	// namespace init's /proc/1/cmdline, inside the sandbox.
	cmd.Env = env(l.spec, sb.Token)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{infoW} // fd infoFD
	// Setsid: not in Corral's process group or session, so neither a
	// terminal's ^C nor Corral's exit reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: r.cred}
	err = cgroups.Start(cmd, l.group)
	infoW.Close()
	if err != nil {
		infoR.Close()
		return nil, nil, fmt.Errorf("start bwrap: %w", err)
	}
	done := make(chan struct{})
	r.mu.Lock()
	r.exited[l.id] = done
	r.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		r.mu.Lock()
		delete(r.exited, l.id)
		r.mu.Unlock()
		close(done)
	}()
	// bwrap writes its info once the namespaces exist and closes the
	// pipe; a bwrap that fails earlier just closes it.
	initc := make(chan cgroups.Proc, 1)
	go func() {
		defer close(initc)
		defer infoR.Close()
		var info struct {
			ChildPID int `json:"child-pid"`
		}
		_ = infoR.SetReadDeadline(time.Now().Add(healthyTimeout))
		if err := json.NewDecoder(infoR).Decode(&info); err != nil || info.ChildPID <= 0 {
			return
		}
		if p, err := cgroups.ProcOf(info.ChildPID); err == nil {
			initc <- p
		}
	}()

	// The pid is ours until Wait reaps it, so reading its start time now
	// cannot race with pid reuse.
	if p, err := cgroups.ProcOf(cmd.Process.Pid); err == nil {
		sb.Meta.Extra[metaPID] = p.String()
	}
	if err := sb.Save(); err != nil {
		_ = cmd.Process.Kill()
		return done, initc, fmt.Errorf("save sandbox state: %w", err)
	}
	return done, initc, nil
}

// waitSocket waits for sandboxd's socket to appear, checking every half
// millisecond: it exists from the moment sandboxd listens, so the health
// check that follows answers at once, where polling /v1/health alone
// backs off to tens of milliseconds.
func waitSocket(ctx context.Context, path string, died func() error) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if err := died(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandboxd did not listen on %s: %w", path, ctx.Err())
		case <-time.After(500 * time.Microsecond):
		}
	}
}
