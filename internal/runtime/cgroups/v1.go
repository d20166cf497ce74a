package cgroups

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
)

// cfsPeriod is the CPU quota period in microseconds (the kernel's default).
const cfsPeriod = 100000

// createV1 makes one directory per mounted controller and writes the
// limits. cpuset is special on v1: a new cpuset group has no CPUs and no
// memory nodes, and no task may join it until both are set, so they are
// always written (copied from the parent unless CPUs narrows them).
func (g *Group) createV1(l Limits) error {
	for _, c := range v1Controllers {
		dir, ok := g.dirs[c]
		if !ok {
			continue
		}
		parent := filepath.Dir(dir)
		if err := mkdir(parent); err != nil {
			return err
		}
		if c == "cpuset" {
			if err := inheritCpuset(filepath.Dir(parent), parent); err != nil {
				return err
			}
		}
		if err := mkdir(dir); err != nil {
			return err
		}
		var err error
		switch c {
		case "memory":
			err = g.memoryV1(dir, l)
		case "cpu":
			err = g.cpuV1(dir, l)
		case "cpuset":
			err = g.cpusetV1(dir, l)
		case "pids":
			if l.PIDs > 0 {
				err = writeFile(filepath.Join(dir, "pids.max"), strconv.FormatInt(l.PIDs, 10))
				g.Enforced.PIDs = err == nil
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (g *Group) memoryV1(dir string, l Limits) error {
	if l.MemoryBytes <= 0 {
		return nil
	}
	v := strconv.FormatInt(l.MemoryBytes, 10)
	if err := writeFile(filepath.Join(dir, "memory.limit_in_bytes"), v); err != nil {
		return err
	}
	g.Enforced.Memory = true
	// memsw is memory+swap: equal to the memory limit means no swap. It
	// exists only when the kernel accounts swap (swapaccount=1).
	if memsw := filepath.Join(dir, "memory.memsw.limit_in_bytes"); exists(memsw) {
		if err := writeFile(memsw, v); err != nil {
			return err
		}
		g.Enforced.NoSwap = true
	} else {
		g.Enforced.NoSwap = !hostHasSwap()
	}
	return nil
}

func (g *Group) cpuV1(dir string, l Limits) error {
	if l.CPUs <= 0 {
		return nil
	}
	if err := writeFile(filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(cfsPeriod)); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), strconv.FormatInt(cpuQuota(l.CPUs), 10)); err != nil {
		return err
	}
	g.Enforced.CPU = true
	return nil
}

func (g *Group) cpusetV1(dir string, l Limits) error {
	parent := filepath.Dir(dir)
	mems, err := readFile(filepath.Join(parent, "cpuset.mems"))
	if err != nil {
		return fmt.Errorf("cgroup cpuset: %w", err)
	}
	all, err := readFile(filepath.Join(parent, "cpuset.cpus"))
	if err != nil {
		return fmt.Errorf("cgroup cpuset: %w", err)
	}
	cpus := all
	if l.CPUs > 0 {
		if cpus, err = pickCPUs(all, parent, filepath.Base(dir), "cpuset.cpus", cpuCount(l.CPUs)); err != nil {
			return err
		}
	}
	if err := writeFile(filepath.Join(dir, "cpuset.cpus"), cpus); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "cpuset.mems"), mems); err != nil {
		return err
	}
	g.Enforced.CPUSet = l.CPUs > 0
	return nil
}

// inheritCpuset copies cpuset.cpus and cpuset.mems from parent to dir
// where dir has none yet (a fresh v1 cpuset group is empty).
func inheritCpuset(parent, dir string) error {
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		cur, _ := readFile(filepath.Join(dir, f))
		if cur != "" {
			continue
		}
		v, err := readFile(filepath.Join(parent, f))
		if err != nil {
			return fmt.Errorf("cgroup cpuset: %w", err)
		}
		if err := writeFile(filepath.Join(dir, f), v); err != nil {
			return err
		}
	}
	return nil
}

// cpuQuota is the CFS quota in microseconds per cfsPeriod for cpus CPUs;
// the kernel refuses less than 1 ms.
func cpuQuota(cpus float64) int64 {
	return max(int64(math.Round(cpus*cfsPeriod)), 1000)
}

// cpuCount is how many CPUs a quota of cpus needs: ceil(cpus), at least 1.
func cpuCount(cpus float64) int { return max(int(math.Ceil(cpus)), 1) }
