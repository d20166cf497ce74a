// Package local runs sandboxd directly on the host, with NO isolation: its
// processes see the host's file system, network and processes and run as
// the user Corral runs as. It exists for development and for machines
// where nothing else works, and is refused unless enabled explicitly
// (--unsafe-local); every Create logs a warning saying so.
//
// Life cycle of a sandbox:
//
//	Create  makes the host state directory (token, socket directory, meta)
//	        and a workspace directory in it, and a cgroup with the spec's
//	        limits when the host allows (see package cgroups: memory, CPU
//	        and pids limits are the one thing local can enforce). It starts
//	        `corral sandboxd --listen unix:<state>/sock/sandboxd.sock
//	        --root <workspace>` detached (its own session, output to
//	        sandboxd.log, already inside the cgroup) in the workspace, and
//	        returns once it answers /v1/health. The files API is confined to
//	        the workspace, so /hello.txt there is <workspace>/hello.txt;
//	        commands see the real host paths. On failure nothing is left.
//	Get     reads the state directory; running while the recorded sandboxd
//	List    process (pid and start time) is alive.
//	Delete  kills everything in the cgroup; without one, it asks sandboxd to
//	        stop (SIGTERM: it ends the processes it manages) and kills it
//	        after a grace period. Then it removes the cgroup and the state
//	        directory. An unknown id is not an error.
//
// sandboxd is not an init here, so processes that daemonize escape it;
// only the cgroup catches them. Network "none" and disk limits are not
// enforced; they are recorded in the meta (Extra["limits_missing"]).
package local

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/cgroups"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// DefaultStateDir is where sandbox state lives when Config.StateDir is "".
const DefaultStateDir = "/var/lib/corral/local"

// HostTemplate is the only template local has: the host itself. The
// default template name is accepted as a synonym.
const HostTemplate = "host"

const runtimeName = "local"

// Keys of hoststate Meta.Extra.
const (
	metaPID     = "pid"            // sandboxd, as cgroups.Proc "pid:start"
	metaMissing = "limits_missing" // what the spec asked for and local cannot do
)

// Config configures the local backend.
type Config struct {
	// Unsafe must be true: the operator's explicit consent to running
	// sandboxes without isolation.
	Unsafe bool
	// Binary is the corral binary to run sandboxd from; the running
	// executable if "". It need not be static.
	Binary string
	// StateDir holds the per-sandbox host state; DefaultStateDir if "".
	StateDir string
	// CgroupRoot is where the cgroup file systems are mounted;
	// cgroups.DefaultRoot if "".
	CgroupRoot string
	// Logger receives the no-isolation warnings; slog.Default() if nil.
	Logger *slog.Logger
}

// Runtime is the local backend. It is safe for concurrent use. For each
// sandbox it started it keeps one goroutine waiting for sandboxd to exit
// (so it is reaped), which ends with the sandbox.
type Runtime struct {
	cfg   Config
	state hoststate.Dir
	cg    *cgroups.Hierarchy // nil: no limits
	log   *slog.Logger

	mu     sync.Mutex
	exited map[string]chan struct{} // closed once that sandboxd is reaped
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a local Runtime, or an ErrForbidden error unless cfg.Unsafe.
func New(cfg Config) (*Runtime, error) {
	if !cfg.Unsafe {
		return nil, errdefs.Forbiddenf("local runtime has NO isolation; enable it explicitly with --unsafe-local")
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Binary == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable: %w", err)
		}
		cfg.Binary = self
	}
	r := &Runtime{cfg: cfg, state: hoststate.Dir{Root: cfg.StateDir}, log: cfg.Logger, exited: map[string]chan struct{}{}}
	r.cg, _ = cgroups.Open(cfg.CgroupRoot)
	return r, nil
}

// Name is "local".
func (r *Runtime) Name() string { return runtimeName }

