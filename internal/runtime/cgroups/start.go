package cgroups

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Start starts cmd with the process already in the group g, so every
// process it ever forks is confined; with g == nil it just starts cmd.
//
// On v2 the kernel does it in one step: clone3 with CLONE_INTO_CGROUP
// (SysProcAttr.UseCgroupFD) creates the child inside the group.
//
// v1 has no such call, and moving the process after Start would race with
// its first forks. So cmd runs under a tiny shell that waits on a pipe:
//
//	/bin/sh -c 'read _ <&N; exec N<&-; exec "$@"' sh <cmd.Path> <args...>
//
// Start writes the shell's pid into every hierarchy of the group, then
// closes the pipe; only then does the shell exec the real command, which
// therefore starts inside the group. The pipe is cmd's last extra file
// (fd N = 3 + len(cmd.ExtraFiles)), closed again before the exec so the
// command never inherits it; cmd's own extra files keep their numbers.
// The same path is the fallback on v2 when clone3 into a cgroup fails
// (kernels before 5.7).
//
// cmd.Process.Pid is the command's pid either way: the shell execs it.
func Start(cmd *exec.Cmd, g *Group) error {
	if g == nil {
		return cmd.Start()
	}
	if g.h.v2 {
		err := g.startInto(cmd)
		if err == nil || !errors.Is(err, syscall.ENOSYS) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.EPERM) {
			return err
		}
		cmd.Process, cmd.ProcessState = nil, nil
	}
	return g.startGated(cmd)
}

// startInto clones cmd straight into the v2 group.
func (g *Group) startInto(cmd *exec.Cmd) error {
	dir, err := os.Open(g.dirs[""])
	if err != nil {
		return fmt.Errorf("open cgroup: %w", err)
	}
	defer dir.Close()
	attr := sysProcAttr(cmd)
	attr.UseCgroupFD, attr.CgroupFD = true, int(dir.Fd())
	err = cmd.Start()
	attr.UseCgroupFD, attr.CgroupFD = false, 0
	return err
}

// startGated runs cmd behind the pipe-gated shell described at Start.
func (g *Group) startGated(cmd *exec.Cmd) error {
	fd := 3 + len(cmd.ExtraFiles)
	if fd > 9 {
		return fmt.Errorf("start in cgroup: too many extra files (%d)", len(cmd.ExtraFiles))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start in cgroup: %w", err)
	}
	defer r.Close()
	defer w.Close()
	path, args, extra := cmd.Path, cmd.Args, cmd.ExtraFiles
	n := strconv.Itoa(fd)
	cmd.Path = "/bin/sh"
	cmd.Args = append([]string{"sh", "-c", "read _ <&" + n + "; exec " + n + "<&-; exec \"$@\"", "sh", path}, tail(args)...)
	cmd.ExtraFiles = append(extra[:len(extra):len(extra)], r)
	err = cmd.Start()
	cmd.Path, cmd.Args, cmd.ExtraFiles = path, args, extra
	if err != nil {
		return err
	}
	if err := g.Add(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return w.Close() // the shell's read returns: exec the command
}

func tail(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	return args[1:]
}

func sysProcAttr(cmd *exec.Cmd) *syscall.SysProcAttr {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	return cmd.SysProcAttr
}

// Proc identifies a process across restarts of the process that started
// it: a pid alone may be reused by an unrelated process once the first
// one is gone, but a pid together with its start time (in clock ticks
// since boot, field 22 of /proc/<pid>/stat) is unique.
type Proc struct {
	PID   int
	Start uint64
}

// ProcOf reads the identity of the running process pid.
func ProcOf(pid int) (Proc, error) {
	st, err := readStat(pid)
	if err != nil {
		return Proc{}, err
	}
	return Proc{PID: pid, Start: st.start}, nil
}

// String is "pid:start", the form ParseProc reads (for state files).
func (p Proc) String() string { return strconv.Itoa(p.PID) + ":" + strconv.FormatUint(p.Start, 10) }

// ParseProc parses Proc.String's output.
func ParseProc(s string) (Proc, error) {
	a, b, ok := strings.Cut(s, ":")
	pid, err1 := strconv.Atoi(a)
	start, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || pid <= 0 {
		return Proc{}, fmt.Errorf("process identity %q is not pid:start", s)
	}
	return Proc{PID: pid, Start: start}, nil
}

// Alive reports whether the very process p names is still running: the
// pid exists, is not a zombie, and started when p says it did.
func (p Proc) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	st, err := readStat(p.PID)
	return err == nil && st.start == p.Start && st.state != 'Z' && st.state != 'X'
}

// Kill sends SIGKILL to p if it is still the process p names.
func (p Proc) Kill() error {
	if !p.Alive() {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill pid %d: %w", p.PID, err)
	}
	return nil
}

type stat struct {
	state byte
	start uint64
}

// readStat parses /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so fields are
// counted from the last ')'.
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return stat{}, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return stat{state: f[0][0], start: start}, nil
}
