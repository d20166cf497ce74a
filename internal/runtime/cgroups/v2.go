package cgroups

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// createV2 enables Corral's controllers on the way down (root, then
// corral/), makes the group and writes the limits. A controller the root
// does not offer (not available, or bound to a v1 hierarchy on a hybrid
// system) or refuses to delegate is left out: its limits are simply not
// enforced, which Enforced reports.
//
// The v2 "no internal processes" rule: corral/ never holds processes
// itself, only groups, so enabling controllers in its subtree_control is
// always allowed. The root is exempt from the rule.
func (g *Group) createV2(l Limits) error {
	root := g.h.root
	parent := filepath.Join(root, Parent)
	avail, err := readFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	var want []string
	for _, c := range strings.Fields(avail) {
		if slices.Contains(v2Controllers, c) {
			want = append(want, c)
		}
	}
	enableControllers(root, want)
	if err := mkdir(parent); err != nil {
		return err
	}
	enableControllers(parent, want)
	dir := g.dirs[""]
	if err := mkdir(dir); err != nil {
		return err
	}
	file := func(name string) string { return filepath.Join(dir, name) }

	if l.MemoryBytes > 0 && exists(file("memory.max")) {
		if err := writeFile(file("memory.max"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return err
		}
		g.Enforced.Memory = true
		if exists(file("memory.swap.max")) {
			if err := writeFile(file("memory.swap.max"), "0"); err != nil {
				return err
			}
			g.Enforced.NoSwap = true
		} else {
			g.Enforced.NoSwap = !hostHasSwap()
		}
	}
	if l.CPUs > 0 && exists(file("cpu.max")) {
		v := strconv.FormatInt(cpuQuota(l.CPUs), 10) + " " + strconv.Itoa(cfsPeriod)
		if err := writeFile(file("cpu.max"), v); err != nil {
			return err
		}
		g.Enforced.CPU = true
	}
	if l.CPUs > 0 && exists(file("cpuset.cpus")) {
		all, err := readFile(filepath.Join(parent, "cpuset.cpus.effective"))
		if err != nil {
			return fmt.Errorf("cgroup cpuset: %w", err)
		}
		cpus, err := pickCPUs(all, parent, filepath.Base(dir), "cpuset.cpus", cpuCount(l.CPUs))
		if err != nil {
			return err
		}
		if err := writeFile(file("cpuset.cpus"), cpus); err != nil {
			return err
		}
		g.Enforced.CPUSet = true
	}
	if l.PIDs > 0 && exists(file("pids.max")) {
		if err := writeFile(file("pids.max"), strconv.FormatInt(l.PIDs, 10)); err != nil {
			return err
		}
		g.Enforced.PIDs = true
	}
	return nil
}

// enableControllers turns on each of want in dir's cgroup.subtree_control
// that is not on yet, one at a time so one refusal does not stop the rest.
func enableControllers(dir string, want []string) {
	path := filepath.Join(dir, "cgroup.subtree_control")
	cur, _ := readFile(path)
	on := strings.Fields(cur)
	for _, c := range want {
		if !slices.Contains(on, c) {
			_ = writeFile(path, "+"+c) // refused: the limit is reported missing
		}
	}
}
