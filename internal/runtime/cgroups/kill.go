package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killPoll spaces the checks while a group empties.
const killPoll = 2 * time.Millisecond

// Add moves process pid into the group (every v1 hierarchy of it). Its
// existing children stay where they are; only later forks follow it, so
// Start is the race-free way to confine a new process tree.
func (g *Group) Add(pid int) error {
	for _, c := range g.order() {
		if err := writeFile(filepath.Join(g.dirs[c], "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("move pid %d into cgroup: %w", pid, err)
		}
	}
	return nil
}

// order lists the group's hierarchies in a fixed order (cpuset before the
// others on v1 is not required, but a stable order keeps errors stable).
func (g *Group) order() []string {
	keys := make([]string, 0, len(g.dirs))
	for c := range g.dirs {
		keys = append(keys, c)
	}
	slices.Sort(keys)
	return keys
}

// PIDs returns the processes in the group, in any of its hierarchies. A
// group that does not exist has none.
func (g *Group) PIDs() ([]int, error) {
	var out []int
	for _, c := range g.order() {
		b, err := os.ReadFile(filepath.Join(g.dirs[c], "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read cgroup members: %w", err)
		}
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
	}
	return out, nil
}

// Populated reports whether any process is still in the group.
func (g *Group) Populated() (bool, error) {
	if g.h.v2 {
		if ev, err := readFile(filepath.Join(g.dirs[""], "cgroup.events")); err == nil {
			for line := range strings.SplitSeq(ev, "\n") {
				if v, ok := strings.CutPrefix(line, "populated "); ok {
					return v != "0", nil
				}
			}
		}
	}
	pids, err := g.PIDs()
	return len(pids) > 0, err
}

// Kill SIGKILLs every process in the group and returns once it is empty
// (or ctx ends). On v2 with cgroup.kill the kernel does it atomically.
// Otherwise the group is frozen so nothing can fork between reading the
// member list and killing it, every member gets SIGKILL, the group is
// thawed so the signals are delivered, and this repeats until the group
// is empty. Killing a missing or empty group does nothing.
func (g *Group) Kill(ctx context.Context) error {
	kill := ""
	if g.h.v2 {
		if k := filepath.Join(g.dirs[""], "cgroup.kill"); exists(k) {
			kill = k
		}
	}
	for {
		busy, err := g.Populated()
		if err != nil || !busy {
			return err
		}
		if kill != "" {
			if err := writeFile(kill, "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("kill cgroup: %w", err)
			}
		} else if err := g.killMembers(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cgroup %s still has processes: %w", g.id, ctx.Err())
		case <-time.After(killPoll):
		}
	}
}

// killMembers is one freeze, kill, thaw round.
func (g *Group) killMembers(ctx context.Context) error {
	thaw := g.freeze(ctx)
	pids, err := g.PIDs()
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			thaw()
			return fmt.Errorf("kill pid %d in cgroup: %w", pid, err)
		}
	}
	thaw()
	return err
}

// freeze stops every member (v2 cgroup.freeze, v1 freezer.state) and
// returns the function that thaws them. Without a freezer it does
// nothing: Kill's repetition then catches processes forked meanwhile.
func (g *Group) freeze(ctx context.Context) (thaw func()) {
	var file, frozen, thawed string
	if g.h.v2 {
		file, frozen, thawed = filepath.Join(g.dirs[""], "cgroup.freeze"), "1", "0"
	} else if d, ok := g.dirs["freezer"]; ok {
		file, frozen, thawed = filepath.Join(d, "freezer.state"), "FROZEN", "THAWED"
	}
	if file == "" || !exists(file) || writeFile(file, frozen) != nil {
		return func() {}
	}
	// v1 reports FREEZING until every task stopped; v2's cgroup.events
	// says "frozen 1". Wait briefly: a task that is still running
	// is caught by the next round anyway.
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) && ctx.Err() == nil && !g.isFrozen() {
		time.Sleep(time.Millisecond)
	}
	return func() { _ = writeFile(file, thawed) }
}

func (g *Group) isFrozen() bool {
	if g.h.v2 {
		ev, _ := readFile(filepath.Join(g.dirs[""], "cgroup.events"))
		return strings.Contains(ev, "frozen 1")
	}
	st, _ := readFile(filepath.Join(g.dirs["freezer"], "freezer.state"))
	return st == "FROZEN"
}

// Remove kills the group's processes and deletes its directories. A group
// that is already gone is fine. The kernel refuses to remove a group for a
// moment after its last process died (EBUSY), so that is retried until
// ctx ends.
func (g *Group) Remove(ctx context.Context) error {
	if err := g.Kill(ctx); err != nil {
		return err
	}
	for _, c := range g.order() {
		d := g.dirs[c]
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if !errors.Is(err, syscall.EBUSY) {
				return fmt.Errorf("remove cgroup %s: %w", d, err)
			}
			// A process may have joined (or forked in) since Kill.
			if err := g.Kill(ctx); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("remove cgroup %s: %w", d, ctx.Err())
			case <-time.After(killPoll):
			}
		}
	}
	return nil
}
