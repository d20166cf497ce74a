// Package containerd runs sandboxes as containerd containers, through the
// containerd 1.x Go client, in the containerd namespace "corral" (never
// docker's "moby"). The OCI runtime is containerd's runtime handler of
// choice: runc by default, runsc or kata when configured.
//
// Life cycle of a sandbox (see package runtime for the contract):
//
//	Create   writes the host state directory (socket dir, token, meta),
//	         then, under a containerd lease, prepares a snapshot of the
//	         template image, creates the container with its OCI spec
//	         (uid 1000, no capabilities, no new privileges, seccomp default
//	         profile, cgroup limits, a fresh network namespace with only
//	         loopback, the corral binary and the socket dir bind-mounted),
//	         creates the task with its stdout/stderr going to
//	         <state>/<id>/console.log (written by the shim, so the task never
//	         depends on our process) and starts it. It returns when sandboxd
//	         answers /v1/health on the socket; if the task stops first, the
//	         error carries the tail of console.log. Any failure removes the
//	         task, container, snapshot and state directory again.
//	Get/List read containerd's container records (label corral.sandbox)
//	         and tasks, joined with the state directories; either side
//	         alone is reported (status stopped) so Delete can clean it.
//	Delete   kills the task (SIGKILL to every process, waited for), deletes
//	         it, deletes the container with its snapshot and removes the
//	         state directory. Each step tolerates "not found".
//
// Templates are images in containerd's content store: ImportTemplate turns
// a root filesystem tar into a one-layer OCI image and unpacks it for the
// snapshotter. Template names are normalized like docker's ("corral-default"
// is "docker.io/library/corral-default:latest"), so an image loaded with
// `ctr -n corral images import` is found under the same name.
//
// Network: "none" is a fresh network namespace with loopback only (runc
// brings it up); "egress" a namespace wired by the CNI plugins to a NAT
// bridge (network.go). Disk limits (Resources.DiskMB) are not enforced:
// the overlayfs snapshotter has no quota.
package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	ctrd "github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// Namespace is the containerd namespace holding every Corral sandbox,
// template image and snapshot.
const Namespace = "corral"

// Container labels.
const (
	LabelSandbox    = "corral.sandbox"  // the sandbox id
	LabelRuntime    = "corral.runtime"  // "containerd"
	LabelTemplate   = "corral.template" // the template as the spec named it
	LabelUserPrefix = "corral.label."   // + a Spec.Labels key
)

const (
	name             = "containerd"
	defaultStateDir  = "/var/lib/corral/containerd"
	defaultAddress   = "/run/containerd/containerd.sock"
	defaultHandler   = "io.containerd.runc.v2"
	defaultSnapshots = "overlayfs"

	dialTimeout    = 5 * time.Second
	startTimeout   = 60 * time.Second // bounds Create when ctx has no earlier deadline
	cleanupTimeout = 30 * time.Second // bounds the cleanup after a failed Create
)

// Config configures the backend. Zero fields take the defaults shown.
type Config struct {
	// Binary is the static corral binary mounted into sandboxes; "" is the
	// running executable (which must then be static).
	Binary string
	// StateDir holds the per-sandbox host state (/var/lib/corral/containerd).
	StateDir string
	// Address is containerd's socket (/run/containerd/containerd.sock).
	Address string
	// RuntimeHandler is the containerd runtime (io.containerd.runc.v2;
	// io.containerd.runsc.v1 or io.containerd.kata.v2 when installed).
	RuntimeHandler string
	// Snapshotter prepares root filesystems (overlayfs).
	Snapshotter string
	// DefaultTemplate is used when Spec.Template is "" (corral-default).
	DefaultTemplate string
	// EgressSubnet is the IPv4 prefix egress sandboxes take addresses
	// from (10.89.0.0/16); CNIPluginDirs are where the CNI plugins are
	// looked for (/usr/lib/cni, /opt/cni/bin); NetNSDir pins the egress
	// sandboxes' network namespaces (/run/corral/netns).
	EgressSubnet  string
	CNIPluginDirs []string
	NetNSDir      string
}

// Runtime is the containerd backend.
type Runtime struct {
	cfg   Config
	state hoststate.Dir

	mu     sync.Mutex   // guards client
	client *ctrd.Client // dialed on first use, shared by all calls

	nextCPU atomic.Uint32 // rotates cpuset placement across creates
	net     egressNet     // the CNI network of egress sandboxes
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns the backend. It does not contact containerd (see Available),
// but checks that the corral binary is static.
func New(cfg Config) (*Runtime, error) {
	bin, err := runtime.StaticBinary(cfg.Binary)
	if err != nil {
		return nil, err
	}
	cfg.Binary = bin
	if cfg.StateDir == "" {
		cfg.StateDir = defaultStateDir
	}
	if cfg.Address == "" {
		cfg.Address = defaultAddress
	}
	if cfg.RuntimeHandler == "" {
		cfg.RuntimeHandler = defaultHandler
	}
	if cfg.Snapshotter == "" {
		cfg.Snapshotter = defaultSnapshots
	}
	if cfg.DefaultTemplate == "" {
		cfg.DefaultTemplate = runtime.DefaultTemplate
	}
	if cfg.EgressSubnet == "" {
		cfg.EgressSubnet = DefaultEgressSubnet
	}
	if len(cfg.CNIPluginDirs) == 0 {
		cfg.CNIPluginDirs = defaultPluginDirs
	}
	if cfg.NetNSDir == "" {
		cfg.NetNSDir = defaultNetNSDir
	}
	return &Runtime{cfg: cfg, state: hoststate.Dir{Root: cfg.StateDir}}, nil
}

// Name is "containerd".
func (r *Runtime) Name() string { return name }

// Available reports whether containerd answers on its socket, with a
// message saying what is wrong (ErrUnavailable) when it does not.
func (r *Runtime) Available(ctx context.Context) error {
	c, err := r.conn(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Version(ctx); err != nil {
		return unavailable(r.cfg.Address, err)
	}
	return nil
}

// Close closes the connection to containerd; sandboxes keep running.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client == nil {
		return nil
	}
	err := r.client.Close()
	r.client = nil
	return err
}

// conn returns the client, dialing containerd on first use, and ctx in
// the corral namespace.
func (r *Runtime) conn(ctx context.Context) (*ctrd.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		return r.client, nil
	}
	if _, err := os.Stat(r.cfg.Address); err != nil {
		return nil, unavailable(r.cfg.Address, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := ctrd.New(r.cfg.Address, ctrd.WithDefaultNamespace(Namespace), ctrd.WithTimeout(dialTimeout))
	if err != nil {
		return nil, unavailable(r.cfg.Address, err)
	}
	r.client = c
	return c, nil
}

// withNamespace puts ctx in the corral namespace, whatever it carried.
func withNamespace(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, Namespace)
}

func unavailable(addr string, err error) error {
	msg := fmt.Sprintf("containerd is not reachable at %s: %v", addr, err)
	if errors.Is(err, os.ErrNotExist) {
		msg = fmt.Sprintf("containerd is not running: no socket at %s", addr)
	}
	return errdefs.Wrap(errdefs.ErrUnavailable, err, msg)
}
