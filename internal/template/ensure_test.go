package template

import (
	"context"
	"errors"
	"os"
	"testing"
)

// fakeImporter records imports and has the templates in has.
type fakeImporter struct {
	has      map[string]bool
	hasErr   error
	imported map[string]string // name -> tarball content
}

func (f *fakeImporter) HasTemplate(_ context.Context, name string) (bool, error) {
	return f.has[name], f.hasErr
}

func (f *fakeImporter) ImportTemplate(_ context.Context, tarball, name string) error {
	b, err := os.ReadFile(tarball)
	if err != nil {
		return err
	}
	if f.imported == nil {
		f.imported = map[string]string{}
	}
	f.imported[name] = string(b)
	return nil
}

func TestEnsure(t *testing.T) {
	bin, runs := fakeMmdebstrap(t, `printf 'rootfs'`)
	errHas := errors.New("engine down")
	tests := []struct {
		name     string
		template string
		imp      *fakeImporter
		wantErr  error
		wantRuns int
		wantImp  string // ref imported, "" for none
	}{
		{"present", "minimal", &fakeImporter{has: map[string]bool{"corral-minimal": true}}, nil, 0, ""},
		{"absent", "minimal", &fakeImporter{}, nil, 1, "corral-minimal"},
		{"absent again (cached)", "corral-minimal", &fakeImporter{}, nil, 1, "corral-minimal"},
		{"HasTemplate fails", "minimal", &fakeImporter{hasErr: errHas}, errHas, 1, ""},
	}
	opts := Options{Name: "ignored", CacheDir: t.TempDir(), Mirror: "http://m/debian", Mmdebstrap: bin}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Ensure(t.Context(), tt.imp, tt.template, opts)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Ensure error = %v; want %v", err, tt.wantErr)
			}
			if n := runCount(t, runs); n != tt.wantRuns {
				t.Errorf("mmdebstrap runs = %d; want %d", n, tt.wantRuns)
			}
			if tt.wantImp != "" && tt.imp.imported[tt.wantImp] != "rootfs" {
				t.Errorf("imported %v; want %s", tt.imp.imported, tt.wantImp)
			}
			if tt.wantImp == "" && len(tt.imp.imported) != 0 {
				t.Errorf("imported %v; want nothing", tt.imp.imported)
			}
		})
	}
}

// buildsImporter is a fakeImporter that keeps track of builds.
type buildsImporter struct {
	fakeImporter
	builds map[string]string
}

func (b *buildsImporter) TemplateBuild(_ context.Context, name string) (string, error) {
	return b.builds[name], nil
}

func (b *buildsImporter) ImportTemplate(ctx context.Context, tarball, name string) error {
	if err := b.fakeImporter.ImportTemplate(ctx, tarball, name); err != nil {
		return err
	}
	b.has[name] = true
	b.builds[name] = BuildID(tarball)
	return nil
}

// TestEnsureReimportsAnOlderBuild: a backend that holds a template made
// by another definition (an older Corral) gets the current one; one that
// holds the current build is left alone.
func TestEnsureReimportsAnOlderBuild(t *testing.T) {
	bin, runs := fakeMmdebstrap(t, `printf 'rootfs'`)
	opts := Options{CacheDir: t.TempDir(), Mirror: "http://m/debian", Mmdebstrap: bin}
	imp := &buildsImporter{fakeImporter: fakeImporter{has: map[string]bool{"corral-minimal": true}},
		builds: map[string]string{"corral-minimal": "minimal-0123456789ab"}}
	if err := Ensure(t.Context(), imp, "minimal", opts); err != nil {
		t.Fatal(err)
	}
	if imp.imported["corral-minimal"] != "rootfs" || runCount(t, runs) != 1 {
		t.Fatalf("an older build was kept: %v", imp.imported)
	}
	current := imp.builds["corral-minimal"]
	if current == "minimal-0123456789ab" || current == "" {
		t.Fatalf("build after import = %q", current)
	}
	imp.imported = nil
	if err := Ensure(t.Context(), imp, "minimal", opts); err != nil {
		t.Fatal(err)
	}
	if imp.imported != nil || runCount(t, runs) != 1 {
		t.Fatalf("the current build was imported again")
	}
	// Unknown build (imported before builds were tracked): imported again.
	imp.builds["corral-minimal"] = ""
	if err := Ensure(t.Context(), imp, "minimal", opts); err != nil {
		t.Fatal(err)
	}
	if imp.imported["corral-minimal"] != "rootfs" {
		t.Fatalf("a template of unknown build was kept")
	}
}
