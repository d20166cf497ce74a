package catalog

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
)

// fake is a backend whose engine is up unless down is set.
type fake struct {
	runtime.Runtime // nil: only Name, Available and Close are called
	name            string
	down            error
	closed          *atomic.Int32
}

func (f *fake) Name() string                        { return f.name }
func (f *fake) Available(ctx context.Context) error { return f.down }
func (f *fake) Close() error                        { f.closed.Add(1); return nil }

// fakes returns entries: "broken" fails New, "down" is unavailable, "up"
// and "up2" are available.
func fakes(closed *atomic.Int32) []Entry {
	mk := func(name string, newErr, down error) Entry {
		return Entry{Name: name, Isolation: name + " isolation", New: func(Config) (runtime.Runtime, error) {
			if newErr != nil {
				return nil, newErr
			}
			return &fake{name: name, down: down, closed: closed}, nil
		}}
	}
	return []Entry{
		mk("broken", errors.New("not built yet"), nil),
		mk("down", nil, errors.New("engine not running")),
		mk("up", nil, nil),
		mk("up2", nil, nil),
	}
}

func TestProbe(t *testing.T) {
	var closed atomic.Int32
	got := probe(t.Context(), fakes(&closed), Config{})
	want := []Status{
		{Name: "broken", Isolation: "broken isolation", Reason: "not built yet"},
		{Name: "down", Isolation: "down isolation", Reason: "engine not running"},
		{Name: "up", Isolation: "up isolation", Available: true},
		{Name: "up2", Isolation: "up2 isolation", Available: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("probe() =\n%+v\nwant\n%+v", got, want)
	}
	if n := closed.Load(); n != 3 {
		t.Errorf("closed %d runtimes; want the 3 that were made", n)
	}
}

func TestAuto(t *testing.T) {
	var closed atomic.Int32
	r, st, err := auto(t.Context(), fakes(&closed), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != "up" || st.Name != "up" || !st.Available {
		t.Errorf("auto() = %s, %+v; want up", r.Name(), st)
	}
	for _, want := range []string{"strongest", "broken (not built yet)", "down (engine not running)"} {
		if !strings.Contains(st.Reason, want) {
			t.Errorf("reason %q lacks %q", st.Reason, want)
		}
	}
	if n := closed.Load(); n != 1 {
		t.Errorf("closed %d runtimes; want 1 (down), not the chosen one", n)
	}

	_, _, err = auto(t.Context(), fakes(&closed)[:2], Config{})
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "engine not running") {
		t.Errorf("auto() with nothing up: error %v; want unavailable with the reasons", err)
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		wantErr error
		errText string
	}{
		{"up2", nil, ""},
		{"down", errdefs.ErrUnavailable, "engine not running"},
		{"broken", errdefs.ErrUnavailable, "not built yet"},
		{"nope", errdefs.ErrInvalid, "broken, down, up, up2"},
	}
	var closed atomic.Int32
	for _, tt := range tests {
		r, err := openNamed(t.Context(), fakes(&closed), tt.name, Config{})
		if !errors.Is(err, tt.wantErr) || (err != nil && !strings.Contains(err.Error(), tt.errText)) {
			t.Errorf("Open(%q) error = %v; want %v containing %q", tt.name, err, tt.wantErr, tt.errText)
		}
		if err == nil && r.Name() != tt.name {
			t.Errorf("Open(%q) = %s", tt.name, r.Name())
		}
	}
}

// TestCatalog checks the real list: every backend, strongest first, and
// the ones that never depend on this host.
func TestCatalog(t *testing.T) {
	if got, want := Names(), []string{"kubernetes", "containerd", "docker", "bwrap", "local"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q; want %q", got, want)
	}
	st := Probe(t.Context(), Config{StateRoot: t.TempDir()})
	byName := map[string]Status{}
	for _, s := range st {
		byName[s.Name] = s
		t.Logf("%s: available=%v %s", s.Name, s.Available, s.Reason)
	}
	if k := byName["kubernetes"]; k.Available || k.Reason != "not built yet" {
		t.Errorf("kubernetes = %+v; want unavailable, not built yet", k)
	}
	if l := byName["local"]; l.Available || !strings.Contains(l.Reason, "--unsafe-local") {
		t.Errorf("local without UnsafeLocal = %+v; want unavailable, naming --unsafe-local", l)
	}
	if _, err := Open(t.Context(), "local", Config{StateRoot: t.TempDir()}); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("Open(local) without UnsafeLocal: error %v; want unavailable", err)
	}
	r, err := Open(t.Context(), "local", Config{StateRoot: t.TempDir(), UnsafeLocal: true})
	if err != nil {
		t.Fatalf("Open(local) with UnsafeLocal: %v", err)
	}
	defer Close(r)
	if r.Name() != "local" {
		t.Errorf("Open(local).Name() = %q", r.Name())
	}
}
