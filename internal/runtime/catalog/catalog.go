// Package catalog lists every runtime backend, strongest isolation first,
// and opens them by name or picks the strongest one available here.
//
// This file is the one place that names the backends; there is no init()
// registration. Adding a backend means adding its Entry below.
package catalog

import (
	"path/filepath"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/bwrap"
	"github.com/corral-sh/corral/internal/runtime/containerd"
	"github.com/corral-sh/corral/internal/runtime/docker"
	"github.com/corral-sh/corral/internal/runtime/local"
)

// DefaultStateRoot holds every backend's host state, one directory each.
const DefaultStateRoot = "/var/lib/corral"

// Config configures the backends. Zero fields take each backend's
// defaults.
type Config struct {
	// Binary is the static corral binary mounted into sandboxes; "" is the
	// running executable.
	Binary string
	// StateRoot holds the backends' host state: backend b keeps its own in
	// StateRoot/b, and bwrap its unpacked templates in StateRoot/templates.
	// DefaultStateRoot when empty.
	StateRoot string
	// UnsafeLocal allows the local backend, which runs sandboxes as plain
	// host processes without any isolation.
	UnsafeLocal bool
	// DockerHost is the Docker engine's address; from DOCKER_HOST when "".
	DockerHost string
	// ContainerdAddress is containerd's socket; its default when "".
	ContainerdAddress string
	// ContainerdHandler is containerd's runtime handler (runc, runsc,
	// kata); io.containerd.runc.v2 when "".
	ContainerdHandler string
}

// Entry is one backend.
type Entry struct {
	Name string
	// Isolation says what separates a sandbox from the host.
	Isolation string
	// New makes the backend without contacting its engine; whether the
	// engine is usable is the backend's Available.
	New func(Config) (runtime.Runtime, error)
}

// entries are the backends, strongest isolation first. Auto picks the
// first available one.
var entries = []Entry{
	{
		Name:      "kubernetes",
		Isolation: "pod; gVisor or Kata by RuntimeClass",
		New: func(Config) (runtime.Runtime, error) {
			return nil, errdefs.Unavailablef("not built yet")
		},
	},
	{
		Name:      "containerd",
		Isolation: "container (OCI runtime: runc, runsc, kata)",
		New: func(c Config) (runtime.Runtime, error) {
			return open(containerd.New(containerd.Config{
				Binary: c.Binary, StateDir: c.stateDir("containerd"),
				Address: c.ContainerdAddress, RuntimeHandler: c.ContainerdHandler,
			}))
		},
	},
	{
		Name:      "docker",
		Isolation: "container (runc via Docker Engine)",
		New: func(c Config) (runtime.Runtime, error) {
			return open(docker.New(docker.Config{Binary: c.Binary, StateDir: c.stateDir("docker"), Host: c.DockerHost}))
		},
	},
	{
		Name:      "bwrap",
		Isolation: "namespaces and cgroups (bubblewrap)",
		New: func(c Config) (runtime.Runtime, error) {
			return open(bwrap.New(bwrap.Config{Binary: c.Binary, StateDir: c.stateDir("bwrap"), TemplatesDir: c.stateDir("templates")}))
		},
	},
	{
		Name:      "local",
		Isolation: "none: host processes",
		New: func(c Config) (runtime.Runtime, error) {
			// local refuses to be made without Unsafe, saying how to consent.
			return open(local.New(local.Config{Unsafe: c.UnsafeLocal, Binary: c.Binary, StateDir: c.stateDir("local")}))
		},
	},
}

// Entries returns the backends, strongest isolation first.
func Entries() []Entry { return append([]Entry(nil), entries...) }

// Names returns the backends' names, strongest isolation first.
func Names() []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names
}

func (c Config) stateDir(backend string) string {
	root := c.StateRoot
	if root == "" {
		root = DefaultStateRoot
	}
	return filepath.Join(root, backend)
}

// open turns a backend's (*Runtime, error) into (runtime.Runtime, error)
// without a non-nil interface holding a nil pointer.
func open[R runtime.Runtime](r R, err error) (runtime.Runtime, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}
