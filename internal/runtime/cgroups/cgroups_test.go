package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
)

// tree makes a fake cgroup file system: path -> content ("/" suffix: an
// empty directory). The kernel creates control files in a new group; a
// fake one has them only where the test lays them out in advance.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return strings.TrimSpace(string(b))
}

func noSwap(t *testing.T, has bool) {
	old := hostHasSwap
	hostHasSwap = func() bool { return has }
	t.Cleanup(func() { hostHasSwap = old })
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    string
		wantErr error
	}{
		{"v2", map[string]string{"cgroup.controllers": "cpu memory"}, "v2", nil},
		{"v1 some controllers", map[string]string{"memory/cgroup.procs": "", "pids/cgroup.procs": "", "blkio/cgroup.procs": ""}, "v1 memory,pids", nil},
		{"nothing mounted", map[string]string{"README": ""}, "", errdefs.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree(t, tt.files)
			h, err := Open(root)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Open = %v; want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := strings.TrimSuffix(h.String(), " "+root); got != tt.want {
				t.Errorf("String() = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestCreateV1(t *testing.T) {
	noSwap(t, true)
	const id = "sb_one"
	root := tree(t, map[string]string{
		"memory/cgroup.procs": "",
		"memory/" + Parent + "/" + id + "/memory.memsw.limit_in_bytes": "9223372036854771712",
		"cpu/cgroup.procs":                           "",
		"cpuset/cgroup.procs":                        "",
		"cpuset/cpuset.cpus":                         "0-3",
		"cpuset/cpuset.mems":                         "0",
		"cpuset/" + Parent + "/sb_other/cpuset.cpus": "0-1", // a sibling pinned to 0-1
		"pids/cgroup.procs":                          "",
		"freezer/cgroup.procs":                       "",
	})
	h, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	l := Limits{CPUs: 1.5, MemoryBytes: 128 << 20, PIDs: 64}
	g, err := h.Create(id, l)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	want := map[string]string{
		"memory/corral/sb_one/memory.limit_in_bytes":       "134217728",
		"memory/corral/sb_one/memory.memsw.limit_in_bytes": "134217728",
		"cpu/corral/sb_one/cpu.cfs_quota_us":               "150000",
		"cpu/corral/sb_one/cpu.cfs_period_us":              "100000",
		"cpuset/corral/cpuset.cpus":                        "0-3", // inherited by the parent
		"cpuset/corral/sb_one/cpuset.cpus":                 "2-3", // ceil(1.5) CPUs, away from the sibling
		"cpuset/corral/sb_one/cpuset.mems":                 "0",
		"pids/corral/sb_one/pids.max":                      "64",
	}
	for p, v := range want {
		if got := read(t, filepath.Join(root, p)); got != v {
			t.Errorf("%s = %q; want %q", p, got, v)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "freezer/corral/sb_one")); err != nil {
		t.Errorf("freezer group not created: %v", err)
	}
	if want := (Enforced{Memory: true, NoSwap: true, CPU: true, CPUSet: true, PIDs: true}); g.Enforced != want {
		t.Errorf("Enforced = %+v; want %+v", g.Enforced, want)
	}
	if m := g.Enforced.Missing(l); len(m) != 0 {
		t.Errorf("Missing = %v; want none", m)
	}
	if got := g.Dir("memory"); got != filepath.Join(root, "memory/corral/sb_one") {
		t.Errorf("Dir(memory) = %q", got)
	}
}

func TestCreateV1WithoutSwapAccounting(t *testing.T) {
	noSwap(t, true)
	root := tree(t, map[string]string{"memory/cgroup.procs": ""})
	h, _ := Open(root)
	l := Limits{MemoryBytes: 1 << 30, PIDs: 10, CPUs: 1}
	g, err := h.Create("sb_two", l)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Enforced.Missing(l), []string{"swap", "cpu", "cpuset", "pids"}; !slices.Equal(got, want) {
		t.Errorf("Missing = %v; want %v", got, want)
	}
}

func TestCreateV2(t *testing.T) {
	noSwap(t, true)
	const id = "sb_three"
	dir := Parent + "/" + id + "/"
	root := tree(t, map[string]string{
		"cgroup.controllers":                 "cpuset cpu io memory hugetlb pids",
		"cgroup.subtree_control":             "",
		Parent + "/cpuset.cpus.effective":    "0-7",
		Parent + "/cgroup.subtree_control":   "",
		dir + "memory.max":                   "max",
		dir + "memory.swap.max":              "max",
		dir + "cpu.max":                      "max 100000",
		dir + "cpuset.cpus":                  "",
		dir + "pids.max":                     "max",
		Parent + "/sb_busy/cpuset.cpus":      "0",
		Parent + "/sb_unpinned/cpuset.cpus":  "0-7",
		Parent + "/sb_unpinned2/cpuset.cpus": "",
	})
	h, err := Open(root)
	if err != nil || !h.V2() {
		t.Fatalf("Open = %v, %v; want v2", h, err)
	}
	l := Limits{CPUs: 0.5, MemoryBytes: 256 << 20, PIDs: 100}
	g, err := h.Create(id, l)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	want := map[string]string{
		dir + "memory.max":      "268435456",
		dir + "memory.swap.max": "0",
		dir + "cpu.max":         "50000 100000",
		dir + "cpuset.cpus":     "1",
		dir + "pids.max":        "100",
	}
	for p, v := range want {
		if got := read(t, filepath.Join(root, p)); got != v {
			t.Errorf("%s = %q; want %q", p, got, v)
		}
	}
	if want := (Enforced{Memory: true, NoSwap: true, CPU: true, CPUSet: true, PIDs: true}); g.Enforced != want {
		t.Errorf("Enforced = %+v; want %+v", g.Enforced, want)
	}
}

func TestCreateV2NoControllers(t *testing.T) {
	noSwap(t, false)
	root := tree(t, map[string]string{"cgroup.controllers": "hugetlb", "cgroup.subtree_control": ""})
	h, _ := Open(root)
	l := Limits{CPUs: 2, MemoryBytes: 1 << 30, PIDs: 5}
	g, err := h.Create("sb_four", l)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Enforced.Missing(l), []string{"memory", "swap", "cpu", "cpuset", "pids"}; !slices.Equal(got, want) {
		t.Errorf("Missing = %v; want %v", got, want)
	}
	if got := read(t, filepath.Join(root, "cgroup.subtree_control")); got != "" {
		t.Errorf("enabled %q in the root; want nothing (hugetlb is not Corral's)", got)
	}
}

func TestCreateRejectsBadID(t *testing.T) {
	h, _ := Open(tree(t, map[string]string{"cgroup.controllers": ""}))
	for _, id := range []string{"", "../x", "a/b", "."} {
		if _, err := h.Create(id, Limits{}); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Create(%q) = %v; want invalid", id, err)
		}
	}
}

func TestPIDsAndPopulated(t *testing.T) {
	root := tree(t, map[string]string{
		"memory/cgroup.procs":           "",
		"pids/cgroup.procs":             "",
		"memory/corral/sb/cgroup.procs": "10\n11\n",
		"pids/corral/sb/cgroup.procs":   "11\n12\n",
	})
	h, _ := Open(root)
	g := h.Group("sb")
	pids, err := g.PIDs()
	slices.Sort(pids)
	if err != nil || !slices.Equal(pids, []int{10, 11, 12}) {
		t.Errorf("PIDs = %v, %v; want [10 11 12]", pids, err)
	}
	if busy, err := g.Populated(); !busy || err != nil {
		t.Errorf("Populated = %v, %v; want true", busy, err)
	}
	if busy, err := h.Group("sb_gone").Populated(); busy || err != nil {
		t.Errorf("Populated(missing group) = %v, %v; want false, nil", busy, err)
	}

	v2 := tree(t, map[string]string{"cgroup.controllers": "", "corral/sb/cgroup.events": "populated 0\nfrozen 0\n", "corral/sb/cgroup.procs": ""})
	h2, _ := Open(v2)
	if busy, err := h2.Group("sb").Populated(); busy || err != nil {
		t.Errorf("v2 Populated = %v, %v; want false (cgroup.events)", busy, err)
	}
}

func TestCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		out  string
	}{
		{"0", []int{0}, "0"},
		{"0-3", []int{0, 1, 2, 3}, "0-3"},
		{"0-1,4,6-7\n", []int{0, 1, 4, 6, 7}, "0-1,4,6-7"},
		{"3,1,2", []int{1, 2, 3}, "1-3"},
		{"", nil, ""},
	}
	for _, tt := range tests {
		got, err := parseCPUList(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if s := formatCPUList(got); s != tt.out {
			t.Errorf("formatCPUList(%v) = %q; want %q", got, s, tt.out)
		}
	}
	for _, bad := range []string{"a", "3-1", "1-x"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q) = nil error; want one", bad)
		}
	}
}

