package sysinfo_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/corral-sh/corral/internal/sandboxd/sysinfo"
)

const meminfo = "MemTotal:        8000000 kB\nMemFree:         1000000 kB\nMemAvailable:    6000000 kB\n"

// tree writes files (path relative to dir -> content) and returns dir.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSystemProbeFakeCgroups(t *testing.T) {
	const kB = 1024
	tests := []struct {
		name     string
		cgroup   map[string]string // under the cgroup root
		self     string            // /proc/self/cgroup
		numCPU   int
		wantCPUs float64
		wantMem  sysinfo.Memory
	}{
		{
			name: "v2 limits in our own cgroup",
			cgroup: map[string]string{
				"cgroup.controllers": "cpu memory",
				"sb/cpu.max":         "150000 100000\n",
				"sb/memory.max":      "2147483648\n",
				"sb/memory.current":  "1073741824\n",
				"sb/memory.stat":     "anon 1\ninactive_file 73741824\nactive_file 5\n",
			},
			self:     "0::/sb\n",
			numCPU:   8,
			wantCPUs: 1.5,
			wantMem:  sysinfo.Memory{Limit: 2147483648, Used: 1000000000},
		},
		{
			name: "v2 limit set on an ancestor, usage read there",
			cgroup: map[string]string{
				"cgroup.controllers":       "cpu memory",
				"sb/cpu.max":               "50000 100000\n",
				"sb/memory.max":            "1000000000\n",
				"sb/memory.current":        "600000000\n",
				"sb/daemon/cpu.max":        "max 100000\n",
				"sb/daemon/memory.max":     "max\n",
				"sb/daemon/memory.current": "1000\n",
			},
			self:     "0::/sb/daemon\n",
			numCPU:   8,
			wantCPUs: 0.5,
			wantMem:  sysinfo.Memory{Limit: 1000000000, Used: 600000000},
		},
		{
			name: "v2 no limits: online CPUs, RAM, own usage",
			cgroup: map[string]string{
				"cgroup.controllers": "cpu memory",
				"sb/cpu.max":         "max 100000\n",
				"sb/memory.max":      "max\n",
				"sb/memory.current":  "4096\n",
			},
			self:     "0::/sb\n",
			numCPU:   3,
			wantCPUs: 3,
			wantMem:  sysinfo.Memory{Limit: 8000000 * kB, Used: 4096},
		},
		{
			name: "v2 quota above the CPUs we have is capped",
			cgroup: map[string]string{
				"cgroup.controllers": "cpu memory",
				"cpu.max":            "800000 100000\n",
			},
			self:     "0::/\n",
			numCPU:   2,
			wantCPUs: 2,
			wantMem:  sysinfo.Memory{Limit: 8000000 * kB, Used: 2000000 * kB},
		},
		{
			name: "v2 path from another namespace falls back to the mount root",
			cgroup: map[string]string{
				"cgroup.controllers": "cpu memory",
				"cpu.max":            "25000 100000\n",
				"memory.max":         "536870912\n",
				"memory.current":     "1048576\n",
			},
			self:     "0::/docker/abc\n",
			numCPU:   4,
			wantCPUs: 0.25,
			wantMem:  sysinfo.Memory{Limit: 536870912, Used: 1048576},
		},
		{
			name: "v2 limit above RAM reports RAM",
			cgroup: map[string]string{
				"cgroup.controllers": "memory",
				"memory.max":         "99999999999999\n",
				"memory.current":     "100\n",
			},
			self:     "0::/\n",
			numCPU:   1,
			wantCPUs: 1,
			wantMem:  sysinfo.Memory{Limit: 8000000 * kB, Used: 100},
		},
		{
			name: "v1 cpu,cpuacct and memory",
			cgroup: map[string]string{
				"cpu,cpuacct/docker/abc/cpu.cfs_quota_us":  "200000\n",
				"cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
				"memory/docker/abc/memory.limit_in_bytes":  "268435456\n",
				"memory/docker/abc/memory.usage_in_bytes":  "100000000\n",
				"memory/docker/abc/memory.stat":            "cache 5\ntotal_inactive_file 1000000\n",
				"memory/memory.limit_in_bytes":             "9223372036854771712\n",
				"cpu,cpuacct/cpu.cfs_quota_us":             "-1\n",
				"cpu,cpuacct/cpu.cfs_period_us":            "100000\n",
			},
			self:     "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n",
			numCPU:   16,
			wantCPUs: 2,
			wantMem:  sysinfo.Memory{Limit: 268435456, Used: 99000000},
		},
		{
			name: "v1 unlimited",
			cgroup: map[string]string{
				"cpu/cpu.cfs_quota_us":         "-1\n",
				"cpu/cpu.cfs_period_us":        "100000\n",
				"memory/memory.limit_in_bytes": "9223372036854771712\n",
				"memory/memory.usage_in_bytes": "5000\n",
			},
			self:     "4:memory:/\n3:cpu:/\n",
			numCPU:   2,
			wantCPUs: 2,
			wantMem:  sysinfo.Memory{Limit: 8000000 * kB, Used: 5000},
		},
		{
			name:     "no cgroup at all: meminfo",
			cgroup:   map[string]string{"README": "nothing mounted"},
			self:     "",
			numCPU:   5,
			wantCPUs: 5,
			wantMem:  sysinfo.Memory{Limit: 8000000 * kB, Used: 2000000 * kB},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sysinfo.Probe{
				CgroupRoot: tree(t, tt.cgroup),
				Proc:       tree(t, map[string]string{"meminfo": meminfo, "self/cgroup": tt.self}),
				NumCPU:     tt.numCPU,
			}
			if got := p.CPUs(); got != tt.wantCPUs {
				t.Errorf("CPUs() = %v; want %v", got, tt.wantCPUs)
			}
			got, err := p.Memory()
			if err != nil {
				t.Fatalf("Memory() error: %v", err)
			}
			if got != tt.wantMem {
				t.Errorf("Memory() = %+v; want %+v", got, tt.wantMem)
			}
		})
	}
}

