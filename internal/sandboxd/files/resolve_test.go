package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
)

// fixture builds a root with hostile and friendly symlinks:
//
//	a/            a/f.txt      a/dotdot -> ..    a/esc -> ../../x
//	in -> a       up -> ../..  abs -> /etc       absin -> <root>/a
//	loop1 -> loop2             loop2 -> loop1    self -> .
func fixture(t testing.TB) *Root {
	t.Helper()
	dir := t.TempDir()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "a"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a", "f.txt"), []byte("hello\n"), 0o644))
	for link, target := range map[string]string{
		"in": "a", "up": "../..", "abs": "/etc", "absin": filepath.Join(dir, "a"),
		"loop1": "loop2", "loop2": "loop1", "self": ".",
		"a/dotdot": "..", "a/esc": "../../x",
	} {
		must(os.Symlink(target, filepath.Join(dir, link)))
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestResolve(t *testing.T) {
	r := fixture(t)
	tests := []struct {
		path   string
		follow bool
		want   string
		class  error // non-nil: the error class expected
	}{
		{"/", true, ".", nil},
		{"/a", true, "a", nil},
		{"/a/f.txt", true, "a/f.txt", nil},
		{"//a///f.txt", true, "a/f.txt", nil},
		{"/./a/./f.txt", true, "a/f.txt", nil},
		{"/a/../a/f.txt", true, "a/f.txt", nil},
		{"/in/f.txt", true, "a/f.txt", nil},
		{"/in", true, "a", nil},
		{"/in", false, "in", nil},
		{"/in/../a", true, "a", nil},
		{"/absin/f.txt", true, "a/f.txt", nil},
		{"/a/dotdot/a", true, "a", nil},
		{"/self/self/a", true, "a", nil},
		{"/missing/x", true, "missing/x", nil},
		{"/missing/../a", true, "a", nil},
		{"/a/f.txt/x", true, "a/f.txt/x", nil},
		{"/up", false, "up", nil},
		{"/abs", false, "abs", nil},
		{"/loop1", false, "loop1", nil},
		{"/..", true, "", errdefs.ErrForbidden},
		{"/a/../../etc/passwd", true, "", errdefs.ErrForbidden},
		{"/missing/../../x", true, "", errdefs.ErrForbidden},
		{"/up/x", true, "", errdefs.ErrForbidden},
		{"/up", true, "", errdefs.ErrForbidden},
		{"/abs/passwd", true, "", errdefs.ErrForbidden},
		{"/abs", true, "", errdefs.ErrForbidden},
		{"/a/esc", true, "", errdefs.ErrForbidden},
		{"/in/esc", true, "", errdefs.ErrForbidden},
		{"/in/dotdot/..", true, "", errdefs.ErrForbidden},
		{"/loop1", true, "", errdefs.ErrInvalid},
		{"/loop1/x", false, "", errdefs.ErrInvalid},
		{"", true, "", errdefs.ErrInvalid},
		{"a/f.txt", true, "", errdefs.ErrInvalid},
		{"/a\x00b", true, "", errdefs.ErrInvalid},
		{"/" + strings.Repeat("x", MaxPathLen), true, "", errdefs.ErrInvalid},
	}
	for _, tt := range tests {
		got, err := r.resolve(tt.path, tt.follow)
		if tt.class != nil {
			if !errors.Is(err, tt.class) {
				t.Errorf("resolve(%q, %v) = %q, %v; want error %v", tt.path, tt.follow, got, err, tt.class)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("resolve(%q, %v) = %q, %v; want %q", tt.path, tt.follow, got, err, tt.want)
		}
	}
}

// FuzzResolve checks that whatever the input, resolve either fails with a
// client error class or names something inside the root, and never panics.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"/", "/a/f.txt", "/..", "/../etc/passwd", "/a/../../x", "/in/f.txt", "/up/x",
		"/abs/passwd", "/absin/f.txt", "/loop1", "/a/dotdot/dotdot/a", "/self/../a",
		"/a/esc/y", "relative", "", "/a\x00", "//..//..", "/a/./../a/f.txt/..",
		"/missing/../../..", "/in/../in/../up",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	r := fixture(f)
	f.Fuzz(func(t *testing.T, p string, follow bool) {
		name, err := r.resolve(p, follow)
		if err != nil {
			var e *errdefs.Error
			if !errors.As(err, &e) {
				t.Fatalf("resolve(%q, %v): unclassified error %v", p, follow, err)
			}
			return
		}
		if !filepath.IsLocal(name) {
			t.Fatalf("resolve(%q, %v) = %q, not inside the root", p, follow, name)
		}
		if !follow {
			return
		}
		real, err := filepath.EvalSymlinks(filepath.Join(r.Dir(), name))
		if err != nil {
			return // does not exist (yet): nothing to escape through
		}
		if real != r.Dir() && !strings.HasPrefix(real, r.Dir()+"/") {
			t.Fatalf("resolve(%q, %v) = %q, which is %q outside the root", p, follow, name, real)
		}
	})
}
