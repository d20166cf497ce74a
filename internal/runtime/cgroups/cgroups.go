// Package cgroups confines a sandbox's host processes in a control group
// with resource limits, on cgroup v1 (one hierarchy per controller) or v2
// (one unified hierarchy). The bwrap and local backends use it; container
// engines do the same themselves.
//
// Life cycle of a group, named by the sandbox id:
//
//	Create  makes the group under "corral/" with the limits: on v1
//	        /sys/fs/cgroup/<controller>/corral/<id> for memory, cpu,
//	        cpuset, pids and freezer; on v2 /sys/fs/cgroup/corral/<id>,
//	        after enabling the controllers in the parents'
//	        cgroup.subtree_control. Group.Enforced says which of the
//	        requested limits the kernel now enforces: a controller that is
//	        not mounted (or not delegated) is skipped, not an error.
//	Start   starts a command already inside the group, so everything it
//	        forks is confined from its first instruction (see start.go).
//	Kill    kills every process in the group, however fast they fork:
//	        cgroup.kill on v2, else freeze, SIGKILL each member, thaw,
//	        until the group is empty.
//	Remove  kills and removes the group directories; a missing group is
//	        fine, so it is idempotent and works from a new process that
//	        only knows the id (Hierarchy.Group).
//
// Nothing here is kept in memory between calls: a group is found again
// from its id, which is what lets a restarted control plane clean up.
package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
)

// DefaultRoot is where the cgroup file systems are mounted.
const DefaultRoot = "/sys/fs/cgroup"

// Parent is the directory, under each hierarchy, holding Corral's groups.
const Parent = "corral"

// Limits for a group; a zero field is no limit.
type Limits struct {
	// CPUs is a CPU-time quota in CPUs (1.5 = 150 ms per 100 ms). The
	// group is also pinned to ceil(CPUs) CPUs, so nproc reports it.
	CPUs float64
	// MemoryBytes caps memory (page cache and tmpfs included); swap is
	// disabled where the kernel can account it.
	MemoryBytes int64
	// PIDs caps the number of tasks (processes and threads).
	PIDs int64
}

// Enforced reports which requested limits the kernel enforces.
type Enforced struct {
	Memory bool // memory.limit_in_bytes or memory.max
	NoSwap bool // memory.memsw.limit_in_bytes or memory.swap.max
	CPU    bool // cpu.cfs_quota_us or cpu.max
	CPUSet bool // cpuset.cpus: nproc reflects the CPUs
	PIDs   bool // pids.max
}

// Missing lists the limits l asks for that e does not enforce, by name.
func (e Enforced) Missing(l Limits) []string {
	var out []string
	add := func(want, have bool, name string) {
		if want && !have {
			out = append(out, name)
		}
	}
	add(l.MemoryBytes > 0, e.Memory, "memory")
	add(l.MemoryBytes > 0, e.NoSwap, "swap")
	add(l.CPUs > 0, e.CPU, "cpu")
	add(l.CPUs > 0, e.CPUSet, "cpuset")
	add(l.PIDs > 0, e.PIDs, "pids")
	return out
}

// The v1 controllers a group joins. freezer only serves Kill.
var v1Controllers = []string{"memory", "cpu", "cpuset", "pids", "freezer"}

// The v2 controllers a group enables.
var v2Controllers = []string{"cpu", "cpuset", "memory", "pids"}

// Hierarchy is a mounted cgroup tree: v2 unified, or v1 controllers in
// sub-directories of one root.
type Hierarchy struct {
	root string
	v2   bool
	// v1 holds the mount directory of each v1 controller present.
	v1 map[string]string
}

// Open detects the cgroup version under root (DefaultRoot when ""). It
// fails with an ErrUnavailable error when neither a v2 tree nor any of the
// v1 controllers Corral uses is mounted there. It does not check that the
// caller may create groups; Create reports that.
func Open(root string) (*Hierarchy, error) {
	if root == "" {
		root = DefaultRoot
	}
	h := &Hierarchy{root: root}
	if exists(filepath.Join(root, "cgroup.controllers")) {
		h.v2 = true
		return h, nil
	}
	h.v1 = map[string]string{}
	for _, c := range v1Controllers {
		dir := filepath.Join(root, c)
		if exists(filepath.Join(dir, "cgroup.procs")) {
			h.v1[c] = dir
		}
	}
	if len(h.v1) == 0 {
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, nil, fmt.Sprintf("no cgroup v2 or v1 controllers mounted at %s", root))
	}
	return h, nil
}

// V2 reports whether h is a unified (v2) hierarchy.
func (h *Hierarchy) V2() bool { return h.v2 }

// Root is the directory h was opened at.
func (h *Hierarchy) Root() string { return h.root }

// String describes h for logs: "v2 /sys/fs/cgroup" or "v1 memory,cpu,...".
func (h *Hierarchy) String() string {
	if h.v2 {
		return "v2 " + h.root
	}
	var cs []string
	for _, c := range v1Controllers {
		if _, ok := h.v1[c]; ok {
			cs = append(cs, c)
		}
	}
	return "v1 " + strings.Join(cs, ",")
}

// Group is one sandbox's cgroup: a directory per v1 controller, or one v2
// directory. Its methods read and write the cgroup files; a Group holds no
// other state, so any number of values may name the same group.
type Group struct {
	h  *Hierarchy
	id string
	// dirs maps a v1 controller (or "" on v2) to the group's directory.
	dirs map[string]string
	// Enforced is set by Create; a Group from Hierarchy.Group has none.
	Enforced Enforced
}

// Group returns the group of sandbox id, whether or not it exists, to
// inspect, kill or remove it. id must be a valid sandbox id.
func (h *Hierarchy) Group(id string) *Group {
	g := &Group{h: h, id: id, dirs: map[string]string{}}
	if h.v2 {
		g.dirs[""] = filepath.Join(h.root, Parent, id)
		return g
	}
	for c, mount := range h.v1 {
		g.dirs[c] = filepath.Join(mount, Parent, id)
	}
	return g
}

// Dirs returns the group's directories, one per hierarchy it lives in.
func (g *Group) Dirs() []string {
	out := make([]string, 0, len(g.dirs))
	for _, d := range g.dirs {
		out = append(out, d)
	}
	return out
}

// Dir returns the group's directory for a v1 controller ("memory", ...),
// or its only directory on v2 whatever the controller; "" when the
// controller is not mounted.
func (g *Group) Dir(controller string) string {
	if g.h.v2 {
		return g.dirs[""]
	}
	return g.dirs[controller]
}

// Create makes the group of sandbox id with limits l and returns it with
// Enforced filled in. An existing group of that id is reused (its limits
// rewritten), so a retried Create does not fail. On error nothing is left.
func (h *Hierarchy) Create(id string, l Limits) (*Group, error) {
	if id == "" || strings.ContainsAny(id, "/.") {
		return nil, errdefs.Invalidf("cgroup name %q is not a sandbox id", id)
	}
	g := h.Group(id)
	var err error
	if h.v2 {
		err = g.createV2(l)
	} else {
		err = g.createV1(l)
	}
	if err != nil {
		g.rmdirs()
		return nil, err
	}
	return g, nil
}

// rmdirs removes the group's directories, ignoring errors: the cleanup of
// a failed Create, when the group cannot have members yet.
func (g *Group) rmdirs() {
	for _, d := range g.dirs {
		_ = os.Remove(d)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writeFile writes a cgroup control file; the kernel's error says why a
// value was refused, so it is kept.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// mkdir creates dir, tolerating an existing one.
func mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	return nil
}
