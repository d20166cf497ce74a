package userconfig

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
)

func TestPath(t *testing.T) {
	tests := []struct {
		name              string
		corralConfig, xdg string
		home              string
		want              string
	}{
		{"CORRAL_CONFIG wins", "/etc/c.json", "/xdg", "/home/u", "/etc/c.json"},
		{"XDG_CONFIG_HOME", "", "/xdg", "/home/u", "/xdg/corral/config.json"},
		{"relative XDG_CONFIG_HOME ignored", "", "xdg", "/home/u", "/home/u/.config/corral/config.json"},
		{"home", "", "", "/home/u", "/home/u/.config/corral/config.json"},
		{"nothing", "", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CORRAL_CONFIG", tc.corralConfig)
			t.Setenv("XDG_CONFIG_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			if got := Path(); got != tc.want {
				t.Errorf("Path() = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestLoadMissing(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "nope", "config.json"))
	if err != nil || c != (Config{}) {
		t.Errorf("Load(missing) = %+v, %v; want zero, nil", c, err)
	}
}

func TestLoadBad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(path); err == nil {
		t.Errorf("Load(bad JSON) = %+v, nil; want an error", c)
	}
}

func TestSaveRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "corral")
	path := filepath.Join(dir, "config.json")
	want := Config{URL: "http://127.0.0.1:7070", Token: "crl_abc"}
	if err := Save(path, want); err != nil {
		t.Fatalf("Save = %v", err)
	}
	got, err := Load(path)
	if err != nil || got != want {
		t.Errorf("Load = %+v, %v; want %+v", got, err, want)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "{\n  \"url\": \"http://127.0.0.1:7070\",\n  \"token\": \"crl_abc\"\n}\n" {
		t.Errorf("file = %q; want {\"url\",\"token\"} JSON", b)
	}
	wantMode(t, path, 0o600)
	wantMode(t, dir, 0o700)

	// Replacing a file someone made world-readable leaves it 0600, and no
	// temporary file behind.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	want.Token = "crl_def"
	if err := Save(path, want); err != nil {
		t.Fatalf("Save (replace) = %v", err)
	}
	if got, _ := Load(path); got != want {
		t.Errorf("Load after replace = %+v; want %+v", got, want)
	}
	wantMode(t, path, 0o600)
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries; want only config.json", len(ents))
	}
}

func TestSaveRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	err := Save(path, Config{Token: "crl_x"})
	if !errors.Is(err, errdefs.ErrForbidden) {
		t.Errorf("Save(symlink) = %v; want ErrForbidden", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("symlink target now holds %q; want it untouched", b)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced (Lstat = %v, %v)", fi, err)
	}

	// A dangling link is refused too: writing would create its target.
	dangling := filepath.Join(dir, "dangling.json")
	if err := os.Symlink(filepath.Join(dir, "missing"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := Save(dangling, Config{}); !errors.Is(err, errdefs.ErrForbidden) {
		t.Errorf("Save(dangling symlink) = %v; want ErrForbidden", err)
	}
	if err := Save(dir, Config{}); !errors.Is(err, errdefs.ErrForbidden) {
		t.Errorf("Save(a directory) = %v; want ErrForbidden", err)
	}
}

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("mode of %s = %v; want %v", path, got, want)
	}
}
