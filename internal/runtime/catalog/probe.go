package catalog

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
)

// probeTimeout bounds one backend's availability check.
const probeTimeout = 5 * time.Second

// Status is whether a backend can be used here.
type Status struct {
	Name      string `json:"name"`
	Isolation string `json:"isolation"`
	Available bool   `json:"available"`
	// Reason says why the backend is unavailable; for Auto's choice, why
	// it was chosen.
	Reason string `json:"reason,omitempty"`
}

// availabler is the optional check a backend offers of its engine.
type availabler interface {
	Available(ctx context.Context) error
}

// Probe checks every backend, concurrently, and reports them strongest
// isolation first.
func Probe(ctx context.Context, cfg Config) []Status {
	return probe(ctx, entries, cfg)
}

func probe(ctx context.Context, list []Entry, cfg Config) []Status {
	out := make([]Status, len(list))
	var wg sync.WaitGroup
	for i, e := range list {
		wg.Go(func() {
			r, st, _ := check(ctx, e, cfg)
			closeRuntime(r)
			out[i] = st
		})
	}
	wg.Wait()
	return out
}

// Auto opens the available backend with the strongest isolation. Its
// Status.Reason says why it was chosen: which stronger ones were not
// available and why. The caller closes the runtime with Close.
func Auto(ctx context.Context, cfg Config) (runtime.Runtime, Status, error) {
	return auto(ctx, entries, cfg)
}

func auto(ctx context.Context, list []Entry, cfg Config) (runtime.Runtime, Status, error) {
	var skipped []string
	for _, e := range list {
		r, st, _ := check(ctx, e, cfg)
		if st.Available {
			st.Reason = "strongest isolation available"
			if len(skipped) > 0 {
				st.Reason += "; not available: " + strings.Join(skipped, "; ")
			}
			return r, st, nil
		}
		closeRuntime(r)
		skipped = append(skipped, e.Name+" ("+st.Reason+")")
	}
	return nil, Status{}, errdefs.Unavailablef("no runtime is available: %s", strings.Join(skipped, "; "))
}

// Open opens the backend name if it is available here. The caller closes
// the runtime with Close.
func Open(ctx context.Context, name string, cfg Config) (runtime.Runtime, error) {
	return openNamed(ctx, entries, name, cfg)
}

func openNamed(ctx context.Context, list []Entry, name string, cfg Config) (runtime.Runtime, error) {
	for _, e := range list {
		if e.Name != name {
			continue
		}
		r, st, err := check(ctx, e, cfg)
		if err != nil {
			closeRuntime(r)
			return nil, errdefs.Wrap(errdefs.ErrUnavailable, err, fmt.Sprintf("runtime %s is not available: %s", name, st.Reason))
		}
		return r, nil
	}
	names := make([]string, len(list))
	for i, e := range list {
		names[i] = e.Name
	}
	return nil, errdefs.Invalidf("unknown runtime %q (runtimes: %s)", name, strings.Join(names, ", "))
}

// check makes the backend and asks its engine whether it is usable. It
// returns the runtime (nil if it could not be made), its status and, when
// it is unavailable, the error saying why.
func check(ctx context.Context, e Entry, cfg Config) (runtime.Runtime, Status, error) {
	st := Status{Name: e.Name, Isolation: e.Isolation}
	r, err := e.New(cfg)
	if err != nil {
		st.Reason = err.Error()
		return nil, st, err
	}
	if a, ok := r.(availabler); ok {
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		if err := a.Available(ctx); err != nil {
			st.Reason = err.Error()
			return r, st, err
		}
	}
	st.Available = true
	return r, st, nil
}

// Close releases a backend's engine connection, if it holds one (an
// io.Closer); sandboxes keep running.
func Close(r runtime.Runtime) error {
	if c, ok := r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func closeRuntime(r runtime.Runtime) { _ = Close(r) }
