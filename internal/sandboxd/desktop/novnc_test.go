package desktop

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
)

func TestInjectShim(t *testing.T) {
	page := `<!DOCTYPE html>
<html><HEAD lang="en">
<link rel="stylesheet" href="app/styles/base.css">
<link rel="icon" href='app/images/icon.png'>
<script src="app/error-handler.js"></script>
<script type="module" crossorigin="anonymous" src="app/ui.js"></script>
<a href="https://novnc.com">site</a> <a href="#top">top</a> <img src="/abs.png"> <img src="data:image/png;base64,AA">
<a href="">empty</a>
</HEAD><body>src="text.js" is text</body></html>`
	got := injectShim([]byte(page), []string{"core/rfb.js", "app/ui.js"}, 0)
	for _, want := range []string{
		`<HEAD lang="en">` + "\n<script>\n",
		`var modules = ["core/rfb.js","app/ui.js"];`,
		`var root = new URL("./", location.href);`,
		`<link rel="stylesheet" data-corral-href="app/styles/base.css">`,
		`<link rel="icon" data-corral-href='app/images/icon.png'>`,
		`<script data-corral-src="app/error-handler.js"></script>`,
		`<script type="module" crossorigin="anonymous" data-corral-src="app/ui.js"></script>`,
		`<a href="https://novnc.com">`, `<a href="#top">`, `<img src="/abs.png">`, `<img src="data:image/png;base64,AA">`,
		`<a href="">`,
		`<body>src="text.js" is text</body>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "<script>") > strings.Index(got, "data-corral-href") {
		t.Error("the shim is not the first thing in head")
	}
	if strings.Contains(got, "__MODULES__") || strings.Contains(got, "__ROOT__") {
		t.Error("placeholders left in the shim")
	}

	// A page without a head gets the shim first; one in a subdirectory
	// finds the root above it; names cannot break out of the script.
	got = injectShim([]byte(`<p>hi</p>`), []string{"</script><script>alert(1)//.js"}, 2)
	if !strings.HasPrefix(got, "<script>\n") || !strings.Contains(got, `new URL("../../", location.href)`) {
		t.Errorf("headless page:\n%s", got)
	}
	if strings.Count(got, "</script>") != 1 {
		t.Errorf("a module name closed the script:\n%s", got)
	}
}

// fakeNoVNC makes a noVNC directory with a page, a module and an escape.
func fakeNoVNC(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"vnc.html":             `<html><head><script type="module" src="app/ui.js"></script></head></html>`,
		"app/ui.js":            `import RFB from "../core/rfb.js";`,
		"core/rfb.js":          `export default class RFB {}`,
		"app/styles/base.css":  `body { background: url("../images/bg.svg") }`,
		"utils/novnc_proxy.js": `// a build tool`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "escape.js")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("vnc.html", filepath.Join(dir, "vnc_auto.html")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestNoVNC(t *testing.T) {
	d := New(Options{NoVNCDir: fakeNoVNC(t)})
	read := func(name string) (string, *NoVNCFile, error) {
		f, err := d.NoVNC(name)
		if err != nil {
			return "", nil, err
		}
		defer f.Close()
		b, err := io.ReadAll(f.Content)
		return string(b), f, err
	}
	tests := []struct {
		name string
		err  error
		has  string
		page bool
	}{
		{"vnc.html", nil, `var modules = ["app/ui.js","core/rfb.js"];`, true},
		{"vnc_auto.html", nil, `data-corral-src="app/ui.js"`, true}, // a symlink inside the directory
		{"app/ui.js", nil, `import RFB from "../core/rfb.js";`, false},
		{"app/styles/base.css", nil, `url("../images/bg.svg")`, false},
		{"missing.js", errdefs.ErrNotFound, "", false},
		{"app", errdefs.ErrNotFound, "", false},
		{"app/", errdefs.ErrNotFound, "", false},
		{"", errdefs.ErrNotFound, "", false},
		{"../secret", errdefs.ErrForbidden, "", false},
		{"app/../../secret", errdefs.ErrForbidden, "", false},
		{"/etc/passwd", errdefs.ErrNotFound, "", false},
		{"escape.js", errdefs.ErrForbidden, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, f, err := read(tt.name)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("NoVNC(%q) = %v; want %v", tt.name, err, tt.err)
				}
				return
			}
			if err != nil || !strings.Contains(body, tt.has) || f.Page != tt.page {
				t.Fatalf("NoVNC(%q) = page %v, %v:\n%s\nwant page %v with %q", tt.name, f != nil && f.Page, err, body, tt.page, tt.has)
			}
		})
	}

	none := New(Options{NoVNCDir: filepath.Join(t.TempDir(), "none")})
	if _, err := none.NoVNC("vnc.html"); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "noVNC is not installed") {
		t.Errorf("no noVNC: %v; want not found, not installed", err)
	}
}

// TestNoVNCDebian checks the shim against Debian's real noVNC, when it is
// installed: every file the pages load is renamed, and the module list
// covers what the modules import.
func TestNoVNCDebian(t *testing.T) {
	if _, err := os.Stat("/usr/share/novnc/vnc.html"); err != nil {
		t.Skip("Debian's novnc package is not installed")
	}
	d := New(Options{})
	f, err := d.NoVNC("vnc.html")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := io.ReadAll(f.Content)
	page := string(b)
	for _, plain := range []string{` src="app/`, ` href="app/`} {
		if strings.Contains(page, plain) {
			t.Errorf("vnc.html still loads %s... without the shim", plain)
		}
	}
	for _, want := range []string{`"core/rfb.js"`, `"app/ui.js"`, `"vendor/pako/lib/zlib/inflate.js"`, `data-corral-src="app/ui.js"`} {
		if !strings.Contains(page, want) {
			t.Errorf("vnc.html lacks %s", want)
		}
	}
	if strings.Contains(page, `"utils/`) {
		t.Error("the module list has the build tools")
	}
}
