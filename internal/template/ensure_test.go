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
