package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/catalog"
	"github.com/corral-sh/corral/internal/runtime/pool"
	"github.com/corral-sh/corral/internal/template"
)

// RuntimeOptions configure RunRuntime.
type RuntimeOptions struct {
	Binary   string   // static corral binary the sandboxes mount
	Backends []string // default: bwrap, containerd, docker
	Quick    bool     // fewer samples, a shorter capacity curve
}

// Create-to-healthy anchors (DESIGN.md §7, a bare `true`) and goals
// (issue: including sandboxd start).
var createAnchors = map[string]struct{ anchorMS, goalMS float64 }{
	"bwrap":      {10, 40},
	"containerd": {140, 200},
	"docker":     {500, 650},
}

// RunRuntime measures each available backend with real sandboxes of the
// minimal template: create latency, warm-pool claims, the memory one idle
// sandbox costs, and how creation holds up as idle sandboxes pile up.
func RunRuntime(ctx context.Context, w io.Writer, opts RuntimeOptions) error {
	if len(opts.Backends) == 0 {
		opts.Backends = []string{"bwrap", "containerd", "docker"}
	}
	root, err := os.MkdirTemp("", "corral-bench-rt-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	_ = os.Chmod(root, 0o755) // bwrap sandboxes run as uid 1000 and must reach it
	cfg := catalog.Config{Binary: opts.Binary, StateRoot: root}
	samples := map[bool]int{false: 20, true: 5}[opts.Quick]
	capacity := map[bool]int{false: 100, true: 15}[opts.Quick]

	r := &report{title: "runtime benchmark (minimal template; create = until sandboxd answers /v1/health)"}
	for _, name := range opts.Backends {
		rt, err := catalog.Open(ctx, name, cfg)
		if err != nil {
			r.add(name+": unavailable", "", err.Error(), "", true)
			continue
		}
		err = benchBackend(ctx, r, rt, samples, capacity)
		_ = catalog.Close(rt)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	r.print(w)
	return nil
}

func benchBackend(ctx context.Context, r *report, rt runtime.Runtime, samples, capacity int) error {
	name := rt.Name()
	imp, ok := rt.(template.Importer)
	if !ok {
		return fmt.Errorf("backend cannot hold templates")
	}
	def, _ := template.Lookup("minimal")
	if err := template.Ensure(ctx, imp, def.Name, template.Options{}); err != nil {
		return err
	}
	spec := runtime.Spec{Template: def.Ref()}

	var lat durations
	for i := 0; i < samples+2; i++ {
		t := time.Now()
		sb, err := rt.Create(ctx, spec)
		if err != nil {
			return err
		}
		if i >= 2 { // two warm-ups: image and page caches
			lat = append(lat, time.Since(t))
		}
		if err := rt.Delete(ctx, sb.ID); err != nil {
			return err
		}
	}
	a := createAnchors[name]
	p50, p95 := lat.pct(50), lat.pct(95)
	r.add(name+": create p50", ms(p50), fmt.Sprintf("bare-engine anchor %.0f ms", a.anchorMS), fmt.Sprintf("<= %.0f ms", a.goalMS), msf(p50) <= a.goalMS)
	r.add(name+": create p95", ms(p95), "", "", true)

	claim, err := claimLatency(ctx, rt, spec, samples)
	if err != nil {
		return fmt.Errorf("warm pool: %w", err)
	}
	r.add(name+": warm-pool claim p50", ms(claim.pct(50)), "p95 "+ms(claim.pct(95)), "<= 5 ms", msf(claim.pct(50)) <= 5)

	perSandbox, err := idleOverhead(ctx, rt, spec, 10)
	if err != nil {
		return fmt.Errorf("idle overhead: %w", err)
	}
	r.add(name+": memory per idle sandbox", mib(perSandbox), "all processes' PSS growth / 10 sandboxes", "<= 20 MiB", perSandbox <= 20<<20)

	curve, reached, why, err := capacityCurve(ctx, rt, spec, capacity)
	if err != nil {
		return fmt.Errorf("capacity: %w", err)
	}
	r.add(name+": idle sandboxes before 2x slower or failure", fmt.Sprintf("%d of %d tried", reached, capacity), why, "", true)
	r.add(name+":   create latency as they pile up", curve, "", "", true)
	return nil
}

// claimLatency times claims from a pool of 3, letting it refill between.
func claimLatency(ctx context.Context, rt runtime.Runtime, spec runtime.Spec, n int) (durations, error) {
	p := pool.New(rt, 3, nil)
	defer p.Close()
	key := pool.KeyOf(spec)
	p.Warm(key)
	var out durations
	for i := 0; i < n; i++ {
		deadline := time.Now().Add(2 * time.Minute)
		for p.Ready(key) < 3 {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("pool did not refill")
			}
			time.Sleep(5 * time.Millisecond)
		}
		t := time.Now()
		c, err := p.Claim(ctx, spec)
		d := time.Since(t)
		if err != nil {
			return nil, err
		}
		if !c.Warm {
			return nil, fmt.Errorf("claim %d was not served warm", i)
		}
		out = append(out, d)
		if err := rt.Delete(ctx, c.ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// idleOverhead is what one idle sandbox adds to the proportional set size
// (PSS) of all the host's processes: sandboxd, shims, bwrap, engine growth.
// PSS splits a shared page between the processes mapping it, so the code of
// the corral binary, mapped by every sandbox from the same file, is not
// counted once per sandbox as RSS would.
func idleOverhead(ctx context.Context, rt runtime.Runtime, spec runtime.Spec, n int) (int64, error) {
	before, err := totalPSS()
	if err != nil {
		return 0, err
	}
	ids, err := createMany(ctx, rt, spec, n)
	defer deleteAll(rt, ids)
	if err != nil {
		return 0, err
	}
	time.Sleep(2 * time.Second) // let them settle
	after, err := totalPSS()
	if err != nil {
		return 0, err
	}
	return max(0, (after-before)/int64(n)), nil
}

// capacityCurve creates idle sandboxes one by one, up to max, and stops
// when a create fails or three in a row take more than twice the median
// of the first five. It returns create latencies at a few points.
func capacityCurve(ctx context.Context, rt runtime.Runtime, spec runtime.Spec, max int) (curve string, reached int, why string, err error) {
	var ids []string
	defer func() { deleteAll(rt, ids) }()
	var lat durations
	slow := 0
	why = "all created"
	for i := 0; i < max; i++ {
		t := time.Now()
		sb, err := rt.Create(ctx, spec)
		if err != nil {
			why = "create failed: " + firstLine(err.Error())
			break
		}
		lat = append(lat, time.Since(t))
		ids = append(ids, sb.ID)
		if len(lat) > 5 && lat[len(lat)-1] > 2*lat[:5].pct(50) {
			if slow++; slow == 3 {
				why = "3 creates in a row took over 2x the first ones"
				break
			}
		} else {
			slow = 0
		}
	}
	var pts []string
	for _, i := range []int{0, len(lat) / 4, len(lat) / 2, 3 * len(lat) / 4, len(lat) - 1} {
		if i >= 0 && i < len(lat) {
			pts = append(pts, fmt.Sprintf("#%d %s", i+1, ms(lat[i])))
		}
	}
	return strings.Join(pts, ", "), len(ids), why, nil
}

func createMany(ctx context.Context, rt runtime.Runtime, spec runtime.Spec, n int) ([]string, error) {
	var ids []string
	for i := 0; i < n; i++ {
		sb, err := rt.Create(ctx, spec)
		if err != nil {
			return ids, err
		}
		ids = append(ids, sb.ID)
	}
	return ids, nil
}

func deleteAll(rt runtime.Runtime, ids []string) {
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { _ = rt.Delete(context.Background(), id) })
	}
	wg.Wait()
}

// totalPSS sums the proportional set size of every process on the host,
// from /proc/<pid>/smaps_rollup.
func totalPSS() (int64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/smaps_rollup")
		if err != nil {
			continue // it exited meanwhile, or is a kernel thread
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Pss:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
					total += kb << 10
				}
				break
			}
		}
	}
	return total, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
