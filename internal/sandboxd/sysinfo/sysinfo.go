// Package sysinfo reports the resources a sandbox may use: CPUs and memory
// as its cgroup limits them (v2 or v1), and the space of a filesystem.
//
// Every reading is best-effort: a missing or unreadable cgroup file falls
// back to what the machine offers (runtime.NumCPU, /proc/meminfo), so a
// daemon outside any container still gets sensible numbers.
package sysinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Probe reads resource limits. The zero value reads the real machine; tests
// point it at fake trees.
type Probe struct {
	// CgroupRoot is where the cgroup filesystems are mounted;
	// "/sys/fs/cgroup" when empty. A pure cgroup v2 mount has
	// cgroup.controllers at its top; otherwise v1 controllers are looked for
	// in sub-directories (cpu, memory, ...).
	CgroupRoot string
	// Proc is the proc filesystem; "/proc" when empty. Probe reads
	// self/cgroup (which cgroup we are in) and meminfo from it.
	Proc string
	// NumCPU is the number of CPUs the process may run on;
	// runtime.NumCPU() when zero.
	NumCPU int
}

// Memory is a memory reading in bytes.
type Memory struct {
	// Limit is the cgroup limit, or the machine's total RAM when there is
	// none (or it is higher than the RAM).
	Limit int64
	// Used is the cgroup's usage minus its inactive file cache (what
	// `docker stats` shows), or MemTotal-MemAvailable without a cgroup.
	Used int64
}

// Disk is the size of a filesystem in bytes.
type Disk struct {
	Total int64
	Free  int64 // available to unprivileged users
}

func (p Probe) cgroupRoot() string {
	if p.CgroupRoot == "" {
		return "/sys/fs/cgroup"
	}
	return p.CgroupRoot
}

func (p Probe) proc() string {
	if p.Proc == "" {
		return "/proc"
	}
	return p.Proc
}

func (p Probe) numCPU() int {
	if p.NumCPU > 0 {
		return p.NumCPU
	}
	return runtime.NumCPU()
}

// v2 reports whether CgroupRoot is a unified (v2) hierarchy.
func (p Probe) v2() bool {
	_, err := os.Stat(filepath.Join(p.cgroupRoot(), "cgroup.controllers"))
	return err == nil
}

// CPUs returns how many CPUs the process may use: the tightest cgroup quota
// (quota/period, possibly fractional) on the way from our cgroup to the
// mount's root, capped by the CPUs we may run on.
func (p Probe) CPUs() float64 {
	n := float64(p.numCPU())
	var dirs []string
	var quota func(dir string) (float64, bool)
	if p.v2() {
		dirs = p.chain(p.cgroupRoot(), "")
		quota = cpuMaxV2
	} else if mount, ok := p.v1Mount("cpu", "cpu,cpuacct", "cpuacct,cpu"); ok {
		dirs = p.chain(mount, "cpu")
		quota = cfsQuotaV1
	}
	for _, dir := range dirs {
		if q, ok := quota(dir); ok && q < n {
			n = q
		}
	}
	return n
}

// cpuMaxV2 reads cpu.max: "max 100000" (no limit) or "50000 100000".
func cpuMaxV2(dir string) (float64, bool) {
	fields := strings.Fields(readString(filepath.Join(dir, "cpu.max")))
	if len(fields) != 2 || fields[0] == "max" {
		return 0, false
	}
	return ratio(fields[0], fields[1])
}

// cfsQuotaV1 reads cpu.cfs_quota_us (-1: no limit) and cpu.cfs_period_us.
func cfsQuotaV1(dir string) (float64, bool) {
	return ratio(readString(filepath.Join(dir, "cpu.cfs_quota_us")),
		readString(filepath.Join(dir, "cpu.cfs_period_us")))
}

func ratio(quota, period string) (float64, bool) {
	q, err1 := strconv.ParseInt(quota, 10, 64)
	per, err2 := strconv.ParseInt(period, 10, 64)
	if err1 != nil || err2 != nil || q <= 0 || per <= 0 {
		return 0, false
	}
	return float64(q) / float64(per), true
}

