package bwrap

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/cgroups"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// infoFD is the descriptor bwrap writes its JSON info to (its first extra
// file); it closes it before running sandboxd.
const infoFD = 3

// Top-level entries of a template that the sandbox does not take from it:
// they are fresh mounts, or Corral's own.
var ownMounts = []string{"proc", "dev", "sys", "tmp", "run", "home", "workspace", ".corral", "lost+found"}

// The host directories the template "host" is made of.
var hostEntries = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt"}

// launch is what one bwrap invocation needs.
type launch struct {
	id        string
	spec      runtime.Spec
	rootfs    string // "" for the host template
	state     *hoststate.Sandbox
	workspace string // host directory, or "" for a tmpfs of DiskMB
	home      string
	binary    string
	group     *cgroups.Group // nil without cgroups
}

// args returns bwrap's arguments, in order: bwrap applies them one after
// the other, and every mount point is created on the root tmpfs, which
// --remount-ro makes read-only last.
func (l *launch) args() ([]string, error) {
	a := []string{
		"--unshare-user", "--uid", strconv.Itoa(runtime.AgentUID), "--gid", strconv.Itoa(runtime.AgentGID),
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	if l.spec.Network != runtime.NetworkEgress {
		a = append(a, "--unshare-net")
	}
	a = append(a, "--new-session", "--cap-drop", "ALL", "--hostname", hostname(l.id))

	root, err := l.rootMounts()
	if err != nil {
		return nil, err
	}
	a = append(a, root...)

	// tmpfs mounts are capped at disk_mb; their pages count against the
	// memory limit too.
	size := func() []string {
		if l.spec.Resources.DiskMB > 0 {
			return []string{"--size", strconv.FormatInt(l.spec.Resources.DiskMB<<20, 10)}
		}
		return nil
	}
	tmpfs := func(perms, dest string) {
		a = append(a, "--perms", perms)
		a = append(a, size()...)
		a = append(a, "--tmpfs", dest)
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev")
	tmpfs("1777", "/tmp")
	if l.rootfs != "" && isDir(filepath.Join(l.rootfs, "var", "tmp")) {
		tmpfs("1777", "/var/tmp")
	}
	tmpfs("0755", "/run")
	a = append(a, "--bind", l.state.SocketDir(), runtime.SocketDir)
	a = append(a, "--bind", l.home, runtime.AgentHome)
	if l.workspace != "" {
		a = append(a, "--bind", l.workspace, runtime.WorkspaceDir)
	} else {
		tmpfs("0755", runtime.WorkspaceDir)
	}
	a = append(a, "--ro-bind", l.binary, runtime.BinaryPath)
	a = append(a, l.cgroupView()...)
	if l.spec.Network == runtime.NetworkEgress && l.rootfs != "" && isRegular(filepath.Join(l.rootfs, "etc", "resolv.conf")) {
		// The template's resolv.conf was written at build time; the
		// host's is the one that works on this network.
		a = append(a, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf")
	}
	a = append(a, "--remount-ro", "/", "--chdir", runtime.WorkspaceDir, "--info-fd", strconv.Itoa(infoFD), "--")
	return append(a, runtime.SandboxdArgs()...), nil
}

// rootMounts binds the template's (or the host's) top-level entries,
// read-only: directories and files as binds, symlinks (/bin -> usr/bin)
// as symlinks.
func (l *launch) rootMounts() ([]string, error) {
	src, names := l.rootfs, []string(nil)
	if src == "" {
		src, names = "/", hostEntries
	} else {
		entries, err := os.ReadDir(src)
		if err != nil {
			return nil, fmt.Errorf("template root: %w", err)
		}
		for _, e := range entries {
			if !slices.Contains(ownMounts, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	var a []string
	for _, name := range names {
		p := filepath.Join(src, name)
		fi, err := os.Lstat(p)
		if err != nil {
			continue // the host has no /lib32, say
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil, err
			}
			a = append(a, "--symlink", target, "/"+name)
		case fi.IsDir() || fi.Mode().IsRegular():
			a = append(a, "--ro-bind", p, "/"+name)
		}
	}
	return a, nil
}

// cgroupView mounts the sandbox's own cgroup read-only where a container
// sees its cgroup: /sys/fs/cgroup (v2) or /sys/fs/cgroup/<controller>
// (v1). With the cgroup namespace rooted at that group, sandboxd's
// /proc/self/cgroup is "/", so it reads its limits there.
func (l *launch) cgroupView() []string {
	if l.group == nil {
		return nil
	}
	var a []string
	if d := l.group.Dir(""); d != "" {
		return []string{"--ro-bind", d, "/sys/fs/cgroup"}
	}
	for _, c := range []string{"cpu", "cpuset", "memory", "pids"} {
		if d := l.group.Dir(c); d != "" {
			a = append(a, "--ro-bind", d, "/sys/fs/cgroup/"+c)
		}
	}
	return a
}

// env is sandboxd's environment, and so the base of every process's:
// a login-like set for the agent user, the spec's variables, and the token
// (which sandboxd takes out of what its children inherit). Nothing comes
// from Corral's own environment.
func env(spec runtime.Spec, token string) []string {
	vars := map[string]string{
		"PATH":    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME":    runtime.AgentHome,
		"USER":    "agent",
		"LOGNAME": "agent",
		"LANG":    "C.UTF-8",
	}
	for k, v := range spec.Env {
		vars[k] = v
	}
	vars[runtime.TokenEnv] = token
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// hostname is the sandbox's host name, within the kernel's 64 bytes.
func hostname(id string) string {
	h := "corral-" + id
	if len(h) > 64 {
		h = h[:64]
	}
	return strings.TrimRight(h, "-_")
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func isRegular(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}