func TestPickCPUs(t *testing.T) {
	tests := []struct {
		name     string
		siblings map[string]string
		n        int
		want     string
	}{
		{"no siblings", nil, 1, "0"},
		{"all of them", nil, 4, "0-3"},
		{"avoid loaded", map[string]string{"a": "0", "b": "0-1", "c": "3"}, 1, "2"},
		{"two least loaded, lowest on a tie", map[string]string{"a": "0", "b": "0-1", "c": "3"}, 2, "1-2"},
		{"unpinned siblings do not count", map[string]string{"a": "0-3", "b": "1"}, 1, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"self/cpuset.cpus": "0"} // its own old pinning is ignored
			for k, v := range tt.siblings {
				files[k+"/cpuset.cpus"] = v
			}
			parent := tree(t, files)
			got, err := pickCPUs("0-3", parent, "self", "cpuset.cpus", tt.n)
			if err != nil || got != tt.want {
				t.Errorf("pickCPUs(n=%d) = %q, %v; want %q", tt.n, got, err, tt.want)
			}
		})
	}
}

func TestProc(t *testing.T) {
	self, err := ProcOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !self.Alive() {
		t.Errorf("%v.Alive() = false for this process", self)
	}
	back, err := ParseProc(self.String())
	if err != nil || back != self {
		t.Errorf("ParseProc(%q) = %v, %v; want %v", self.String(), back, err, self)
	}
	reused := Proc{PID: self.PID, Start: self.Start + 1}
	if reused.Alive() {
		t.Errorf("%v.Alive() = true; a different start time is a different process", reused)
	}
	for _, bad := range []string{"", "12", "x:1", "0:5", "12:y"} {
		if _, err := ParseProc(bad); err == nil {
			t.Errorf("ParseProc(%q) = nil error", bad)
		}
	}
}