// Create starts sandboxd on the host and returns once it is healthy.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (*runtime.Sandbox, error) {
	spec, err := checkSpec(spec)
	if err != nil {
		return nil, err
	}
	r.log.Warn("local runtime: creating a sandbox with NO isolation (host files, network and processes)", "sandbox", spec.ID)
	saved := spec
	saved.Env = nil // may hold secrets
	sb, err := r.state.Create(hoststate.Meta{
		ID: spec.ID, Runtime: runtimeName, Template: HostTemplate, Spec: saved, CreatedAt: time.Now().UTC(),
		Extra: map[string]string{},
	}, os.Getuid(), os.Getgid())
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if derr := r.Delete(dctx, sb.Meta.ID); derr != nil {
				r.log.Warn("local runtime: cleaning up a failed create", "sandbox", sb.Meta.ID, "err", derr)
			}
		}
	}()
	workspace := filepath.Join(sb.Path, "workspace")
	if err := os.Mkdir(workspace, 0o755); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	group, err := r.group(sb, spec.Resources)
	if err != nil {
		return nil, err
	}
	exited, err := r.start(sb, spec, workspace, group)
	if err != nil {
		return nil, err
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	err = hoststate.WaitHealthy(ctx, sb, func() error {
		select {
		case <-exited:
			return fmt.Errorf("sandboxd exited while starting: %s", tail(filepath.Join(sb.Path, "sandboxd.log")))
		default:
			return nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("start sandbox %s: %w", sb.Meta.ID, err)
	}
	ok = true
	return sb.Runtime(runtime.StatusRunning), nil
}

// checkSpec applies runtime.Normalize and local's one template, the host.
func checkSpec(spec runtime.Spec) (runtime.Spec, error) {
	spec, err := runtime.Normalize(spec)
	if err != nil {
		return spec, err
	}
	switch spec.Template {
	case "", HostTemplate, runtime.DefaultTemplate:
		spec.Template = HostTemplate
	default:
		return spec, errdefs.Unprocessablef("the local runtime runs on the host: template %q is not available (use %q)", spec.Template, HostTemplate)
	}
	return spec, nil
}

// group makes the sandbox's cgroup, if the host has cgroups we may use,
// and records in the meta what the spec asks for that is not enforced.
func (r *Runtime) group(sb *hoststate.Sandbox, res runtime.Resources) (*cgroups.Group, error) {
	missing := []string{}
	if sb.Meta.Spec.Network == runtime.NetworkNone {
		missing = append(missing, "network")
	}
	if res.DiskMB > 0 {
		missing = append(missing, "disk")
	}
	limits := cgroups.Limits{CPUs: res.CPUs, MemoryBytes: res.MemoryMB << 20, PIDs: res.PIDs}
	var g *cgroups.Group
	if r.cg != nil {
		var err error
		if g, err = r.cg.Create(sb.Meta.ID, limits); err != nil {
			// Not ours to write (not root, a read-only mount): run
			// without, as on a host with no cgroups.
			r.log.Warn("local runtime: no cgroup for the sandbox", "sandbox", sb.Meta.ID, "err", err)
			g = nil
		}
	}
	if g != nil {
		missing = append(missing, g.Enforced.Missing(limits)...)
	} else {
		missing = append(missing, cgroups.Enforced{}.Missing(limits)...)
	}
	if len(missing) > 0 {
		r.log.Warn("local runtime: not enforced", "sandbox", sb.Meta.ID, "missing", missing)
		sb.Meta.Extra[metaMissing] = strings.Join(missing, ",")
	}
	return g, sb.Save()
}

// start runs sandboxd detached (own session), in the cgroup, and records
// its identity. The returned channel is closed once it has been reaped.
func (r *Runtime) start(sb *hoststate.Sandbox, spec runtime.Spec, workspace string, g *cgroups.Group) (<-chan struct{}, error) {
	logf, err := os.OpenFile(filepath.Join(sb.Path, "sandboxd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(r.cfg.Binary, "sandboxd", "--listen", "unix:"+sb.Socket(), "--root", workspace)
	cmd.Env = env(spec, sb.Token, workspace)
	cmd.Dir = workspace
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cgroups.Start(cmd, g); err != nil {
		return nil, fmt.Errorf("start sandboxd: %w", err)
	}
	done := make(chan struct{})
	r.mu.Lock()
	r.exited[sb.Meta.ID] = done
	r.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		r.mu.Lock()
		delete(r.exited, sb.Meta.ID)
		r.mu.Unlock()
		close(done)
	}()
	if p, err := cgroups.ProcOf(cmd.Process.Pid); err == nil {
		sb.Meta.Extra[metaPID] = p.String()
	}
	if err := sb.Save(); err != nil {
		_ = cmd.Process.Kill()
		return done, fmt.Errorf("save sandbox state: %w", err)
	}
	return done, nil
}

// env is sandboxd's environment: the host's PATH and nothing else of
// Corral's own (which may hold API keys), the spec's variables, the token.
func env(spec runtime.Spec, token, workspace string) []string {
	vars := map[string]string{"PATH": os.Getenv("PATH"), "HOME": workspace, "LANG": "C.UTF-8"}
	if vars["PATH"] == "" {
		vars["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	maps.Copy(vars, spec.Env)
	vars[runtime.TokenEnv] = token
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// tail returns the end of a log file for an error message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return strings.TrimSpace(string(b))
}
