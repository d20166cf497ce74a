package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// parseCPUList parses the kernel's CPU list format: "0-3,8,10-11".
func parseCPUList(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// formatCPUList is the inverse of parseCPUList for a sorted list.
func formatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// pickCPUs chooses n of the CPUs in list for a new group named self under
// parent: the ones the fewest sibling groups are pinned to (file is their
// cpuset file), lowest number first on a tie, so sandboxes spread over the
// machine instead of piling onto CPU 0. All of list when n covers it.
func pickCPUs(list, parent, self, file string, n int) (string, error) {
	all, err := parseCPUList(list)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return "", fmt.Errorf("cgroup %s has no CPUs", parent)
	}
	if n >= len(all) {
		return list, nil
	}
	load := map[int]int{}
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if !e.IsDir() || e.Name() == self {
			continue
		}
		s, err := readFile(filepath.Join(parent, e.Name(), file))
		if err != nil || s == list {
			continue // unpinned siblings load every CPU alike
		}
		cpus, _ := parseCPUList(s)
		for _, c := range cpus {
			load[c]++
		}
	}
	ranked := slices.Clone(all)
	slices.SortStableFunc(ranked, func(a, b int) int { return load[a] - load[b] })
	chosen := ranked[:n]
	slices.Sort(chosen)
	return formatCPUList(chosen), nil
}

// hostHasSwap reports whether any swap is configured (/proc/swaps lists
// more than its header). Without swap accounting, a memory limit is still
// swap-free when there is no swap to use.
var hostHasSwap = func() bool {
	b, err := os.ReadFile("/proc/swaps")
	if err != nil {
		return true // unknown: do not claim swap is off
	}
	return strings.Count(strings.TrimSpace(string(b)), "\n") > 0
}
