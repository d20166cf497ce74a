//go:build !slim

package cli

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime/catalog"
	"github.com/corral-sh/corral/internal/template"
)

// fakeImporter holds the templates in has; importing fails with err.
type fakeImporter struct {
	has      map[string]bool
	err      error
	imported []string
}

func (f *fakeImporter) HasTemplate(_ context.Context, name string) (bool, error) {
	return f.has[name], nil
}

func (f *fakeImporter) ImportTemplate(_ context.Context, tarball, name string) error {
	if f.err != nil {
		return f.err
	}
	if _, err := os.Stat(tarball); err != nil {
		return err
	}
	f.imported = append(f.imported, name)
	return nil
}

const testMirror = "http://mirror.test/debian"

// cachedMinimal puts a tarball where building "minimal" from testMirror
// into a new cache directory would, so the build is a cache hit.
func cachedMinimal(t *testing.T) (cacheDir, tarball string) {
	t.Helper()
	cacheDir = t.TempDir()
	p, err := template.NewPlan(template.Options{Name: "minimal", CacheDir: cacheDir, Mirror: testMirror})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Path, []byte("rootfs"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cacheDir, p.Path
}

func TestTemplateCmd(t *testing.T) {
	cache, tarball := cachedMinimal(t)
	errImport := errors.New("disk full")
	tests := []struct {
		name       string
		args       []string
		imps       map[string]*fakeImporter // the backends find returns, in name order
		findErr    error
		wantErr    error // errors.Is; nil for success
		wantOut    []string
		wantImport map[string][]string // backend -> refs imported
	}{
		{
			name:    "unknown template",
			args:    []string{"build", "--name", "ubuntu"},
			wantErr: errdefs.ErrNotFound,
		},
		{
			name:    "runtime none",
			args:    []string{"build", "--name", "minimal", "--runtime", "none", "--cache-dir", cache, "--mirror", testMirror},
			wantOut: []string{"corral-minimal: " + tarball + " (0 MiB, cached)"},
		},
		{
			name:    "all backends, one failing",
			args:    []string{"build", "--name", "corral-minimal", "--cache-dir", cache, "--mirror", testMirror},
			imps:    map[string]*fakeImporter{"a": {}, "b": {err: errImport}},
			wantErr: errImport,
			wantOut: []string{
				"k8s: skipped: not built yet",
				"a: importing corral-minimal ... done in",
				"b: importing corral-minimal ... failed",
			},
			wantImport: map[string][]string{"a": {"corral-minimal"}},
		},
		{
			name:    "find fails",
			args:    []string{"build", "--name", "minimal", "--runtime", "nope", "--cache-dir", cache, "--mirror", testMirror},
			findErr: errdefs.Invalidf("unknown runtime"),
			wantErr: errdefs.ErrInvalid,
		},
		{
			name: "ls",
			args: []string{"ls", "--cache-dir", cache, "--mirror", testMirror},
			imps: map[string]*fakeImporter{
				"a": {has: map[string]bool{"corral-minimal": true, "corral-default": true}},
				"b": {has: map[string]bool{"corral-default": true}},
			},
			wantOut: []string{
				"TEMPLATE REF TARBALL A B",
				"minimal corral-minimal " + tarball + " yes no",
				"default corral-default - yes yes",
				"desktop corral-desktop - no no",
			},
		},
		{
			name:    "ls with no backends",
			args:    []string{"ls", "--runtime", "none", "--cache-dir", t.TempDir()},
			wantOut: []string{"TEMPLATE REF TARBALL", "minimal corral-minimal -"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			find := func(_ context.Context, _ catalog.Config, which string) ([]importer, []skipped, func(), error) {
				if tt.findErr != nil {
					return nil, nil, func() {}, tt.findErr
				}
				var imps []importer
				for _, n := range []string{"a", "b"} {
					if imp, ok := tt.imps[n]; ok {
						imps = append(imps, importer{n, imp})
					}
				}
				var skips []skipped
				if which == runtimeAll {
					skips = []skipped{{"k8s", "not built yet"}}
				}
				return imps, skips, func() {}, nil
			}
			out, _, err := execute(t, newTemplateCmd(find), tt.args...)
			if !errors.Is(err, tt.wantErr) { // with wantErr nil: err must be nil
				t.Fatalf("error = %v; want %v", err, tt.wantErr)
			}
			// Compare with runs of spaces (table padding) collapsed.
			var norm []string
			for l := range strings.SplitSeq(out, "\n") {
				norm = append(norm, strings.Join(strings.Fields(l), " "))
			}
			joined := strings.Join(norm, "\n")
			for _, w := range tt.wantOut {
				if !strings.Contains(joined, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for n, imp := range tt.imps {
				if got, want := strings.Join(imp.imported, ","), strings.Join(tt.wantImport[n], ","); got != want {
					t.Errorf("%s imported %q; want %q", n, got, want)
				}
			}
		})
	}
}

// TestCatalogImporters resolves --runtime against the real catalog, for
// the values that do not depend on this host's engines.
func TestCatalogImporters(t *testing.T) {
	cfg := catalog.Config{StateRoot: t.TempDir()}
	tests := []struct {
		which   string
		wantErr error
	}{
		{"none", nil},
		{"nope", errdefs.ErrInvalid},
		{"kubernetes", errdefs.ErrUnavailable},
		{"local", errdefs.ErrUnavailable}, // not without --unsafe-local
	}
	for _, tt := range tests {
		imps, _, done, err := catalogImporters(t.Context(), cfg, tt.which)
		done()
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("catalogImporters(%q) error = %v; want %v", tt.which, err, tt.wantErr)
		}
		if len(imps) != 0 {
			t.Errorf("catalogImporters(%q) = %d importers; want none", tt.which, len(imps))
		}
	}
	// "all" never fails: unavailable backends are skipped with the reason.
	imps, skips, done, err := catalogImporters(t.Context(), cfg, runtimeAll)
	defer done()
	if err != nil {
		t.Fatal(err)
	}
	if len(imps)+len(skips) != len(catalog.Names()) {
		t.Errorf("all: %d importers + %d skipped; want %d backends", len(imps), len(skips), len(catalog.Names()))
	}
	for _, s := range skips {
		if s.reason == "" {
			t.Errorf("all: %s skipped without a reason", s.name)
		}
	}
}
