package docker

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
)

func TestNormalize(t *testing.T) {
	r := &Runtime{template: "corral-default"}
	tests := []struct {
		name    string
		spec    runtime.Spec
		wantErr bool
	}{
		{"empty", runtime.Spec{}, false},
		{"egress", runtime.Spec{Network: runtime.NetworkEgress}, false},
		{"network host", runtime.Spec{Network: "host"}, true},
		{"id with slash", runtime.Spec{ID: "a/b"}, true},
		{"negative cpus", runtime.Spec{Resources: runtime.Resources{CPUs: -1}}, true},
		{"NaN cpus", runtime.Spec{Resources: runtime.Resources{CPUs: math.NaN()}}, true},
		{"negative memory", runtime.Spec{Resources: runtime.Resources{MemoryMB: -1}}, true},
		{"negative pids", runtime.Spec{Resources: runtime.Resources{PIDs: -5}}, true},
		{"negative disk", runtime.Spec{Resources: runtime.Resources{DiskMB: -5}}, true},
		{"env name with =", runtime.Spec{Env: map[string]string{"A=B": "c"}}, true},
		{"empty env name", runtime.Spec{Env: map[string]string{"": "c"}}, true},
		{"env value with NUL", runtime.Spec{Env: map[string]string{"A": "x\x00y"}}, true},
		{"token env", runtime.Spec{Env: map[string]string{runtime.TokenEnv: "x"}}, true},
		{"empty label key", runtime.Spec{Labels: map[string]string{"": "x"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.normalize(tt.spec)
			if tt.wantErr {
				if !errors.Is(err, errdefs.ErrInvalid) {
					t.Errorf("normalize(%+v) = %v; want ErrInvalid", tt.spec, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("normalize(%+v) = %v", tt.spec, err)
			}
			if got.ID == "" || got.Network == "" || got.Template != "corral-default" {
				t.Errorf("normalize(%+v) = %+v; want id, network and template filled", tt.spec, got)
			}
		})
	}
}

func TestCpuset(t *testing.T) {
	tests := []struct {
		cpus     float64
		hostCPUs int
		want     int // CPUs in the set; 0 = no set
	}{
		{1, 2, 1},
		{0.5, 2, 1},
		{1.5, 4, 2},
		{2, 2, 0},
		{3, 2, 0},
		{1, 0, 0},
		{2.01, 8, 3},
	}
	for _, tt := range tests {
		got := cpuset("sb_abc", tt.cpus, tt.hostCPUs)
		n := 0
		if got != "" {
			n = len(strings.Split(got, ","))
		}
		if n != tt.want {
			t.Errorf("cpuset(%v cpus, %d host) = %q; want %d CPUs", tt.cpus, tt.hostCPUs, got, tt.want)
		}
	}
	if cpuset("sb_a", 1, 64) == cpuset("sb_b", 1, 64) && cpuset("sb_a", 1, 64) == cpuset("sb_c", 1, 64) {
		t.Errorf("three sandboxes pinned to the same CPU; want them spread")
	}
}

func TestContainerConfig(t *testing.T) {
	spec := runtime.Spec{ID: "sb_x", Template: "img:1", Network: runtime.NetworkNone,
		Env:       map[string]string{"B": "2", "A": "1"},
		Labels:    map[string]string{"team": "a", labelSandbox: "evil"},
		Resources: runtime.Resources{CPUs: 1, MemoryMB: 256, PIDs: 100}}
	cfg := containerConfig(spec, "tok", "/state")
	if got, want := strings.Join(cfg.Env, " "), "A=1 B=2 "+runtime.TokenEnv+"=tok"; got != want {
		t.Errorf("Env = %q; want %q", got, want)
	}
	if cfg.Labels[labelSandbox] != "sb_x" || cfg.Labels[labelUserPrefix+labelSandbox] != "evil" || cfg.Labels[labelStateDir] != "/state" {
		t.Errorf("Labels = %v; want the id, prefixed user labels and the state dir", cfg.Labels)
	}
	if got := userLabels(cfg.Labels); len(got) != 2 || got["team"] != "a" || got[labelSandbox] != "evil" {
		t.Errorf("userLabels = %v; want the spec's labels", got)
	}
	if cfg.User != "1000:1000" || cfg.WorkingDir != runtime.WorkspaceDir || cfg.Entrypoint[0] != runtime.BinaryPath || cfg.Image != "img:1" {
		t.Errorf("config = %+v", cfg)
	}

	hc := hostConfig(spec, "/bin/corral", "/state/sb_x/sock", 2)
	if hc.NetworkMode != "none" || hc.Memory != 256<<20 || hc.MemorySwap != hc.Memory || *hc.PidsLimit != 100 ||
		hc.NanoCPUs != 1e9 || hc.CpusetCpus == "" || *hc.Init || hc.CapDrop[0] != "ALL" {
		t.Errorf("host config = %+v", hc)
	}
	if m := hc.Mounts[0]; m.Source != "/bin/corral" || m.Target != runtime.BinaryPath || !m.ReadOnly {
		t.Errorf("binary mount = %+v; want read-only at %s", m, runtime.BinaryPath)
	}
	spec.Network = runtime.NetworkEgress
	if hc := hostConfig(spec, "/b", "/s", 2); hc.NetworkMode != "bridge" {
		t.Errorf("egress NetworkMode = %q; want bridge", hc.NetworkMode)
	}
}

func TestImageRef(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"corral-default", "corral-default:latest", false},
		{"corral-default:latest", "corral-default:latest", false},
		{"corral-test:v2", "corral-test:v2", false},
		{"registry.local:5000/corral/desktop", "registry.local:5000/corral/desktop:latest", false},
		{"Upper", "", true},
		{"img@sha256:" + strings.Repeat("a", 64), "", true},
	}
	for _, tt := range tests {
		got, err := imageRef(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("imageRef(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