func TestSystemProbeMemoryWithoutMeminfo(t *testing.T) {
	p := sysinfo.Probe{CgroupRoot: t.TempDir(), Proc: t.TempDir()}
	if got, err := p.Memory(); err == nil {
		t.Errorf("Memory() = %+v, nil; want an error when neither cgroup nor meminfo exist", got)
	}
	p.CgroupRoot = tree(t, map[string]string{"cgroup.controllers": "", "memory.max": "1000\n", "memory.current": "10\n"})
	got, err := p.Memory()
	if want := (sysinfo.Memory{Limit: 1000, Used: 10}); err != nil || got != want {
		t.Errorf("Memory() = %+v, %v; want %+v, nil", got, err, want)
	}
}

// TestProbeRealMachine checks that the real machine gives sane numbers.
func TestSystemProbeRealMachine(t *testing.T) {
	var p sysinfo.Probe
	cpus := p.CPUs()
	if cpus <= 0 || cpus > float64(runtime.NumCPU()) {
		t.Errorf("CPUs() = %v; want in (0, %d]", cpus, runtime.NumCPU())
	}
	m, err := p.Memory()
	if err != nil {
		t.Fatalf("Memory(): %v", err)
	}
	if m.Limit <= 0 || m.Used <= 0 || m.Used > m.Limit {
		t.Errorf("Memory() = %+v; want 0 < Used <= Limit", m)
	}
	d, err := sysinfo.DiskOf(t.TempDir())
	if err != nil {
		t.Fatalf("DiskOf: %v", err)
	}
	if d.Total <= 0 || d.Free < 0 || d.Free > d.Total {
		t.Errorf("DiskOf = %+v; want 0 <= Free <= Total, Total > 0", d)
	}
	if _, err := sysinfo.DiskOf(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Errorf("DiskOf(missing) error = nil; want an error")
	}
	t.Logf("cpus=%v memory=%+v disk=%+v", cpus, m, d)
}