// Memory returns the memory limit and use. The limit is the tightest one on
// the way from our cgroup to the mount's root; use is read from the cgroup
// that sets it (our own cgroup when none does). Without any cgroup numbers
// it reads /proc/meminfo; it fails only when that fails too.
func (p Probe) Memory() (Memory, error) {
	var dirs []string
	var limitFile, usageFile, inactiveKey string
	if p.v2() {
		dirs = p.chain(p.cgroupRoot(), "")
		limitFile, usageFile, inactiveKey = "memory.max", "memory.current", "inactive_file"
	} else if mount, ok := p.v1Mount("memory"); ok {
		dirs = p.chain(mount, "memory")
		limitFile, usageFile, inactiveKey = "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
	}
	var m Memory
	limitDir := ""
	for _, dir := range dirs {
		if l, ok := readBytes(filepath.Join(dir, limitFile)); ok && (m.Limit == 0 || l < m.Limit) {
			m.Limit, limitDir = l, dir
		}
	}
	usageDir := limitDir
	if usageDir == "" && len(dirs) > 0 {
		usageDir = dirs[0]
	}
	used, haveUsage := int64(0), false
	if usageDir != "" {
		if u, ok := readBytes(filepath.Join(usageDir, usageFile)); ok {
			used, haveUsage = u-statValue(filepath.Join(usageDir, "memory.stat"), inactiveKey), true
			if used < 0 {
				used = u
			}
		}
	}

	total, avail, err := p.meminfo()
	switch {
	case err != nil && m.Limit == 0:
		return Memory{}, err
	case err == nil && (m.Limit == 0 || m.Limit > total):
		m.Limit = total
	}
	if haveUsage {
		m.Used = used
	} else if err == nil {
		m.Used = total - avail
	}
	return m, nil
}

// unlimitedV1 is the smallest value cgroup v1 reports for "no limit"
// (LONG_MAX rounded down to a page; anything this big means none).
const unlimitedV1 = math.MaxInt64 / 2

// readBytes reads a byte count; "max" and v1's huge no-limit values are
// reported as absent.
func readBytes(path string) (int64, bool) {
	s := readString(path)
	if s == "" || s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n >= unlimitedV1 {
		return 0, false
	}
	return n, true
}

// statValue returns one key of a memory.stat file, 0 when absent.
func statValue(path, key string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(data) {
		k, v, ok := strings.Cut(strings.TrimSpace(string(line)), " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// meminfo returns MemTotal and MemAvailable in bytes.
func (p Probe) meminfo() (total, avail int64, err error) {
	path := filepath.Join(p.proc(), "meminfo")
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("sysinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		switch k {
		case "MemTotal":
			total = n
		case "MemAvailable":
			avail = n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("sysinfo: read %s: %w", path, err)
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("sysinfo: no MemTotal in %s", path)
	}
	return total, avail, nil
}

// v1Mount returns the first existing v1 controller directory among names.
func (p Probe) v1Mount(names ...string) (string, bool) {
	for _, name := range names {
		dir := filepath.Join(p.cgroupRoot(), name)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir, true
		}
	}
	return "", false
}

// chain returns the directories from our own cgroup up to mount, innermost
// first. Our cgroup comes from /proc/self/cgroup: the "0::" line for v2
// (controller ""), the line naming controller for v1. When that path does
// not exist under mount — a container that mounts its own cgroup at the
// root without a cgroup namespace — mount alone is used.
func (p Probe) chain(mount, controller string) []string {
	rel := p.selfCgroup(controller)
	leaf := filepath.Join(mount, rel)
	if fi, err := os.Stat(leaf); rel == "" || err != nil || !fi.IsDir() {
		return []string{mount}
	}
	var dirs []string
	for dir := leaf; ; dir = filepath.Dir(dir) {
		dirs = append(dirs, dir)
		if dir == mount || len(dir) <= len(mount) {
			return dirs
		}
	}
}

// selfCgroup returns our cgroup path for controller ("" = the v2 line),
// relative and cleaned; "" when unknown.
func (p Probe) selfCgroup(controller string) string {
	data, err := os.ReadFile(filepath.Join(p.proc(), "self", "cgroup"))
	if err != nil {
		return ""
	}
	for line := range bytes.Lines(data) {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(strings.TrimSpace(string(line)), ":", 3)
		if len(parts) != 3 {
			continue
		}
		match := parts[0] == "0" && parts[1] == ""
		if controller != "" {
			match = false
			for c := range strings.SplitSeq(parts[1], ",") {
				if c == controller {
					match = true
				}
			}
		}
		if match {
			rel := strings.TrimPrefix(filepath.Clean("/"+parts[2]), "/")
			if strings.HasPrefix(rel, "..") {
				return ""
			}
			return rel
		}
	}
	return ""
}

func readString(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// DiskOf returns the size and free space of the filesystem holding path.
func DiskOf(path string) (Disk, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return Disk{}, fmt.Errorf("sysinfo: statfs %q: %w", path, err)
	}
	bs := int64(st.Bsize)
	if bs <= 0 {
		return Disk{}, errors.New("sysinfo: statfs reported a zero block size")
	}
	return Disk{Total: int64(st.Blocks) * bs, Free: int64(st.Bavail) * bs}, nil
}
