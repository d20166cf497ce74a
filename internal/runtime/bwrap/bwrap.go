// Package bwrap runs sandboxes with bubblewrap: Linux namespaces and
// cgroup limits around `corral sandboxd`, no image engine and no daemon
// (DESIGN.md §4).
//
// Life cycle of a sandbox:
//
//	Create  validates the spec, makes the host state directory (token,
//	        socket directory, meta, plus a workspace and a home directory)
//	        and a cgroup with the spec's limits, then starts bwrap
//	        detached (its own session, stdio to bwrap.log in the state
//	        directory, no --die-with-parent) and already inside the cgroup
//	        (cgroups.Start), so the sandbox outlives the control plane.
//	        bwrap unshares user, pid, ipc, uts, cgroup and (for network
//	        "none") net namespaces, builds the root from the template's
//	        unpacked root file system, read-only, and runs sandboxd as the
//	        child of its pid-namespace init, which reaps orphans. The pid
//	        of bwrap and of that init, each with its start time, go into
//	        the meta so that a later process can tell them from reused
//	        pids. Create returns once sandboxd answers /v1/health through
//	        the socket; if bwrap exits first the error carries the tail of
//	        bwrap.log. On any failure everything is removed again.
//	Get     reads the state directory; the sandbox is running while its
//	List    bwrap process is alive, stopped otherwise.
//	Delete  kills everything in the cgroup, and the namespace's init (whose
//	        death ends every process in the pid namespace, which matters
//	        when there is no cgroup), then removes the cgroup and the state
//	        directory with the workspace. An unknown id is not an error.
//
// Inside, processes run as uid and gid 1000 with no capabilities and no
// new privileges. On the host too: when Corral runs as root it starts bwrap
// as uid 1000 (which maps only itself into the sandbox's user namespace),
// so a process that escaped the namespaces would still be an ordinary
// user, never root. That is the uid Docker gives a container's uid 1000
// without user-namespace remapping. bwrap then opens every mounted path as
// uid 1000, so the state and template directories (and the corral binary,
// or else a copy is made under the state directory) must be reachable by
// it; Create says which is not.
//
// The root: a tmpfs made read-only at the end, holding read-only binds of
// the template's top-level directories (or of the host's /usr, /etc, /bin,
// /lib... for the template "host"), a fresh /proc and /dev, tmpfs on /tmp,
// /var/tmp and /run, the sandbox's socket directory at /run/corral, the
// corral binary at /.corral/bin/corral, its own cgroup (read-only) at
// /sys/fs/cgroup so sandboxd reports its limits, and two writable
// directories: /home/agent (seeded from the template's) and /workspace.
// With disk_mb, /workspace and the tmpfs mounts are each capped at that
// size; without it /workspace is a directory in the state directory. tmpfs
// pages are charged to the sandbox's memory limit.
//
// Limits come from cgroups (see package cgroups for v1 and v2); whichever
// the machine cannot enforce is logged on Create and recorded in the meta
// (Extra["limits_missing"]).
package bwrap

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/cgroups"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// Defaults for Config's empty fields.
const (
	DefaultStateDir     = "/var/lib/corral/bwrap"
	DefaultTemplatesDir = "/var/lib/corral/templates"
)

// HostTemplate is the template that is the host's own /usr, /etc, /bin,
// /lib..., read-only: no import needed.
const HostTemplate = "host"

const runtimeName = "bwrap"

// Config configures the bwrap backend. Zero fields take their defaults.
type Config struct {
	// Binary is the host path of a static corral binary to mount into
	// sandboxes; runtime.StaticBinary("") (the running executable) if "".
	Binary string
	// StateDir holds the per-sandbox host state; DefaultStateDir if "".
	StateDir string
	// TemplatesDir holds unpacked templates, <dir>/<name>/rootfs;
	// DefaultTemplatesDir if "".
	TemplatesDir string
	// Bwrap is the bubblewrap executable; "bwrap" on $PATH if "".
	Bwrap string
	// CgroupRoot is where the cgroup file systems are mounted;
	// cgroups.DefaultRoot if "".
	CgroupRoot string
	// Logger receives warnings (unenforced limits); slog.Default() if nil.
	Logger *slog.Logger
}

// Runtime is the bwrap backend. It is safe for concurrent use.
//
// For each sandbox it started itself, a Runtime keeps one goroutine
// waiting for bwrap to exit, so the process is reaped; it ends with the
// sandbox. Sandboxes started by an earlier process were re-parented to init
// when that process died, and init reaps them.
type Runtime struct {
	cfg   Config
	bwrap string // "" when not found; Available and Create say so
	state hoststate.Dir
	cg    *cgroups.Hierarchy // nil: no cgroups, no limits
	cgErr error
	// cred is the host user bwrap runs as: the agent's uid when Corral is
	// root, nil (Corral's own user) otherwise.
	cred *syscall.Credential
	log  *slog.Logger

	binOnce sync.Once
	bin     string // the binary as the sandbox user can reach it
	binErr  error

	mu sync.Mutex
	// exited holds, for each sandbox this instance started, a channel
	// closed once its bwrap process has been reaped.
	exited map[string]chan struct{}
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a bwrap Runtime. It fails if the corral binary is not a
// static executable; a missing bwrap is reported by Available and Create.
func New(cfg Config) (*Runtime, error) {
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	if cfg.TemplatesDir == "" {
		cfg.TemplatesDir = DefaultTemplatesDir
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	bin, err := runtime.StaticBinary(cfg.Binary)
	if err != nil {
		return nil, err
	}
	cfg.Binary = bin
	r := &Runtime{cfg: cfg, state: hoststate.Dir{Root: cfg.StateDir}, log: cfg.Logger, exited: map[string]chan struct{}{}}
	bw := cfg.Bwrap
	if bw == "" {
		bw = "bwrap"
	}
	if p, err := exec.LookPath(bw); err == nil {
		r.bwrap = p
	}
	r.cg, r.cgErr = cgroups.Open(cfg.CgroupRoot)
	if os.Geteuid() == 0 {
		r.cred = &syscall.Credential{Uid: runtime.AgentUID, Gid: runtime.AgentGID, Groups: []uint32{}}
	}
	return r, nil
}

// Name is "bwrap".
func (r *Runtime) Name() string { return runtimeName }

// Available checks that bwrap exists and can make the namespaces a
// sandbox needs, as the user it will run as, by running
// `bwrap --unshare-all --ro-bind / / true`. Its error is ErrUnavailable.
func (r *Runtime) Available(ctx context.Context) error {
	if r.bwrap == "" {
		name := r.cfg.Bwrap
		if name == "" {
			name = "bwrap"
		}
		return errdefs.Unavailablef("bubblewrap (%s) is not installed", name)
	}
	cmd := exec.CommandContext(ctx, r.bwrap, "--unshare-all", "--ro-bind", "/", "/", "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return errdefs.Wrap(errdefs.ErrUnavailable, err,
			fmt.Sprintf("bubblewrap cannot create namespaces here: %v: %s", err, bytes.TrimSpace(out.Bytes())))
	}
	return nil
}

// hostUID and hostGID are the host ids bwrap runs as.
func (r *Runtime) hostIDs() (int, int) {
	if r.cred != nil {
		return int(r.cred.Uid), int(r.cred.Gid)
	}
	return os.Getuid(), os.Getgid()
}
