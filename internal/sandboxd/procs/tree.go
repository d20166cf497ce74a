package procs

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// killTree sends sig to the process group pgid and to every descendant of
// pid, including those that moved to another group or session. The tree is
// read from /proc before anything is signalled, since once the root dies
// its orphans are reparented and the chain is lost.
func killTree(pid, pgid int, sig syscall.Signal) {
	desc := descendants(pid)
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
	_ = syscall.Kill(pid, sig)
	for _, d := range desc {
		_ = syscall.Kill(d, sig)
	}
}

// descendants lists every process below pid, from one scan of /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/<pid>/stat. The command name
// field may hold spaces and parentheses, so parse after its last ')'.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // state ppid ...
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}
