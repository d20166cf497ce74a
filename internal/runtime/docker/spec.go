package docker

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/corral-sh/corral/internal/runtime"
)

// normalize applies runtime.Normalize and the default template.
func (r *Runtime) normalize(spec runtime.Spec) (runtime.Spec, error) {
	spec, err := runtime.Normalize(spec)
	if err != nil {
		return spec, err
	}
	if spec.Template == "" {
		spec.Template = r.template
	}
	return spec, nil
}

// containerConfig is the container's process and labels: sandboxd as
// init, as the agent user, in the workspace, with the spec's environment
// plus its token.
func containerConfig(spec runtime.Spec, token, stateRoot string) *container.Config {
	args := runtime.SandboxdArgs()
	env := make([]string, 0, len(spec.Env)+1)
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, k+"="+spec.Env[k])
	}
	env = append(env, runtime.TokenEnv+"="+token)
	labels := map[string]string{
		labelSandbox:  spec.ID,
		labelRuntime:  runtimeName,
		labelStateDir: stateRoot,
		labelTemplate: spec.Template,
	}
	for k, v := range spec.Labels {
		labels[labelUserPrefix+k] = v
	}
	return &container.Config{
		Image:      spec.Template,
		Entrypoint: args[:1],
		Cmd:        args[1:],
		Env:        env,
		User:       fmt.Sprintf("%d:%d", runtime.AgentUID, runtime.AgentGID),
		WorkingDir: runtime.WorkspaceDir,
		Labels:     labels,
	}
}

// hostConfig is the container's confinement: the two bind mounts, no
// capabilities, no new privileges, the default seccomp profile (by not
// naming another), no restart, sandboxd as PID 1 (no docker-init), and the
// spec's limits. hostCPUs is the engine's CPU count, needed only when the
// spec limits cpus.
func hostConfig(spec runtime.Spec, bin, socketDir string, hostCPUs int) *container.HostConfig {
	noInit := false
	hc := &container.HostConfig{
		Mounts: []mount.Mount{
			{Type: mount.TypeBind, Source: bin, Target: runtime.BinaryPath, ReadOnly: true},
			{Type: mount.TypeBind, Source: socketDir, Target: runtime.SocketDir},
		},
		NetworkMode:   container.NetworkMode("none"),
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
		CapDrop:       []string{"ALL"},
		SecurityOpt:   []string{"no-new-privileges"},
		Init:          &noInit,
	}
	if spec.Network == runtime.NetworkEgress {
		hc.NetworkMode = container.NetworkMode("bridge")
	}
	res := spec.Resources
	if res.MemoryMB > 0 {
		hc.Memory = res.MemoryMB << 20
		hc.MemorySwap = hc.Memory // memory+swap = memory: no swap
	}
	if res.CPUs > 0 {
		hc.NanoCPUs = int64(math.Round(res.CPUs * 1e9))
		hc.CpusetCpus = cpuset(spec.ID, res.CPUs, hostCPUs)
	}
	if res.PIDs > 0 {
		pids := res.PIDs
		hc.PidsLimit = &pids
	}
	return hc
}

// cpuset pins a sandbox limited to cpus to ceil(cpus) host CPUs, so that
// nproc (and every runtime sizing its thread pool by it) sees its share;
// the quota (NanoCPUs) still caps the total. Sandboxes start at a CPU
// chosen by a hash of their id so they spread over the host. It returns ""
// (no pinning) when the sandbox may use every host CPU anyway.
func cpuset(id string, cpus float64, hostCPUs int) string {
	n := int(math.Ceil(cpus))
	if n <= 0 || hostCPUs <= 0 || n >= hostCPUs {
		return ""
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	start := int(h.Sum32() % uint32(hostCPUs))
	set := make([]int, n)
	for i := range set {
		set[i] = (start + i) % hostCPUs
	}
	slices.Sort(set)
	parts := make([]string, n)
	for i, c := range set {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}

// userLabels returns the spec labels among a container's labels.
func userLabels(labels map[string]string) map[string]string {
	var out map[string]string
	for k, v := range labels {
		if key, ok := strings.CutPrefix(k, labelUserPrefix); ok {
			if out == nil {
				out = make(map[string]string)
			}
			out[key] = v
		}
	}
	return out
}
