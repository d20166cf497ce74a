package containerd

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	ctrd "github.com/containerd/containerd"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/contrib/seccomp"
	"github.com/containerd/containerd/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/hoststate"
)

// The name servers of an egress sandbox: the host's, or systemd-resolved's
// upstream ones when the host's are only its local stub (see resolvConf).
const (
	hostResolvConf   = "/etc/resolv.conf"
	resolvedUpstream = "/run/systemd/resolve/resolv.conf"
)

const (
	cpuPeriod = 100_000 // CFS period in µs
	noFile    = 65_536  // RLIMIT_NOFILE, soft and hard
)

// specOpts builds the OCI spec of sandbox st from the image and the spec:
// sandboxd as init, running as the agent user with no capabilities, no new
// privileges and the default seccomp profile, in fresh namespaces (the
// network one loopback only, or the egress namespace at netPath), with the
// corral binary and the socket directory bind-mounted and the resource
// limits applied.
func (r *Runtime) specOpts(ctx context.Context, img ctrd.Image, st *hoststate.Sandbox, netPath string) ([]oci.SpecOpts, error) {
	env, err := imageEnv(ctx, img)
	if err != nil {
		return nil, err
	}
	spec := st.Meta.Spec
	env = append(env, sortedEnv(spec.Env)...)
	env = append(env, runtime.TokenEnv+"="+st.Token)

	opts := []oci.SpecOpts{
		oci.WithDefaultPathEnv,
		oci.WithEnv(env),
		oci.WithProcessArgs(runtime.SandboxdArgs()...),
		oci.WithProcessCwd(runtime.WorkspaceDir),
		oci.WithUIDGID(runtime.AgentUID, runtime.AgentGID),
		oci.WithHostname(strings.ReplaceAll(st.Meta.ID, "_", "-")),
		oci.WithNoNewPrivileges,
		oci.WithCapabilities(nil),
		withAmbientCleared,
		withNoFile(noFile),
		seccomp.WithDefaultProfile(), // after the capabilities: it reads them
		oci.WithMounts([]specs.Mount{
			{Destination: runtime.BinaryPath, Type: "bind", Source: r.cfg.Binary,
				Options: []string{"rbind", "ro", "nosuid", "nodev"}},
			{Destination: runtime.SocketDir, Type: "bind", Source: st.SocketDir(),
				Options: []string{"rbind", "rw", "nosuid", "nodev", "noexec"}},
			// The sandbox's own cgroup, read-only: sandboxd reports limits
			// and use from it.
			{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
				Options: []string{"ro", "nosuid", "noexec", "nodev"}},
		}),
	}
	if netPath != "" {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netPath}))
		if src := resolvConf(hostResolvConf, resolvedUpstream); src != "" {
			opts = append(opts, oci.WithMounts([]specs.Mount{{Destination: "/etc/resolv.conf", Type: "bind",
				Source: src, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}}}))
		}
	}
	if cgroup2() {
		// Without a cgroup namespace the cgroup2 mount would show the host's
		// whole hierarchy.
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.CgroupNamespace}))
	}
	res := spec.Resources
	if res.MemoryMB > 0 {
		limit := res.MemoryMB << 20
		opts = append(opts, oci.WithMemoryLimit(uint64(limit)))
		if swapAccounting() {
			opts = append(opts, oci.WithMemorySwap(limit)) // memory+swap = memory: no swap
		}
	}
	if res.PIDs > 0 {
		opts = append(opts, oci.WithPidsLimit(res.PIDs))
	}
	if res.CPUs > 0 {
		opts = append(opts, oci.WithCPUCFS(int64(res.CPUs*cpuPeriod), cpuPeriod))
		if set := r.cpuset(int(math.Ceil(res.CPUs))); set != "" {
			opts = append(opts, oci.WithCPUs(set))
		}
	}
	return opts, nil
}

// imageEnv returns the environment the image declares, with HOME set to
// the agent's home unless the image sets it. The config is read directly
// rather than through oci.WithImageConfig, which mounts the root
// filesystem on every create to look up supplementary groups.
func imageEnv(ctx context.Context, img ctrd.Image) ([]string, error) {
	desc, err := img.Config(ctx)
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", img.Name(), err)
	}
	b, err := content.ReadBlob(ctx, img.ContentStore(), desc)
	if err != nil {
		return nil, fmt.Errorf("image %s: read config: %w", img.Name(), err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("image %s: decode config: %w", img.Name(), err)
	}
	env := []string{"HOME=" + runtime.AgentHome}
	return append(env, cfg.Config.Env...), nil
}

func sortedEnv(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// withAmbientCleared drops ambient capabilities too (WithCapabilities
// leaves them).
func withAmbientCleared(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	if s.Process != nil && s.Process.Capabilities != nil {
		s.Process.Capabilities.Ambient = nil
	}
	return nil
}

// withNoFile sets RLIMIT_NOFILE; containerd's default of 1024 is too low
// for language servers and bundlers. It stays within our own hard limit:
// without CAP_SYS_RESOURCE (in some containers and user namespaces) runc
// cannot raise it above the one containerd inherited, likely the same.
func withNoFile(n uint64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		var own unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &own); err == nil && own.Max < n {
			n = own.Max
		}
		for i, l := range s.Process.Rlimits {
			if l.Type == "RLIMIT_NOFILE" {
				s.Process.Rlimits[i].Soft, s.Process.Rlimits[i].Hard = n, n
				return nil
			}
		}
		s.Process.Rlimits = append(s.Process.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Soft: n, Hard: n})
		return nil
	}
}

// cpuset returns n of the host's CPUs for a sandbox, rotating the first
// one across creates so one-CPU sandboxes spread over the host, or "" when
// n covers them all. Pinning makes nproc inside report the limit.
func (r *Runtime) cpuset(n int) string {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return ""
	}
	var cpus []int
	for i := 0; i < len(set)*64 && len(cpus) < set.Count(); i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if n >= len(cpus) {
		return ""
	}
	start := int(r.nextCPU.Add(1)) % len(cpus)
	picked := make([]string, n)
	for i := range picked {
		picked[i] = strconv.Itoa(cpus[(start+i)%len(cpus)])
	}
	return strings.Join(picked, ",")
}

// cgroup2 reports whether the host runs the unified cgroup hierarchy.
func cgroup2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// swapAccounting reports whether memory+swap can be limited: always on
// cgroup v2, only with swap accounting on v1.
func swapAccounting() bool {
	if cgroup2() {
		return true
	}
	_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	return err == nil
}
