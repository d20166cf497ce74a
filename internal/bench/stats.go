// Package bench measures Corral against the numbers DESIGN.md §7 sets, on
// real components started for the run, and prints a report with ratios to
// the anchors. `corral bench` and `make bench` call it.
package bench

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// durations are latency samples.
type durations []time.Duration

func (d durations) pct(p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(p / 100 * float64(len(s)-1))
	return s[i]
}

// row is one line of the report.
type row struct {
	name   string
	value  string
	anchor string // what we compare with, and the ratio
	goal   string
	ok     bool
}

// report collects rows and prints them as a table.
type report struct {
	title string
	rows  []row
}

func (r *report) add(name, value, anchor, goal string, ok bool) {
	r.rows = append(r.rows, row{name, value, anchor, goal, ok})
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n", r.title)
	fmt.Fprintf(w, "%-52s %-16s %-40s %-14s %s\n", "measure", "value", "anchors (ratio = anchor / ours)", "goal", "met")
	for _, x := range r.rows {
		met := "yes"
		if !x.ok {
			met = "NO"
		}
		fmt.Fprintf(w, "%-52s %-16s %-40s %-14s %s\n", x.name, x.value, x.anchor, x.goal, met)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

// speedup formats "name X (Y.Yx)" where the ratio is anchor/ours for
// latencies (higher is better for us).
func speedup(name string, anchor, ours float64) string {
	if ours <= 0 {
		return name + " n/a"
	}
	return fmt.Sprintf("%s %.4g (%.1fx)", name, anchor, anchor/ours)
}
