// Package docker runs sandboxes as Docker Engine containers (DESIGN.md §4).
//
// Life cycle of a sandbox:
//
//	Create  validates the spec, makes the host state directory (token,
//	        socket directory, meta) and creates a container named
//	        "corral-<id>" from the template image. The container's init is
//	        `corral sandboxd`: the static corral binary is bind-mounted
//	        read-only at runtime.BinaryPath and the state directory's
//	        socket directory at runtime.SocketDir, so Corral reaches the
//	        daemon over a unix socket even with network "none". The
//	        container runs as uid 1000 with every capability dropped, no new
//	        privileges, the engine's default seccomp profile, no swap and the
//	        spec's limits. Create returns once sandboxd answers /v1/health;
//	        on any failure it removes the container and the state directory.
//	Get     joins the container (found by label) with the state directory.
//	List    does the same for every sandbox; a container without a state
//	        directory, or a state directory without a container, is listed
//	        as stopped so that Delete can clean it up.
//	Delete  force-removes the container (and its anonymous volumes), then
//	        the state directory. An unknown id is not an error.
//
// Dockerd owns the containers, so sandboxes outlive the process that made
// them; everything Get and List report comes from the engine and the state
// directory, never from memory, and a new Runtime finds every sandbox an
// earlier one created. Containers carry the state directory's path as a
// label, so two Runtimes with different state directories on one engine
// never see (or delete) each other's sandboxes.
//
// Disk limits: the workspace lives in the container's writable layer, and
// disk_mb becomes the storage option "size". Only some storage drivers
// accept it (overlay2 needs xfs mounted with pquota); when the engine
// refuses, the sandbox is created without a disk limit and its meta records
// why (Extra["disk_limit"]).
package docker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// DefaultStateDir is where sandbox state lives when Config.StateDir is "".
const DefaultStateDir = "/var/lib/corral/docker"

// Labels on every sandbox container.
const (
	labelSandbox    = "corral.sandbox"   // the sandbox id
	labelRuntime    = "corral.runtime"   // "docker"
	labelStateDir   = "corral.state-dir" // the state root of the Runtime that owns it
	labelTemplate   = "corral.template"  // the template as the spec named it
	labelUserPrefix = "corral.label."    // + the key of a spec label
)

// Keys of hoststate Meta.Extra.
const (
	metaContainerID = "container_id"
	metaDiskLimit   = "disk_limit" // set when disk_mb is not enforced, with the reason
)

const (
	runtimeName     = "docker"
	containerPrefix = "corral-" // + the sandbox id: the container's name
)

// Config configures the docker backend. Zero fields take their defaults.
type Config struct {
	// Binary is the host path of a static corral binary to mount into
	// sandboxes; runtime.StaticBinary("") (the running executable) if "".
	Binary string
	// StateDir holds the per-sandbox host state; DefaultStateDir if "".
	StateDir string
	// Host is the docker host ("unix:///var/run/docker.sock",
	// "tcp://..."); from DOCKER_HOST and the other DOCKER_* variables if "".
	Host string
	// DefaultTemplate is the image of sandboxes whose spec names none;
	// runtime.DefaultTemplate if "".
	DefaultTemplate string
}

// Runtime is the docker backend. It is safe for concurrent use.
type Runtime struct {
	cli      *client.Client
	host     string
	state    hoststate.Dir
	template string
	// bin is the static binary to mount; binErr why there is none. Only
	// Create needs it, so a non-static binary does not stop List or Delete.
	bin    string
	binErr error

	// mu guards ncpu, the engine's CPU count (0 until asked; held across
	// that one Info call), and noDiskQuota, the engine's refusal of the
	// storage option "size", remembered so later creates do not try again.
	mu          sync.Mutex
	ncpu        int
	noDiskQuota string
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a docker backend. It does not contact the engine; Available
// does.
func New(cfg Config) (*Runtime, error) {
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	stateDir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("docker: state dir %q: %w", cfg.StateDir, err)
	}
	if cfg.DefaultTemplate == "" {
		cfg.DefaultTemplate = runtime.DefaultTemplate
	}
	opts := []client.Opt{client.FromEnv}
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker: client for %q: %w", cfg.Host, err)
	}
	r := &Runtime{
		cli:      cli,
		host:     cli.DaemonHost(),
		state:    hoststate.Dir{Root: stateDir},
		template: cfg.DefaultTemplate,
	}
	r.bin, r.binErr = runtime.StaticBinary(cfg.Binary)
	return r, nil
}

// Name is "docker".
func (r *Runtime) Name() string { return runtimeName }

// Close releases the engine connection. Sandboxes keep running.
func (r *Runtime) Close() error { return r.cli.Close() }

// Available reports whether the engine answers, negotiating the API
// version (dockerd 20.10 speaks 1.41). Its error is ErrUnavailable.
func (r *Runtime) Available(ctx context.Context) error {
	if _, err := r.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return errdefs.Wrap(errdefs.ErrUnavailable, err,
			fmt.Sprintf("docker engine at %s is not available (is dockerd running, and may this user use its socket?): %v", r.host, err))
	}
	return nil
}

// engineErr wraps an engine error with %w under the errdefs class its
// status maps to, keeping the engine's message in what clients see.
func engineErr(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	var class error
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", msg, err)
	case cerrdefs.IsNotFound(err):
		class = errdefs.ErrNotFound
	case cerrdefs.IsConflict(err):
		class = errdefs.ErrConflict
	case cerrdefs.IsInvalidArgument(err):
		class = errdefs.ErrInvalid
	case client.IsErrConnectionFailed(err), cerrdefs.IsUnavailable(err):
		class = errdefs.ErrUnavailable
	default:
		return fmt.Errorf("%s: %w", msg, err)
	}
	return &errdefs.Error{Class: class, Msg: msg + ": " + err.Error(), Err: err}
}
