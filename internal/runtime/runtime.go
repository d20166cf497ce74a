// Package runtime is the contract between Corral and the engines that run
// sandboxes (DESIGN.md §4). A sandbox is an isolated environment running
// `corral sandboxd` as its init; Corral reaches that daemon over a unix
// socket in a per-sandbox host directory mounted at /run/corral inside
// (so it works with network "none"), with a per-sandbox bearer token.
//
// Life cycle of a sandbox, for every backend:
//
//	Create   prepares the host state directory (socket dir, token), starts
//	         the sandbox and returns only once sandboxd answers /v1/health
//	         through the socket. On failure nothing is left behind and the
//	         error carries the engine's own message.
//	Get/List report sandboxes from the engine and the host state, never
//	         from memory alone: a new process (a restarted control plane)
//	         finds every sandbox an earlier one created.
//	Delete   stops the sandbox and removes everything it had on the host
//	         (container, mounts, cgroups, state directory). Deleting a
//	         sandbox that is already gone succeeds.
//
// Sandboxes never depend on the process that created them: killing it
// leaves them running.
//
// Backends live in sub-packages (docker, containerd, bwrap, local), each
// with `var _ runtime.Runtime = (*Runtime)(nil)`; the catalog package lists
// them. Every backend passes the shared conformance suite in runtimetest.
package runtime

import (
	"context"
	"time"
)

// Runtime creates and manages sandboxes on one engine.
type Runtime interface {
	// Name is the backend's name: "docker", "containerd", "bwrap", "local".
	Name() string
	// Create starts a sandbox; it returns when sandboxd is healthy.
	Create(ctx context.Context, spec Spec) (*Sandbox, error)
	// Get returns one sandbox; an unknown id is errdefs.ErrNotFound.
	Get(ctx context.Context, id string) (*Sandbox, error)
	// List returns every sandbox this backend manages on this host.
	List(ctx context.Context) ([]*Sandbox, error)
	// Delete removes a sandbox and all its host state; idempotent.
	Delete(ctx context.Context, id string) error
}

// Network modes.
const (
	NetworkNone   = "none"   // loopback only: nothing outside the sandbox is reachable
	NetworkEgress = "egress" // outbound access
)

// Resources are limits; a zero field means the backend's default (none).
type Resources struct {
	CPUs     float64 `json:"cpus,omitempty"`
	MemoryMB int64   `json:"memory_mb,omitempty"`
	PIDs     int64   `json:"pids,omitempty"`
	DiskMB   int64   `json:"disk_mb,omitempty"`
}

// Spec describes a sandbox to create.
type Spec struct {
	// ID is the sandbox id; NewID() when empty. Callers that must record
	// the id before the sandbox exists (for crash recovery) set it.
	ID string
	// Template names the image (docker, containerd) or unpacked root
	// filesystem (bwrap); "" is the backend's default template.
	Template  string
	Resources Resources
	// Network is NetworkNone (the default when empty) or NetworkEgress.
	Network string
	// Env is set for sandboxd and so inherited by every process it starts.
	Env map[string]string
	// Labels are kept with the sandbox and reported by Get and List.
	Labels map[string]string
}

// Sandbox statuses.
const (
	StatusRunning = "running"
	StatusStopped = "stopped" // the engine has it, but sandboxd is not running
	// StatusUnknown: the engine has it but could not say whether it runs,
	// as containerd does when a busy shim is too slow to answer. Callers
	// treat it as alive: only a stopped or missing sandbox is given up on.
	StatusUnknown = "unknown"
)

// Sandbox is a created sandbox and how to reach its daemon.
type Sandbox struct {
	ID       string
	Runtime  string
	Template string
	Status   string
	// Endpoint is sandboxd's address as client.New takes it:
	// "unix:/host/state/dir/sandboxd.sock" or "http://host:port".
	Endpoint string
	// Token is sandboxd's bearer token.
	Token     string
	Labels    map[string]string
	CreatedAt time.Time
}

// Paths inside every sandbox.
const (
	SocketDir       = "/run/corral" // host state dir's socket dir is mounted here
	SocketPath      = SocketDir + "/sandboxd.sock"
	BinaryPath      = "/.corral/bin/corral" // the corral binary, mounted read-only
	WorkspaceDir    = "/workspace"
	AgentUID        = 1000
	AgentGID        = 1000
	AgentHome       = "/home/agent"
	DefaultTemplate = "corral-default"
)
